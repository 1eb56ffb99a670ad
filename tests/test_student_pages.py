"""The student edition's pages lose their solutions when written (``_ext/student_pages.py``)."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

from docutils import nodes
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Parser
from docutils.utils import new_document
from sphinx_exercise.nodes import exercise_node, solution_node

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))

import student_pages  # noqa: E402


def _page() -> nodes.document:
    """A page with an exercise, its solution (holding a target ``answer``) and a link to it."""
    doc = new_document("page", get_default_settings(Parser))
    question = exercise_node()
    question += nodes.paragraph(text="Ask.")
    answer = solution_node(ids=["sol-1"])
    answer += nodes.paragraph(text="Answer.", ids=["answer"])
    link = nodes.reference("", "see the answer", refid="answer")
    doc += [question, answer, nodes.paragraph("", "", link)]
    return doc


def _app(student: bool) -> SimpleNamespace:
    """A stand-in for the Sphinx app: the config flag and a registry with another page's solution."""
    registry = {
        "sol-9": {
            "type": "solution",
            "docname": "other",
            "node": solution_node(ids=["x"]),
        }
    }
    return SimpleNamespace(
        config=SimpleNamespace(student_edition=student),
        env=SimpleNamespace(sphinx_exercise_registry=registry),
    )


def test_drop_solutions_keeps_the_exercise_and_returns_the_ids_it_removed():
    doc = _page()
    assert student_pages.drop_solutions(doc) == {"sol-1", "answer"}
    assert not list(doc.findall(solution_node))
    assert len(list(doc.findall(exercise_node))) == 1
    assert "Ask." in doc.astext() and "Answer." not in doc.astext()


def test_the_book_keeps_its_solutions():
    doc = _page()
    student_pages._on_doctree_resolved(_app(False), doc, "page")
    assert "Answer." in doc.astext()


def test_a_link_into_a_dropped_solution_is_reported(monkeypatch):
    """On the same page (refid) and on another page (refuri into another page's solution)."""
    warnings: list[str] = []
    monkeypatch.setattr(
        student_pages.logger,
        "warning",
        lambda msg, *args, **kw: warnings.append(msg % args),
    )
    doc = _page()
    doc += nodes.paragraph("", "", nodes.reference("", "x", refuri="../other.html#x"))
    doc += nodes.paragraph("", "", nodes.reference("", "y", refuri="../other.html#y"))
    student_pages._on_doctree_resolved(_app(True), doc, "dir/page")
    assert "Answer." not in doc.astext()
    assert len(warnings) == 2, warnings
    assert "(dir/page#answer)" in warnings[0] and "(other#x)" in warnings[1]
