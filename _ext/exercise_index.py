"""Sphinx extension: ``{exercise-index}`` lists every exercise of the book, by page, with its label.

Instructors use the list to assign work ("do ch3-q2 and lab2-q1"). It is built
from sphinx-exercise's registry at build time, so it never goes stale.
"""

from __future__ import annotations

from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective


class exercise_index_placeholder(nodes.General, nodes.Element):
    """Replaced by the list once every document has been read."""


class ExerciseIndexDirective(SphinxDirective):
    has_content = False

    def run(self) -> list[nodes.Node]:
        return [exercise_index_placeholder("")]


def _question(entry: dict[str, Any], limit: int = 170) -> list[nodes.Node]:
    """The exercise's first paragraph as nodes (math and emphasis kept), cut after about ``limit`` characters.

    Footnote citations are left out: their targets live on the exercise's own page.
    """
    node = entry.get("node")
    for paragraph in node.findall(nodes.paragraph) if node is not None else ():
        if not paragraph.astext().strip():
            continue
        kept: list[nodes.Node] = []
        length = 0
        for child in paragraph.children:
            if isinstance(child, (nodes.footnote_reference, nodes.citation_reference)):
                continue
            if length >= limit:
                kept.append(nodes.Text(" …"))
                break
            kept.append(child.deepcopy())
            length += len(child.astext())
        return kept
    return []


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
            question = _question(entry)
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
