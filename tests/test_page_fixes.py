"""Fixes ``_ext/page_fixes.py`` makes to the written pages (the browser tests check them rendered)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))

import page_fixes  # noqa: E402


def test_title_that_repeats_the_book_title_is_cut_to_one():
    """ "X — X" becomes "X"; a chapter's "1. Two ceilings — X" stays."""
    book = "GPU performance from first principles"
    assert (
        page_fixes.single_title(f"<title>{book} &#8212; {book}</title>")
        == f"<title>{book}</title>"
    )
    chapter = f"<title>1. Two ceilings &#8212; {book}</title>"
    assert page_fixes.single_title(chapter) == chapter


def test_search_index_script_is_recognised_at_any_depth():
    """The theme's searchindex.js tag, from the root or two folders down, and nothing else."""
    for tag in (
        '<script src="searchindex.js"></script>',
        '<script src="../../searchindex.js"></script>',
    ):
        assert page_fixes._SEARCH_INDEX.sub("", f"a\n  {tag}b") == "ab"
    other = '<script src="../_static/searchtools.js"></script>'
    assert page_fixes._SEARCH_INDEX.sub("", other) == other


def test_sidebar_toggle_script_forwards_to_the_first_toggle_of_each_kind():
    """The script listens in the capture phase and clicks the first (bound) toggle of the kind
    pressed; it is added to every page."""
    script = page_fixes.SIDEBAR_TOGGLES
    assert '"primary-toggle", "secondary-toggle"' in script
    assert "bound.click()" in script and script.rstrip().endswith("}, true);")
