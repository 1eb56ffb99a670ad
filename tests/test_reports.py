"""Tests of the Markdown renderers (helpers.reports): each table agrees with the numbers it renders."""

from __future__ import annotations

import pytest

from helpers import published, reports, validation


def test_counts_table_adds_up() -> None:
    table = reports.counts_markdown()
    last = table.splitlines()[-1]
    assert last.startswith("| all |")
    assert last.rstrip(" |").split("|")[-1].strip() == str(len(published.load()))


def test_sources_table_counts_every_point() -> None:
    rows = reports.sources_markdown().splitlines()[2:]
    assert sum(int(r.rstrip(" |").split("|")[-1]) for r in rows) == len(
        published.load()
    )


def test_targets_table_agrees_with_the_summaries() -> None:
    table = reports.targets_markdown()
    for kind in published.KINDS:
        (g,) = validation.summarize(validation.compare(kind), key=lambda c: "all")
        (line,) = [row for row in table.splitlines() if row.startswith(f"| {kind} |")]
        cells = [x.strip() for x in line.strip("|").split("|")]
        assert cells[1:4] == [str(g.points), str(g.constants), str(g.gpus)]
        assert cells[-2] == ("met" if g.meets() else "missed")
        assert cells[-1] == ("met" if g.meets(model="constant_free") else "missed")
        assert cells[6] == (
            f"{100 * g.second_order_median:.0f} % / {100 * g.second_order_p90:.0f} %"
        )


def test_summary_by_gpu_has_one_row_per_gpu_and_judges_only_10_points() -> None:
    table = reports.summary_markdown("decode")
    groups = validation.summarize(
        validation.compare("decode"), key=lambda c: c.point.gpu
    )
    body = table.splitlines()[2:]
    assert len(body) == len(groups) + 1
    for g in groups:
        (line,) = [r for r in body if r.startswith(f"| {g.group} |")]
        assert ("too few points" in line) == (g.points < reports.MIN_POINTS)
    with pytest.raises(ValueError, match="by"):
        reports.summary_markdown("gemm", by="kind")  # type: ignore[arg-type]


def test_calibration_table_has_one_row_per_constant() -> None:
    rows = reports.calibration_markdown().splitlines()[2:]
    constants = sum(
        len(validation.with_role(validation.compare(k), "calibration"))
        for k in published.KINDS
    )
    assert len(rows) == constants
    assert all("per" in r for r in rows)


def test_worst_table_is_sorted_by_error() -> None:
    rows = reports.worst_markdown("gemm", n=3).splitlines()[2:]
    errors = [abs(float(r.rstrip(" |").split("|")[-1].strip(" %"))) for r in rows]
    assert len(rows) == 3 and errors == sorted(errors, reverse=True)


def test_fractions_table_rows_match_fractions() -> None:
    rows = reports.fractions_markdown().splitlines()[2:]
    (h100,) = [r for r in rows if r.startswith("| H100 SXM | 16-bit |")]
    c, m = validation.fractions("H100 SXM", "bf16")
    assert f"{100 * c:.0f} %" in h100 and f"{100 * m:.0f} %" in h100
