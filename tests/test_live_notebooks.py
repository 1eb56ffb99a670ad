"""The live-button extension (``_ext/live_notebooks.py``) puts its block before each chapter's calculator."""

from __future__ import annotations

import json
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


def test_launch_links_open_the_converted_notebooks_branch():
    """Colab and Binder buttons open the branch the deploy workflow writes the plain notebooks to."""
    colab = "https://colab.research.google.com/github/o/r/blob/main/chapters/04_batching.ipynb"
    binder = "https://mybinder.org/v2/gh/o/r/main?urlpath=lab/tree/chapters/04_batching.ipynb"
    assert live_notebooks.launch_url(colab, "notebooks") == colab.replace(
        "/main/", "/notebooks/"
    )
    assert live_notebooks.launch_url(binder, "notebooks") == binder.replace(
        "/main?", "/notebooks?"
    )
    other = "https://github.com/o/r/blob/main/README.md"
    assert live_notebooks.launch_url(other, "notebooks") == other
