"""Sphinx extension: put a "run it live in the page" block above each chapter's calculator.

For every notebook under ``chapters/``, at read time (the file on disk is not
touched), a Markdown cell holding jupyterlite-sphinx's ``notebooklite``
directive is inserted before the first cell that builds a calculator
(a call into :mod:`helpers.calculators`). In the rendered page it is a button; a click replaces it
with the whole chapter running in JupyterLite (Pyodide, in the browser), where
the calculator's controls work. Colab and Jupyter users never see the
directive, since the notebook itself does not contain it.

The staged copies are what JupyterLite shows, and its Markdown is not MyST: there each role is
rewritten to what it means in plain Markdown (:func:`plain_markdown`). A citation becomes
"(Author et al., year)" linked to the web edition's bibliography, a link to another page a
Markdown link (to the staged notebook, or to the web edition), a cross-reference its text.

Pyodide, the Python the live notebook runs on, is fetched from a CDN. Offline the kernel only
shows a red icon; the page therefore checks the CDN when the live button is pressed, and says
"Python could not be loaded (offline?)" beside the button if it cannot be reached
(:data:`OFFLINE_SCRIPT`).
"""

from __future__ import annotations

import json
import posixpath
import re
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx

CALCULATOR_CELL = re.compile(r"\bcalculators\.\w+\(")
"""A code cell that builds one of the book's calculators (``calculators.two_ceilings().show()``)."""

PROMPT = (
    "▶ Run this chapter live, with working controls, right here in the page "
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
    }});
}}, true);"""
"""Shows :data:`OFFLINE_MESSAGE` above a live block whose button was pressed while the CDN is unreachable."""

# MyST roles: {name}`text` (text may be "title <target>").
_ROLE = re.compile(r"\{(?P<name>[a-z:-]+)\}`(?P<body>[^`]*)`")
_TITLED = re.compile(r"^(?P<title>.*?)\s*<(?P<target>[^<>]+)>$", re.S)
_FOOTBIB = re.compile(r"(?m)^```\{footbibliography\}\s*\n```\s*$\n?")


def _cite(keys: str, citations: dict[str, str], bibliography: str) -> str:
    texts = [citations.get(k.strip(), k.strip()) for k in keys.split(",") if k.strip()]
    label = "; ".join(texts)
    return f"([{label}]({bibliography}))" if bibliography else f"({label})"


def plain_markdown(
    text: str,
    *,
    docname: str,
    staged: set[str],
    web: str,
    citations: dict[str, str],
) -> str:
    """``text`` (a Markdown cell of page ``docname``) with its MyST roles in plain Markdown.

    ``staged``: the pages JupyterLite has as notebooks (linked to directly); ``web``: the web
    edition's address (other pages and the bibliography link there; plain text if empty);
    ``citations``: citation key -> "Author et al., year".
    """
    folder = posixpath.dirname(docname)
    bibliography = f"{web}/appendix/bibliography.html" if web else ""

    def page_link(title: str, target: str) -> str:
        path, _, anchor = target.partition("#")
        page = posixpath.normpath(posixpath.join(folder, path)) if path else docname
        page = re.sub(r"\.(md|ipynb)$", "", page)
        fragment = f"#{anchor}" if anchor else ""
        if page in staged:
            return (
                f"[{title}]({posixpath.relpath(page, folder or '.')}.ipynb{fragment})"
            )
        if web:
            return f"[{title}]({web}/{page}.html{fragment})"
        return title

    def replace(match: re.Match[str]) -> str:
        name, body = match.group("name"), match.group("body")
        titled = _TITLED.match(body)
        title, target = (
            (titled.group("title"), titled.group("target")) if titled else (body, body)
        )
        if name in {"footcite", "cite", "cite:p", "cite:t", "footcite:p", "footcite:t"}:
            return _cite(body, citations, bibliography)
        if name == "doc":
            return page_link(title if titled else posixpath.basename(body), target)
        if name == "math":
            return f"${body}$"
        if name in {
            "ref",
            "numref",
            "eq",
            "term",
            "prf:ref",
            "func",
            "mod",
            "class",
            "meth",
        }:
            return f"`{title}`" if name in {"func", "mod", "class", "meth"} else title
        return title

    return _FOOTBIB.sub("", _ROLE.sub(replace, text))


def citation_texts(bib: Path) -> dict[str, str]:
    """Citation key -> "Author et al., year" (author-year, as the book cites) from ``bib``."""
    from pybtex.database import parse_file

    texts = {}
    for key, entry in parse_file(str(bib)).entries.items():
        people = entry.persons.get("author") or entry.persons.get("editor") or []
        names = [" ".join(p.last_names) for p in people]
        if not names:
            who = entry.fields.get("organization") or entry.fields.get("title", key)
        elif len(names) == 1:
            who = names[0]
        elif len(names) == 2:
            who = f"{names[0]} and {names[1]}"
        else:
            who = f"{names[0]} et al."
        who = re.sub(r"[{}]", "", who)
        texts[key] = f"{who}, {entry.fields.get('year', 'n.d.')}"
    return texts


def stage_notebook(source: Path, target: Path, **context: Any) -> None:
    """Write the notebook ``source`` to ``target`` with its Markdown in plain Markdown."""
    nb = json.loads(source.read_text(encoding="utf-8"))
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "markdown":
            text = "".join(cell.get("source", ""))
            cell["source"] = plain_markdown(text, **context)
    target.write_text(
        json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )


def _stage_all_notebooks(app: Sphinx) -> None:
    """Copy every live notebook into the JupyterLite contents folder.

    jupyterlite-sphinx empties that folder at the start of each build and
    refills it only from the pages it reads, so an incremental build (one
    changed chapter) would ship a live site holding that chapter alone and
    leave the other chapters' live buttons opening nothing.
    """
    source = Path(app.srcdir) / app.config.live_notebooks_folder
    target = (
        Path(app.srcdir)
        / app.config.jupyterlite_content_dir
        / app.config.live_notebooks_folder
    )
    target.mkdir(parents=True, exist_ok=True)
    folder = app.config.live_notebooks_folder
    notebooks = sorted(source.glob("*.ipynb"))
    staged = {f"{folder}/{n.stem}" for n in notebooks}
    bibs = [Path(app.srcdir) / b for b in getattr(app.config, "bibtex_bibfiles", [])]
    citations: dict[str, str] = {}
    for bib in bibs:
        citations.update(citation_texts(bib))
    web = (app.config.html_baseurl or "").rstrip("/")
    for notebook in notebooks:
        stage_notebook(
            notebook,
            target / notebook.name,
            docname=f"{folder}/{notebook.stem}",
            staged=staged,
            web=web,
            citations=citations,
        )


def _restage(app: Sphinx, exception: Exception | None) -> None:
    if exception is None and app.builder.format == "html":
        _stage_all_notebooks(app)


def _offline_note(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    """On a page with a live block, add the script that reports an unreachable Pyodide."""
    if "jupyterlite_sphinx_try_it_button" in context.get("body", ""):
        app.builder.add_js_file("", body=OFFLINE_SCRIPT)  # type: ignore[attr-defined]


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("live_notebooks_folder", "chapters", "env")
    app.add_config_value("live_notebooks_prompt", PROMPT, "env")
    app.connect("source-read", _source_read)
    app.connect("builder-inited", _stage_all_notebooks)
    # jupyterlite-sphinx's directive copies each page's notebook, as it is, into the same folder
    # while the pages are read: stage again before its JupyterLite build (build-finished, 500).
    app.connect("build-finished", _restage, priority=400)
    app.connect("html-page-context", _offline_note)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
