"""The notation table (appendix/notation.md): one meaning per symbol, in the book, linked from the pages that use it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTATION = ROOT / "appendix" / "notation.md"


def _symbols() -> list[str]:
    """First cell of every row of the symbol tables."""
    text = NOTATION.read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    cells = [row.split("|")[1].strip() for row in rows]
    return [c for c in cells if c not in ("symbol", "---")]


def test_notation_page_is_in_the_book():
    toc = (ROOT / "_toc.yml").read_text(encoding="utf-8")
    assert "appendix/notation" in toc


def test_no_symbol_has_two_rows():
    """Each symbol is defined once: a second row would give it a second meaning."""
    symbols = _symbols()
    assert len(symbols) > 40
    duplicates = sorted({s for s in symbols if symbols.count(s) > 1})
    assert duplicates == []


def _links_notation(path: Path) -> bool:
    nb = json.loads(path.read_text(encoding="utf-8"))
    text = "\n".join(
        "".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"
    )
    return (
        re.search(r"\]\((\.\./)?appendix/notation(\.md)?(#[\w-]+)?\)", text) is not None
    )


PAGES = sorted(
    str(p.relative_to(ROOT))
    for p in [*ROOT.glob("chapters/*.ipynb"), *ROOT.glob("labs/*.ipynb")]
)


@pytest.mark.parametrize("page", PAGES)
def test_page_links_the_notation_table(page):
    """Every chapter and lab links the notation page (where it first uses a symbol)."""
    assert _links_notation(ROOT / page), f"{page} does not link ../appendix/notation.md"
