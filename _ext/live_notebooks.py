"""Sphinx extension: the live button above each chapter's calculator, and the notebooks outside the page.

For every notebook under ``chapters/``, at read time (the file on disk is not
touched), a Markdown cell holding jupyterlite-sphinx's ``notebooklite``
directive is inserted before the first cell that builds a calculator
(a call into :mod:`helpers.calculators`). In the rendered page it is a button; a click replaces it
with the chapter's calculator running in JupyterLite (Pyodide, in the browser), where its
controls work: a short notebook of the calculator cell and the cells it needs
(``tools/plain_notebooks.py``, :func:`calculator_notebook`), which links to the whole chapter.
Colab and Jupyter users never see the directive, since the notebook itself does not contain it.

Every chapter, lab and appendix notebook is also written converted to plain Jupyter Markdown
(``tools/plain_notebooks.py``: exercises headed, solutions folded or, in the student edition,
absent, admonitions quoted, figures as images from the online book, citations "(Author, year)"):
into JupyterLite's contents, the site's ``notebooks/`` folder (which the deploy workflow commits
to the ``notebooks`` branch) and ``_sources/`` (the download button). The Colab and Binder
buttons and the labs' Colab badges open that branch (``plain_notebooks_branch``).

Pyodide, the Python the live notebook runs on, is fetched from a CDN. Offline the kernel only
shows a red icon; the page therefore checks the CDN when the live button is pressed, says
"Python could not be loaded (offline?)" beside the button if it cannot be reached, and folds the
empty frame away (:data:`OFFLINE_SCRIPT`).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx

CALCULATOR_CELL = re.compile(r"\bcalculators\.\w+\(")
"""A code cell that builds one of the book's calculators (``calculators.two_ceilings().show()``)."""

PROMPT = (
    "▶ Run this calculator live, with working controls, right here in the page "
    "(Python loads in your browser: about 30 MB the first time)"
)


def _live_cell(notebook_name: str, prompt: str, height: str) -> dict[str, Any]:
    text = f"```{{notebooklite}} {notebook_name}\n:width: 100%\n:height: {height}\n:prompt: {prompt}\n```"
    return {
        "cell_type": "markdown",
        "id": "live-calculator",
        "metadata": {},
        "source": text,
    }


def insert_live_cell(
    source: str, notebook_name: str, prompt: str = PROMPT, height: str = "760px"
) -> str:
    """Return the notebook JSON ``source`` with the live block before its first calculator (unchanged if none)."""
    nb = json.loads(source)
    cells = nb.get("cells", [])
    for index, cell in enumerate(cells):
        text = (
            "".join(cell.get("source", "")) if cell.get("cell_type") == "code" else ""
        )
        if CALCULATOR_CELL.search(text):
            cells.insert(index, _live_cell(notebook_name, prompt, height))
            return json.dumps(nb)
    return source


def _source_read(app: Sphinx, docname: str, source: list[str]) -> None:
    if not docname.startswith(app.config.live_notebooks_folder + "/"):
        return
    path = app.env.doc2path(docname)
    if not str(path).endswith(".ipynb"):
        return
    source[0] = insert_live_cell(
        source[0], str(path).rsplit("/", 1)[-1], app.config.live_notebooks_prompt
    )


PYODIDE_URL = "https://cdn.jsdelivr.net/pyodide/v314.0.6/full/pyodide.mjs"
"""Where jupyterlite-pyodide-kernel 0.8.6 loads Pyodide from (its kernel schema's pyodideUrl)."""
OFFLINE_MESSAGE = (
    "Python could not be loaded (offline?): the live notebook downloads Python (Pyodide, about "
    "30 MB) from cdn.jsdelivr.net, which this browser cannot reach. The figures and tables on "
    "this page are the notebook's own output; run it on Colab or your machine to change them."
)
OFFLINE_SCRIPT = f"""document.addEventListener("click", (event) => {{
  const button = event.target.closest && event.target.closest(".jupyterlite_sphinx_try_it_button");
  if (!button) return;
  const box = button.closest(".jupyterlite_sphinx_iframe_container") || button.parentElement;
  fetch({json.dumps(PYODIDE_URL)}, {{ method: "HEAD", mode: "no-cors", cache: "no-store" }})
    .catch(() => {{
      if (box.parentElement.querySelector(".live-offline")) return;
      const note = document.createElement("p");
      note.className = "live-offline";
      note.setAttribute("role", "alert");
      note.textContent = {json.dumps(OFFLINE_MESSAGE)};
      box.insertAdjacentElement("beforebegin", note);
      // No empty 760-px frame under the message: the live block folds away.
      box.classList.add("live-offline-box");
      box.style.height = "0";
      box.style.overflow = "hidden";
      box.style.border = "0";
      box.querySelectorAll("iframe, .jupyterlite_sphinx_spinner").forEach((e) => e.remove());
    }});
}}, true);"""
"""Shows :data:`OFFLINE_MESSAGE` above a live block whose button was pressed while the CDN is
unreachable, and folds the block's empty frame away."""


def _plain_notebooks() -> Any:
    """``tools/plain_notebooks.py``, the conversion every notebook outside the web page gets."""
    root = str(Path(__file__).resolve().parents[1])
    if root not in sys.path:
        sys.path.insert(0, root)
    from tools import plain_notebooks

    return plain_notebooks


