"""Sphinx extension: the student edition drops exercise solutions when it writes its pages.

``student_edition: true`` in the Sphinx config (``tools/student_edition.py config`` sets it)
removes every sphinx-exercise solution from each page's resolved doctree, before the builder
writes the page and indexes it for search. The book and its student edition therefore read
their sources into the same doctrees, and ``make student`` (and the student PDF) reuse the
book's: only the pages are written again. sphinx-exercise's own ``hide_solutions`` drops
solutions while the sources are read, which makes Sphinx read the whole book a second time
(about 40 s of each edition's build on a 2-core machine).

The student PDF reuses the book PDF's doctrees the same way. sphinx-jupyterbook-latex sets
``numfig_secnum_depth`` to 2 for a book in parts, but only once the builder starts, after Sphinx
has compared the configuration with the one the doctrees were read with: the value differs, and
Sphinx would read every source again. ``_settle_latex_numbering`` makes the same decision at
``config-inited``, before the comparison.

A check cell that computes its exercise's answer with a helper (``exercises.check(answer,
ops.critical_batch_size(...))``) would hand a student the number: the edition shows and ships the
cell that compares the answer against its stored digest instead (``tools/student_edition.py``,
``helpers.exercises.check_digest``).

A link that opens a notebook elsewhere (the labs' "Open in Colab" badge, Binder) would open the
full notebook with every solution: in this edition it points at the edition's own notebooks, the
zip ``tools/student_edition.py strip`` writes (:data:`STUDENT_ZIP`), and in print it is dropped.

A reference into a removed solution would point at nothing in the student edition: it is
reported as a warning (an error under ``-W``), naming the page.
"""

from __future__ import annotations

import posixpath
import sys
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.util import logging
from sphinx_exercise.nodes import solution_end_node, solution_node, solution_start_node

logger = logging.getLogger(__name__)
SOLUTION_NODES = (solution_node, solution_start_node, solution_end_node)


def drop_solutions(doctree: nodes.document) -> set[str]:
    """Remove every solution from ``doctree``; return the ids the removed nodes carried."""
    removed: set[str] = set()
    for node in list(doctree.findall(lambda n: isinstance(n, SOLUTION_NODES))):
        if node.parent is None:  # inside a solution removed already
            continue
        for inner in node.findall(nodes.Element):
            removed.update(inner["ids"])
        node.parent.remove(node)
    return removed


def _solution_targets(app: Sphinx) -> set[tuple[str, str]]:
    """(page, id) of every id inside a solution of the book (sphinx-exercise's registry)."""
    registry = getattr(app.env, "sphinx_exercise_registry", {})
    return {
        (entry["docname"], node_id)
        for entry in registry.values()
        if entry["type"] == "solution"
        for inner in entry["node"].findall(nodes.Element)
        for node_id in inner["ids"]
    }


def _target(docname: str, ref: nodes.reference) -> tuple[str, str]:
    """The (page, id) a reference on page ``docname`` points at ("" for no id)."""
    if ref.get("refid"):
        return docname, ref["refid"]
    path, _, fragment = ref.get("refuri", "").partition("#")
    if not path:
        return docname, fragment
    if "://" in path:
        return path, fragment  # another site
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(docname), path))
    return posixpath.splitext(joined)[0], fragment


STUDENT_ZIP = "_downloads/notebooks-student.zip"
"""The student edition's notebooks, every chapter and lab without solutions (site-relative)."""
NOTEBOOK_HOSTS = ("colab.research.google.com", "mybinder.org", "github.com", "nbviewer")
"""Hosts a link to a notebook (``.ipynb``) could open it on, solutions included."""


def opens_full_notebook(uri: str) -> bool:
    """Whether ``uri`` opens a notebook of the repository on another site."""
    if "://" not in uri:
        return False
    host = uri.split("://", 1)[1].split("/", 1)[0]
    return any(h in host for h in NOTEBOOK_HOSTS) and (
        ".ipynb" in uri or "colab.research.google.com/github" in uri
    )


def redirect_notebook_links(doctree: nodes.Element, docname: str, *, html: bool) -> int:
    """Point each link that opens a full notebook elsewhere at the edition's zip (``html``), or
    replace it by its text (print); return how many were changed."""
    changed = 0
    for ref in list(doctree.findall(nodes.reference)):
        if not opens_full_notebook(ref.get("refuri", "")):
            continue
        changed += 1
        if html:
            target = posixpath.relpath(STUDENT_ZIP, posixpath.dirname(docname) or ".")
            text = "Download this edition's notebooks (zip, no solutions)"
            ref.replace_self(nodes.reference(text, text, refuri=target))
        else:
            ref.replace_self(
                nodes.Text("Its notebook is in the student edition's notebook zip.")
            )
    return changed


def digest_checks(doctree: nodes.Element, rewrites: dict[str, str]) -> int:
    """Show each check cell that computes its answer as the edition's digest check (the code
    cell's text in the page); return how many were rewritten."""
    by_text = {old.strip(): new for old, new in rewrites.items()}
    changed = 0
    for block in list(doctree.findall(nodes.literal_block)):
        new = by_text.get(block.astext().strip())
        if new is None:
            continue
        block.rawsource = new
        block.children = []
        block += nodes.Text(new)
        changed += 1
    return changed


def _rewrites() -> dict[str, str]:
    root = str(Path(__file__).resolve().parents[1])
    if root not in sys.path:
        sys.path.insert(0, root)
    from tools.student_edition import check_rewrites

    return check_rewrites()


def _on_doctree_resolved(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    if not app.config.student_edition:
        return
    digest_checks(doctree, _rewrites())
    builder = getattr(app, "builder", None)
    redirect_notebook_links(
        doctree, docname, html=getattr(builder, "format", "html") == "html"
    )
    dropped = {(docname, i) for i in drop_solutions(doctree)} | _solution_targets(app)
    for ref in doctree.findall(nodes.reference):
        page, fragment = _target(docname, ref)
        if fragment and (page, fragment) in dropped:
            logger.warning(
                "student edition: %s links to solution content (%s#%s) that this edition drops",
                docname,
                page,
                fragment,
                location=ref,
            )


def _settle_latex_numbering(app: Sphinx, config: Config) -> None:
    """For LaTeX, set ``numfig_secnum_depth`` as sphinx-jupyterbook-latex will (2 for a book in parts)."""
    # No builder exists yet at config-inited; jupyter-book writes LaTeX into a folder named latex.
    if Path(app.outdir).name != "latex" or "jblatex_captions_to_parts" not in config:
        return  # not LaTeX, or without sphinx-jupyterbook-latex
    sitemap = getattr(config, "external_site_map", None)
    in_parts = config["jblatex_captions_to_parts"] is True or (
        config["jblatex_captions_to_parts"] is None
        and sitemap is not None
        and sitemap.file_format == "jb-book"
        and len(sitemap.root.subtrees) > 1
    )
    if in_parts:
        config["numfig_secnum_depth"] = 2


def setup(app: Sphinx) -> dict[str, Any]:
    """Register ``student_edition`` (rebuild "html": it never changes what the sources read into)."""
    app.setup_extension("sphinx_exercise")
    app.add_config_value("student_edition", False, "html", [bool])
    app.connect("doctree-resolved", _on_doctree_resolved)
    # after sphinx-external-toc has read the table of contents (its handler has the default priority)
    app.connect("config-inited", _settle_latex_numbering, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
