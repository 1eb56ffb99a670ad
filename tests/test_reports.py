"""Tests of the Markdown renderers (helpers.reports): each table agrees with the numbers it renders."""

from __future__ import annotations

import pytest

from helpers import published, reports, validation


def test_counts_table_adds_up() -> None:
    """Three columns (R4-7: a phone shows them whole); each row's kinds add up to its points."""
    table = reports.counts_markdown()
    lines = table.splitlines()
    assert lines[0].count("|") == 4
    last = lines[-1]
    assert last.startswith("| all |")
    cells = [c.strip() for c in last.strip("|").split("|")]
    assert cells[1] == str(len(published.load()))
    for line in lines[2:]:
        _, points, kinds = (c.strip() for c in line.strip("|").split("|"))
        assert sum(int(k.rsplit(" ", 1)[1]) for k in kinds.split(" · ")) == int(points)


def test_sources_table_counts_every_point() -> None:
    rows = reports.sources_markdown().splitlines()[2:]
    assert sum(int(r.rstrip(" |").split("|")[-1]) for r in rows) == len(
        published.load()
    )


def test_targets_table_agrees_with_the_summaries() -> None:
    """One row per kind, judged by the kind's own targets; errors as median / p90 / signed median."""
    table = reports.targets_markdown()
    for kind in published.KINDS:
        (g,) = validation.summarize(validation.compare(kind), key=lambda c: "all")
        median, p90 = reports.targets(kind)
        (line,) = [row for row in table.splitlines() if row.startswith(f"| {kind} (")]
        cells = [x.strip() for x in line.strip("|").split("|")]
        assert cells[1] == f"{g.points} · {g.constants} · {g.gpus}"
        free = (
            "met"
            if g.meets(median=median, p90=p90, model="constant_free")
            else "missed"
        )
        calibrated = "met" if g.meets(median=median, p90=p90) else "missed"
        if g.points < reports.MIN_POINTS:
            free = calibrated = "too few points"
        assert cells[-1] == f"{free} · {calibrated}"
        assert cells[3].startswith(
            f"{100 * g.second_order_median:.0f} % / {100 * g.second_order_p90:.0f} % / "
        )
    assert reports.targets("serving") == (0.12, 0.30)
    assert reports.targets("gemm") == (reports.TARGET_MEDIAN, reports.TARGET_P90)


def test_by_gpu_table_has_one_row_per_kind_and_gpu() -> None:
    table = reports.by_gpu_markdown(kinds=("ttft", "attention"))
    rows = table.splitlines()[2:]
    groups = [
        g
        for k in ("ttft", "attention")
        for g in validation.summarize(validation.compare(k), key=lambda c: c.point.gpu)
    ]
    assert len(rows) == len(groups)
    assert any(r.startswith("| attention · RTX 4090 |") for r in rows)


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