def _write_plain(app: Sphinx, targets: list[Path], *, calculators: Path | None) -> None:
    """Write every chapter, lab and appendix notebook, converted to plain Jupyter Markdown
    (``tools/plain_notebooks.py``; the student edition's without solutions), under each folder
    of ``targets``; and each chapter's calculator notebook under ``calculators``."""
    plain = _plain_notebooks()
    student = bool(getattr(app.config, "student_edition", False))
    root = Path(app.srcdir)
    citations: dict[str, Any] = {}
    for bib in getattr(app.config, "bibtex_bibfiles", []):
        citations.update(plain.load_references(root / bib))
    rewrites: dict[str, str] = {}
    if student:
        from tools.student_edition import check_rewrites

        rewrites = check_rewrites()
    repository = (app.config.html_theme_options or {}).get("repository_url", "")
    for path in plain.notebooks(root):
        nb = json.loads((root / path).read_text(encoding="utf-8"))
        for cell in nb.get("cells", []):
            source = "".join(cell.get("source", ""))
            if cell.get("cell_type") == "code" and source in rewrites:
                cell["source"] = rewrites[source]
        ctx = plain.Context(
            docname=path.with_suffix("").as_posix(),
            base_url=(app.config.html_baseurl or "").rstrip("/"),
            citations=citations,
            student=student,
            root=root,
            repository=repository.split("github.com/", 1)[-1],
            branch=app.config.plain_notebooks_branch,
        )
        converted = plain.convert(nb, ctx)
        text = json.dumps(converted, indent=1, ensure_ascii=False) + "\n"
        for folder in targets:
            (folder / path).parent.mkdir(parents=True, exist_ok=True)
            (folder / path).write_text(text, encoding="utf-8")
        live = plain.calculator_notebook(converted, ctx)
        if calculators is not None and live is not None:
            target = calculators / plain.calculator_name(ctx.docname)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(
                json.dumps(live, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
            )


def _stage_all_notebooks(app: Sphinx) -> None:
    """Write every notebook, converted, into the JupyterLite contents folder, with each chapter's
    calculator notebook (what the live button opens).

    jupyterlite-sphinx empties that folder at the start of each build and refills it only from
    the pages it reads, as they are, so this runs again before its JupyterLite build; an
    incremental build (one changed chapter) would otherwise ship a live site holding that chapter
    alone, unconverted.
    """
    contents = Path(app.srcdir) / app.config.jupyterlite_content_dir
    _write_plain(app, [contents], calculators=contents)


def _restage(app: Sphinx, exception: Exception | None) -> None:
    """Before the JupyterLite build: stage the live notebooks again; and put the converted
    notebooks where the site offers them: ``notebooks/`` (what the deploy workflow commits to the
    branch Colab and Binder open) and ``_sources/`` (the download button's .ipynb)."""
    if exception is None and app.builder.format == "html":
        _stage_all_notebooks(app)
        out = Path(app.outdir)
        _write_plain(app, [out / "notebooks", out / "_sources"], calculators=None)


def launch_url(url: str, branch: str) -> str:
    """``url``, a Colab or Binder launch link to the repository, opening branch ``branch`` instead."""
    url = re.sub(
        r"(colab\.research\.google\.com/github/[^/]+/[^/]+/blob/)[^/]+/",
        rf"\g<1>{branch}/",
        url,
    )
    return re.sub(r"(mybinder\.org/v2/gh/[^/]+/[^/?]+/)[^/?]+", rf"\g<1>{branch}", url)


def _retarget_launch(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    """Point the page's Colab and Binder buttons at the converted notebooks' branch, and its live
    button at the chapter's calculator notebook."""
    branch = app.config.plain_notebooks_branch

    def walk(buttons: Any) -> None:
        for button in buttons or []:
            if isinstance(button, dict):
                if isinstance(button.get("url"), str):
                    button["url"] = launch_url(button["url"], branch)
                walk(button.get("buttons"))

    walk(context.get("header_buttons"))
    body = context.get("body", "")
    if "jupyterlite_sphinx_try_it_button" in body:
        name = f"{pagename}.ipynb"
        context["body"] = body.replace(
            f"?path={name}'", f"?path={_plain_notebooks().calculator_name(pagename)}'"
        )


def _retarget_badges(app: Sphinx, doctree: Any, docname: str) -> None:
    """A lab's "Open in Colab" badge opens the converted notebook too."""
    from docutils import nodes

    for ref in doctree.findall(nodes.reference):
        uri = ref.get("refuri", "")
        if "colab.research.google.com/github/" in uri:
            ref["refuri"] = launch_url(uri, app.config.plain_notebooks_branch)


def _offline_note(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    """On a page with a live block, add the script that reports an unreachable Pyodide."""
    if "jupyterlite_sphinx_try_it_button" in context.get("body", ""):
        app.builder.add_js_file("", body=OFFLINE_SCRIPT)  # type: ignore[attr-defined]


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("live_notebooks_folder", "chapters", "env")
    app.add_config_value("live_notebooks_prompt", PROMPT, "env")
    app.add_config_value("plain_notebooks_branch", "notebooks", "html")
    app.connect("source-read", _source_read)
    app.connect("builder-inited", _stage_all_notebooks)
    # jupyterlite-sphinx's directive copies each page's notebook, as it is, into the same folder
    # while the pages are read: stage again before its JupyterLite build (build-finished, 500).
    app.connect("build-finished", _restage, priority=400)
    app.connect("html-page-context", _offline_note)
    # after sphinx-book-theme has made its launch buttons (priority 501)
    app.connect("html-page-context", _retarget_launch, priority=600)
    app.connect("doctree-resolved", _retarget_badges)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
