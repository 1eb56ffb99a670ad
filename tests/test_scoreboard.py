"""The committed scoreboard (helpers/data/published/scoreboard.csv, ``make scoreboard``).

Its book column must be the current model's prediction: when the engine or a kind changes, this
test fails until someone re-runs ``make scoreboard`` (or ``make scoreboard-book``, which refreshes
that column alone in seconds). The tools' columns hold a positive prediction or say why not.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from helpers import published, reports, validation

ROOT = Path(__file__).resolve().parents[1]


def _rows():
    return reports.scoreboard_rows()


def test_one_row_per_point_of_the_engine_kinds():
    rows = _rows()
    keys = {(r["kind"], r["source_url"], r["source_locator"]) for r in rows}
    expected = {
        (k, p.source, p.locator)
        for k in ("serving", "ttft", "attention")
        for p in published.load(k)  # type: ignore[arg-type]
    }
    assert keys == expected and len(rows) == len(expected)


def test_the_book_column_is_the_current_models_prediction():
    """Re-run ``make scoreboard-book`` if this fails: the model changed since the file was written."""
    current = {
        (k, c.point.source, c.point.locator): c
        for k in ("serving", "ttft", "attention")
        for c in validation.compare(k)  # type: ignore[arg-type]
    }
    for r in _rows():
        c = current[(r["kind"], r["source_url"], r["source_locator"])]
        assert r["book_role"] == c.role, r["label"]
        if math.isnan(c.constant_free):
            assert r["book"] == ""
        else:
            assert float(r["book"]) == pytest.approx(c.constant_free, rel=1e-6), r[
                "label"
            ]
        assert float(r["published"]) == pytest.approx(c.point.value, rel=1e-6)


def test_tool_cells_hold_a_prediction_or_the_reason_for_none():
    pins = dict(
        line.split("==")
        for line in (ROOT / "requirements-scoreboard.txt").read_text().splitlines()
        if "==" in line and not line.startswith("#")
    )
    assert set(pins) == {"aiconfigurator", "mlsysim"}
    for r in _rows():
        for tool in ("aiconfigurator", "mlsysim"):
            if r[tool]:
                assert float(r[tool]) > 0
                assert r["book_role"] == "validation"
            else:
                assert (
                    re.match(r"not (covered|run)", r[f"{tool}_note"])
                    or not r["versions"]
                )
        if r["versions"]:
            for name, version in pins.items():
                assert f"{name} {version}" in r["versions"]


def test_scoreboard_table_counts_what_each_tool_covers():
    table = reports.scoreboard_markdown()
    rows = _rows()
    valid = [
        r for r in rows if r["kind"] == "serving" and r["book_role"] == "validation"
    ]
    for tool in reports.TOOLS:
        covered = sum(1 for r in valid if r[tool])
        assert f"| serving · {tool} | {covered} of {len(valid)} |" in table
    with pytest.raises(ValueError, match="tool"):
        reports.scoreboard_worst_markdown("vllm")


def test_the_makefile_target_keeps_the_tools_out_of_the_book_venv():
    make = (ROOT / "Makefile").read_text()
    target = make[make.index("SCOREBOARD_VENV := .venv-scoreboard") :]
    assert (
        "$(SCOREBOARD_VENV)/bin/python -m pip install -q -r requirements-scoreboard.txt"
        in target
    )
    assert "$(SCOREBOARD_VENV)/bin/python tools/scoreboard.py tools" in target
    assert "$(BIN)/python -m pip install -q -r requirements-scoreboard.txt" not in make
    book = make[make.index("$(BOOK_STAMP):") : make.index("book-setup:")]
    assert "scoreboard" not in book
