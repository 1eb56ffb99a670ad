"""Code cites the book's chapters by slug, never by number (C4-7).

A chapter's number changes when chapters are added or reordered (the last renumbering broke a
test that wrote a range as numbers); its slug, the file name in ``_toc.yml`` without the number
(``chapters/07_transfer_or_recompute`` -> ``transfer_or_recompute``), does not. Docstrings and
comments of ``helpers`` cite a chapter as ``chapter ``transfer_or_recompute````, and every slug
cited in ``helpers`` or ``tests`` must be a page of ``_toc.yml``. (Whether each module is in the
API reference, and that ``import helpers`` needs no torch, is ``tests/test_api.py``'s.)
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CITED = re.compile(r"\b[Cc]hapters? ((?:``\w+``(?:,? (?:and|to|or) |, )?)+)")
BY_NUMBER = re.compile(r"\b(?:[Cc]hapters? \d+|[Cc]h\. ?\d+)")


def _slugs() -> set[str]:
    toc = (ROOT / "_toc.yml").read_text(encoding="utf-8")
    return set(re.findall(r"file: [\w/]*?/(?:\d+_)?(\w+)\s*$", toc, flags=re.M))


def _prose(path: Path) -> list[tuple[int, str]]:
    """Docstrings (and attribute docstrings) and comments of a Python file, with their lines."""
    text = path.read_text(encoding="utf-8")
    found = [
        (node.lineno, node.value.value)
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    ]
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT:
            found.append((token.start[0], token.string))
    return found


def _cited(text: str) -> list[str]:
    return [s for group in CITED.findall(text) for s in re.findall(r"``(\w+)``", group)]


def test_helpers_cite_chapters_by_slug_not_number():
    """No docstring or comment in helpers says "Chapter 7" or "ch. 9"."""
    numbered = [
        f"{path.relative_to(ROOT)}:{line}: {BY_NUMBER.search(text)[0]}"  # type: ignore[index]
        for path in sorted((ROOT / "helpers").rglob("*.py"))
        for line, text in _prose(path)
        if BY_NUMBER.search(text)
    ]
    assert numbered == [], f"cite chapters by slug (chapter ``slug``): {numbered}"


def test_every_cited_slug_is_a_page_of_the_book():
    """Each ``chapter ``slug```` in helpers and tests names a page of ``_toc.yml``."""
    slugs = _slugs()
    assert {"two_ceilings", "transfer_or_recompute", "many_gpus"} <= slugs
    files = [*(ROOT / "helpers").rglob("*.py"), *(ROOT / "tests").glob("*.py")]
    files.remove(ROOT / "tests" / "test_docs.py")  # its own examples
    unknown = [
        f"{path.relative_to(ROOT)}: {slug}"
        for path in sorted(files)
        for slug in _cited(path.read_text(encoding="utf-8"))
        if slug not in slugs
    ]
    assert unknown == [], f"slugs that are no page of _toc.yml: {unknown}"


def test_the_citation_pattern_reads_lists_and_ranges():
    """The scan is not vacuous: single slugs, "and", "to" and comma lists are all read."""
    text = (
        "chapters ``a`` to ``b``; Chapter ``c``'s rule; chapters ``d``, ``e`` and ``f``"
    )
    assert _cited(text) == ["a", "b", "c", "d", "e", "f"]
    assert BY_NUMBER.search("see Chapter 7") and BY_NUMBER.search("(ch. 9)")
    assert not BY_NUMBER.search("chapter ``transfer_or_recompute``")


def test_the_rewriting_tool_cites_by_slug_and_leaves_printed_text(tmp_path):
    """``tools/cite_by_slug.py`` turns numbers into slugs in docstrings and comments only."""
    from tools.cite_by_slug import cite, rewrite, slugs_by_number

    slugs = slugs_by_number((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    assert slugs[7] == "transfer_or_recompute"
    assert cite("Chapters 6-8 and ch. 9", slugs) == (
        "Chapters ``transformer_inference`` to ``latency_targets`` and chapter "
        "``disaggregated_memory``"
    )
    source = tmp_path / "m.py"
    source.write_text(
        '"""Chapter 7\'s rule."""\n\nx = "see Chapter 7"  # Chapter 3 explains\n'
    )
    assert rewrite(source, slugs) == (
        '"""Chapter ``transfer_or_recompute``\'s rule."""\n\n'
        'x = "see Chapter 7"  # Chapter ``below_roofline`` explains\n'
    )
