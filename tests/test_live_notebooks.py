"""The live-button extension (``_ext/live_notebooks.py``) puts its block before each chapter's calculator."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))

import live_notebooks  # noqa: E402

CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))


def _nb(*sources: str) -> str:
    cells = [
        {"cell_type": "code", "metadata": {}, "source": s, "outputs": []}
        for s in sources
    ]
    return json.dumps(
        {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    )


def test_block_goes_before_the_first_calculator():
    """The block is inserted once, right before the first cell that builds a calculator."""
    source = _nb(
        "x = 1", "calculators.two_ceilings().show()", "calculators.rooflines().show()"
    )
    cells = json.loads(live_notebooks.insert_live_cell(source, "ch.ipynb"))["cells"]
    assert [c["cell_type"] for c in cells] == ["code", "markdown", "code", "code"]
    assert "{notebooklite} ch.ipynb" in cells[1]["source"]


def test_notebook_without_calculator_is_unchanged():
    """A notebook with no calculator call (the word alone does not count) is returned as it was."""
    source = _nb("from helpers import calculators", "print('calculators.x')")
    assert live_notebooks.insert_live_cell(source, "ch.ipynb") == source


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_every_chapter_gets_its_live_block(path):
    """Each chapter's calculator cell is found, so its page shows the live button."""
    source = path.read_text(encoding="utf-8")
    assert live_notebooks.insert_live_cell(source, path.name) != source, (
        f"{path.name}: no calculator cell found"
    )


CITATIONS = {
    "williams2009roofline": "Williams et al., 2009",
    "qin2025mooncake": "Qin et al., 2025",
}


def test_roles_become_plain_markdown():
    """A citation is "(Author et al., year)" linked to the web bibliography; a {doc} link goes to
    the staged notebook when JupyterLite has it and to the web page otherwise; {ref} keeps its
    text, {math} becomes $...$, and the footbibliography directive goes."""
    text = (
        "Rooflines {footcite}`williams2009roofline,qin2025mooncake`; see {doc}`Chapter 2 "
        "<02_roofline>` and {doc}`the lab <../labs/lab1_roofline>`, {ref}`the table <tbl-x>`,"
        " {math}`b^2`.\n\n```{footbibliography}\n```\n"
    )
    out = live_notebooks.plain_markdown(
        text,
        docname="chapters/04_batching",
        staged={"chapters/02_roofline"},
        web="https://example.org/book",
        citations=CITATIONS,
    )
    assert out == (
        "Rooflines ([Williams et al., 2009; Qin et al., 2025]"
        "(https://example.org/book/appendix/bibliography.html)); see [Chapter 2](02_roofline.ipynb)"
        " and [the lab](https://example.org/book/labs/lab1_roofline.html), the table, $b^2$.\n\n"
    )


def test_every_chapter_stages_without_a_myst_role(tmp_path):
    """Each chapter, staged as JupyterLite gets it, has no {role}`...` left in its Markdown, and its
    code cells are untouched."""
    staged = {f"chapters/{p.stem}" for p in CHAPTERS}
    citations = live_notebooks.citation_texts(ROOT / "references.bib")
    for path in CHAPTERS:
        target = tmp_path / path.name
        live_notebooks.stage_notebook(
            path,
            target,
            docname=f"chapters/{path.stem}",
            staged=staged,
            web="https://example.org/book",
            citations=citations,
        )
        before = json.loads(path.read_text(encoding="utf-8"))["cells"]
        after = json.loads(target.read_text(encoding="utf-8"))["cells"]
        assert len(before) == len(after)
        for old, new in zip(before, after):
            if new["cell_type"] == "markdown":
                assert not live_notebooks._ROLE.search(new["source"]), (
                    f"{path.name}: {live_notebooks._ROLE.search(new['source']).group(0)}"
                )
            else:
                assert new["source"] == old["source"]


def test_citation_texts_are_author_year():
    """One author: "Surname, year"; more than two: "Surname et al., year" (references.bib)."""
    texts = live_notebooks.citation_texts(ROOT / "references.bib")
    assert texts["williams2009roofline"] == "Williams et al., 2009"
    assert all(re.search(r", (\d{4}|n\.d\.)$", t) for t in texts.values())
