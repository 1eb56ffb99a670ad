"""The labs' pages: the code a reader sees is the experiment, and each run states its model against its measurement.

A code cell tagged ``hide-input``, ``remove-input``, ``hide-cell`` or ``remove-cell`` is not
visible on the page (its input is collapsed or removed); every other code cell's non-blank lines
count. Plumbing (sizes, probes, checks, plots, tables) belongs in :mod:`helpers` or in such cells.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import gpu_labs  # noqa: E402

MAX_VISIBLE_LINES = 120
HIDDEN = {"hide-input", "remove-input", "hide-cell", "remove-cell"}
LABS = gpu_labs.lab_paths()


def visible_code_lines(nb: nbformat.NotebookNode) -> int:
    """Non-blank lines of the code cells a reader of the page sees."""
    return sum(
        sum(1 for line in cell.source.splitlines() if line.strip())
        for cell in nb.cells
        if cell.cell_type == "code"
        and not HIDDEN & set(cell.get("metadata", {}).get("tags", []))
    )


def test_visible_code_lines_counts_only_shown_cells():
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("a = 1\n\nb = 2"),
            nbformat.v4.new_code_cell("c = 3", metadata={"tags": ["hide-input"]}),
            nbformat.v4.new_markdown_cell("text"),
        ]
    )
    assert visible_code_lines(nb) == 2


@pytest.mark.parametrize("path", LABS, ids=[p.stem for p in LABS])
def test_a_lab_shows_at_most_120_lines_of_code(path):
    nb = nbformat.read(path, as_version=4)
    assert visible_code_lines(nb) <= MAX_VISIBLE_LINES


@pytest.mark.parametrize("path", LABS, ids=[p.stem for p in LABS])
def test_a_labs_first_visible_cell_names_the_device(path):
    """The first code cell a reader sees prints the device every measurement ran on."""
    nb = nbformat.read(path, as_version=4)
    shown = [
        c
        for c in nb.cells
        if c.cell_type == "code"
        and not HIDDEN & set(c.get("metadata", {}).get("tags", []))
    ]
    assert "describe_device()" in shown[0].source
    assert "set_num_threads(\n" not in shown[0].source  # no ruff-format artefact


@pytest.mark.parametrize(
    "path", [p for p in LABS if p.stem != "lab7_kv_pool"], ids=lambda p: p.stem
)
def test_a_labs_committed_run_states_its_prediction_against_its_measurement(path):
    """Labs 1-6 print a "Predicted against measured ..." line from their run (the closing
    table of `make gpu-labs` reads it); Lab 7 prints one only where a Mooncake pool runs."""
    lines = gpu_labs.prediction_lines(nbformat.read(path, as_version=4))
    assert lines and all(" on " in line and "median |error|" in line for line in lines)
