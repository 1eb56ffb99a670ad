"""The exercise index (``_ext/exercise_index.py``) shows each question whole, with working links."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from docutils import nodes

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))

import exercise_index  # noqa: E402

INDEX_HTML = ROOT / "_build" / "html" / "appendix" / "exercises.html"


def _entry(*children: nodes.Node) -> dict:
    exercise = nodes.container()
    exercise += nodes.paragraph("", "", *children)
    return {"node": exercise}


def test_question_is_whole_and_same_page_links_point_at_its_page():
    """A long question is not cut; a link to an anchor of the exercise's page (by refuri "#..." or
    by refid) is pointed at that page; a link elsewhere and a footnote mark are as they were /
    left out."""
    long = "word " * 80
    entry = _entry(
        nodes.Text(long),
        nodes.reference("", "conventions", refuri="#memory-caps"),
        nodes.reference("", "table", refid="tbl-x"),
        nodes.reference("", "elsewhere", refuri="../appendix/notation.html#sym"),
        nodes.footnote_reference("", "1", refid="fn1"),
    )
    kept = exercise_index._question(entry, "../chapters/05.html")
    text = "".join(n.astext() for n in kept)
    assert text.startswith(long) and "…" not in text
    refs = [n for n in kept if isinstance(n, nodes.reference)]
    assert [r["refuri"] for r in refs] == [
        "../chapters/05.html#memory-caps",
        "../chapters/05.html#tbl-x",
        "../appendix/notation.html#sym",
    ]
    assert not any(isinstance(n, nodes.footnote_reference) for n in kept)


def test_unresolved_cross_page_link_keeps_its_words_without_the_node():
    """A link to another page that is still a ``pending_xref`` when the question is copied (which
    no HTML writer can write) becomes its plain words, at top level and nested in emphasis."""
    from sphinx import addnodes

    def xref(text: str) -> addnodes.pending_xref:
        ref = addnodes.pending_xref("", refdomain="std", reftype="doc", reftarget="08")
        ref += nodes.inline("", text)
        return ref

    entry = _entry(
        nodes.Text("Using "),
        xref("Chapter 8"),
        nodes.Text("'s batch and "),
        nodes.emphasis("", "", xref("its table")),
    )
    kept = exercise_index._question(entry)
    assert "".join(n.astext() for n in kept) == "Using Chapter 8's batch and its table"
    assert not any(
        isinstance(n, addnodes.pending_xref)
        for piece in kept
        if isinstance(piece, nodes.Element)
        for n in [piece, *piece.findall(addnodes.pending_xref)]
    )


@pytest.mark.built  # never beside a build of the book: run by make's site-check stage
@pytest.mark.skipif(not INDEX_HTML.exists(), reason="book not built (make book)")
def test_built_index_has_no_dead_same_page_anchor():
    """Every "#anchor" link on the built index page names an id on that page (R4)."""
    html = INDEX_HTML.read_text(encoding="utf-8")
    ids = set(re.findall(r'\bid="([^"]+)"', html))
    dead = [a for a in re.findall(r'href="#([^"]+)"', html) if a not in ids]
    assert not dead, f"dead anchors on the exercise index: {dead}"
