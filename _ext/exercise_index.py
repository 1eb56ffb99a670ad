"""Sphinx extension: ``{exercise-index}`` lists every exercise of the book, by page, with its label.

Instructors use the list to assign work ("do ch4-q2 and lab2-q1"). It is built
from sphinx-exercise's registry at build time, so it never goes stale.
"""

from __future__ import annotations

import re
from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective


class exercise_index_placeholder(nodes.General, nodes.Element):
    """Replaced by the list once every document has been read."""


class ExerciseIndexDirective(SphinxDirective):
    has_content = False

    def run(self) -> list[nodes.Node]:
        return [exercise_index_placeholder("")]


def _question(entry: dict[str, Any], page_uri: str = "") -> list[nodes.Node]:
    """The exercise's first paragraph as nodes (math and emphasis kept), whole.

    Citations are left out (footnotes, and the citations _ext/bibtex_plugins.py makes of them):
    the copy is made after Sphinx resolved the book's references, so they would stay unresolved. A link to an
    anchor of the exercise's own page (``#memory-caps``) would point at nothing on the index: it
    is pointed at that page (``page_uri``).
    """
    node = entry.get("node")
    for paragraph in node.findall(nodes.paragraph) if node is not None else ():
        if not paragraph.astext().strip():
            continue
        kept: list[nodes.Node] = []
        for child in paragraph.children:
            if _is_citation(child):
                continue
            kept.append(_unlinked(child.deepcopy()))
        for piece in kept:
            if isinstance(piece, nodes.Element):
                for inner in list(piece.findall(_is_citation)):
                    inner.parent.remove(inner)
                for inner in list(piece.findall(addnodes.pending_xref)):
                    inner.replace_self(_unlinked(inner))
                _anchor_to_page(piece, page_uri)
        return [_tidy_space(piece) for piece in kept]
    return []


def _unlinked(node: nodes.Node) -> nodes.Node:
    """A cross-reference Sphinx had not resolved when the question was copied, as its plain text.

    A link to another page (``[Chapter 8](08_latency_targets.ipynb)``) can still be a
    ``pending_xref`` in the copy; left so, no writer knows the node. Its words stay, unlinked.
    """
    if isinstance(node, addnodes.pending_xref):
        return nodes.inline("", "", *(child.deepcopy() for child in node.children))
    return node


def _is_citation(node: nodes.Node) -> bool:
    return isinstance(node, (nodes.footnote_reference, nodes.citation_reference)) or (
        isinstance(node, addnodes.pending_xref) and node.get("refdomain") == "cite"
    )


def _tidy_space(node: nodes.Node) -> nodes.Node:
    """A text piece without the space a removed citation left before a comma or stop."""
    if isinstance(node, nodes.Text):
        return nodes.Text(re.sub(r" +([,.;:)])", r"\1", node.astext()))
    return node


def _anchor_to_page(tree: nodes.Element, page_uri: str) -> None:
    """Point every same-page link in ``tree`` at ``page_uri`` (the page it was copied from)."""
    refs = [tree] if isinstance(tree, nodes.reference) else []
    for ref in refs + list(tree.findall(nodes.reference)):
        if ref.get("refid"):
            ref["refuri"] = f"{page_uri}#{ref['refid']}"
            del ref["refid"]
        elif ref.get("refuri", "").startswith("#"):
            ref["refuri"] = page_uri + ref["refuri"]


def _fill(app: Sphinx, doctree: nodes.document, fromdocname: str) -> None:
    placeholders = list(doctree.findall(exercise_index_placeholder))
    if not placeholders:
        return
    env = app.env
    registry = getattr(env, "sphinx_exercise_registry", {})
    by_doc: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for label, entry in registry.items():
        if entry.get("type") == "exercise":
            by_doc.setdefault(entry["docname"], []).append((label, entry))
    content: list[nodes.Node] = []
    for docname in sorted(by_doc):
        title = env.titles[docname].astext() if docname in env.titles else docname
        heading = nodes.paragraph()
        link = nodes.reference(
            "",
            title,
            internal=True,
            refuri=app.builder.get_relative_uri(fromdocname, docname),
        )
        heading += nodes.strong("", "", link)
        content.append(heading)
        items = nodes.bullet_list()
        for label, entry in sorted(
            by_doc[docname], key=lambda pair: pair[1]["node"].get("serial_number", 0)
        ):
            uri = app.builder.get_relative_uri(fromdocname, docname) + "#" + label
            para = nodes.paragraph()
            para += nodes.reference(
                "", "", nodes.literal(label, label), internal=True, refuri=uri
            )
            question = _question(
                entry, app.builder.get_relative_uri(fromdocname, docname)
            )
            if question:
                para += nodes.Text(" — ")
                para.extend(question)
            items += nodes.list_item("", para)
        content.append(items)
    if not content:
        content = [nodes.paragraph(text="No exercises found.")]
    for placeholder in placeholders:
        placeholder.replace_self(content)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_node(exercise_index_placeholder)
    app.add_directive("exercise-index", ExerciseIndexDirective)
    app.connect("doctree-resolved", _fill)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "env_version": 1}
