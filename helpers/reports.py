"""Markdown tables of the published GPU measurements and of the models scored on them.

The renderers that :mod:`helpers.published` (what was collected) and
:mod:`helpers.validation` (the naive, constant-free and calibrated models'
errors) feed to ``appendix/gpu_measurements.ipynb``. No number is computed
here beyond formatting and the grouping of :func:`helpers.validation.summarize`.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Literal

import numpy as np

from .achievable import fraction_table, fractions
from .formatting import format_si, markdown_table
from .published import KINDS, Kind, PublishedPoint, load
from .validation import compare, summarize, with_role

TARGET_MEDIAN = 0.15
TARGET_P90 = 0.40
MIN_POINTS = 10
"""Groups with fewer validating points are reported but not judged."""

KIND_TARGETS: Mapping[str, tuple[float, float]] = MappingProxyType(
    {"serving": (0.12, 0.30), "ttft": (0.15, 0.35), "attention": (0.20, 0.40)}
)
"""(median, p90) of the absolute error each engine kind is judged by (issue #35); other kinds
use ``TARGET_MEDIAN`` and ``TARGET_P90``."""

SERVING_SIGNED_TARGET = 0.08
"""The serving kind's signed median error must also lie within this (issue #35): no systematic lean."""


def targets(kind: Kind) -> tuple[float, float]:
    """The (median, p90) targets ``kind`` is judged by."""
    return KIND_TARGETS.get(kind, (TARGET_MEDIAN, TARGET_P90))


def _percent(x: float) -> str:
    return "—" if math.isnan(x) else f"{100 * x:.0f} %"


def _signed(x: float) -> str:
    return "—" if math.isnan(x) else f"{100 * x:+.0f} %"


def _errors(median: float, p90: float, signed: float | None = None) -> str:
    out = f"{_percent(median)} / {_percent(p90)}"
    return out if signed is None else f"{out} / {_signed(signed)}"


def _verdict(points: int, met: bool) -> str:
    if points < MIN_POINTS:
        return "too few points"
    return "met" if met else "missed"


def counts_markdown() -> str:
    """A Markdown table of each GPU's (host memory's as "host") points: how many, and of which kinds.

    Three columns, so that it fits a phone: the kinds are listed in one cell
    ("gemm 25 · decode 12") rather than one column each.
    """
    points = load()
    gpus = sorted({p.gpu or "host" for p in points})
    rows = []
    for gpu in gpus:
        mine = [p.kind for p in points if (p.gpu or "host") == gpu]
        kinds = " · ".join(f"{k} {mine.count(k)}" for k in KINDS if k in mine)
        rows.append([gpu, len(mine), kinds])
    totals = " · ".join(f"{k} {sum(1 for p in points if p.kind == k)}" for k in KINDS)
    rows.append(["all", len(points), totals])
    return markdown_table(["GPU", "points", "kinds"], rows, align="lrl")


def sources_markdown() -> str:
    """A Markdown table of every source file or page: a link, the kinds and GPUs it gives, and its points."""
    by_source: dict[str, list[PublishedPoint]] = {}
    for p in load():
        by_source.setdefault(p.source.split("#")[0], []).append(p)
    rows = []
    for url, points in sorted(by_source.items(), key=lambda item: -len(item[1])):
        if url.startswith("https://github.com/"):
            parts = url.split("/")
            repo, path = (
                "/".join(parts[3:5]),
                "/".join(parts[7:]) or "/".join(parts[5:]),
            )
            name = f"{repo}: {path}"
        else:
            name = url.removeprefix("https://")
        kinds = ", ".join(sorted({p.kind for p in points}))
        gpus = ", ".join(sorted({p.gpu or "host" for p in points}))
        rows.append([f"[{name}]({url})", kinds, gpus, len(points)])
    return markdown_table(["source", "kind", "GPUs", "points"], rows, align="lllr")


def summary_markdown(
    kind: Kind,
    *,
    median: float | None = None,
    p90: float | None = None,
    by: Literal["gpu", "series"] = "gpu",
) -> str:
    """A Markdown table of the three models' absolute relative errors per GPU (or series) on ``kind``.

    Columns: validating points and constants fitted (one per GPU,
    :mod:`helpers.validation`), the naive roofline's, the constant-free
    model's and the calibrated model's median / 90th percentile, and whether
    each second-order model meets the targets (``median``, ``p90``; by default
    the kind's, :func:`targets`); groups of fewer than :data:`MIN_POINTS`
    points are reported but not judged. A dash: the kind has no naive model.
    """
    if by not in ("gpu", "series"):
        raise ValueError(f"by must be 'gpu' or 'series', got {by!r}")
    default_median, default_p90 = targets(kind)
    median = default_median if median is None else median
    p90 = default_p90 if p90 is None else p90
    comparisons = compare(kind)
    groups = summarize(
        comparisons,
        key=(lambda c: c.point.gpu or "host memory")
        if by == "gpu"
        else (lambda c: c.series),
    )
    groups.sort(key=lambda g: -g.points)
    groups += summarize(comparisons, key=lambda c: "all")
    rows = []
    for g in groups:
        name = f"**{g.group}**" if g.group == "all" else g.group
        free = _verdict(
            g.points, g.meets(median=median, p90=p90, model="constant_free")
        )
        calibrated = _verdict(g.points, g.meets(median=median, p90=p90))
        rows.append(
            [
                name,
                f"{g.points} · {g.constants}",
                _errors(g.naive_median, g.naive_p90),
                _errors(g.constant_free_median, g.constant_free_p90),
                _errors(g.second_order_median, g.second_order_p90),
                f"{free} · {calibrated}",
            ]
        )
    return markdown_table(
        [
            "GPU" if by == "gpu" else "series",
            "points · constants",
            "naive",
            "constant-free",
            "calibrated",
            "targets: free · calibrated",
        ],
        rows,
        align="lrrrrl",
    )


def worst_markdown(kind: Kind, *, n: int = 4) -> str:
    """A Markdown table of the ``n`` validating points of ``kind`` the calibrated model misses most.

    Five columns (R4-7): the series, the setting, the published value, the
    three predictions in one cell (naive · constant-free · calibrated; a dash
    where the kind has no naive model) and the calibrated model's error.
    """
    valid = with_role(compare(kind), "validation")
    valid.sort(key=lambda c: -abs(c.second_order_error))
    rows = [
        [
            c.series,
            c.point.label,
            format_si(c.point.value, c.point.unit),
            " · ".join(
                "—" if math.isnan(v) else format_si(v, c.point.unit)
                for v in (c.naive, c.constant_free, c.second_order)
            ),
            f"{100 * c.second_order_error:+.0f} %",
        ]
        for c in valid[:n]
    ]
    return markdown_table(
        [
            "series",
            "setting",
            "published",
            "naive · constant-free · calibrated",
            "error",
        ],
        rows,
        align="llrrr",
    )


def calibration_markdown() -> str:
    """A Markdown table of every calibration point (one per GPU and kind) and the constant it fixes.

    Four columns (R4-7): kind and GPU, the point (its series and setting), the
    published value and the constant.
    """
    rows = []
    for kind in KINDS:
        for c in with_role(compare(kind), "calibration"):
            rows.append(
                [
                    f"{kind} · {c.point.gpu or 'host memory'}",
                    f"{c.series.split(' · ', 1)[-1]}: {c.point.label}",
                    format_si(c.point.value, c.point.unit),
                    c.reason,
                ]
            )
    return markdown_table(
        ["kind · GPU", "point", "published", "fixes"], rows, align="llrr"
    )


def fractions_markdown() -> str:
    """A Markdown table of each GPU's achievable fractions, as :func:`helpers.achievable.fractions` derives them."""
    table = fraction_table()
    rows = []
    for gpu in sorted({g for g, _, _ in table}):
        for dtype in sorted(
            {d for g, q, d in table if g == gpu and q == "matmul_flops"}
        ):
            c, m = fractions(gpu, dtype)
            rows.append([gpu, dtype, _percent(c), _percent(m)])
    return markdown_table(
        ["GPU", "matmul precision", "matmul share of peak", "bandwidth share of peak"],
        rows,
    )


def targets_markdown(*, median: float | None = None, p90: float | None = None) -> str:
    """A Markdown table, one row per kind: points, constants and GPUs, both second-order models' errors, verdicts.

    Errors are median / 90th percentile of the absolute error / median of the
    signed error. Each kind is judged by its own targets (:func:`targets`)
    unless ``median`` and ``p90`` are given.
    """
    rows = []
    for kind in KINDS:
        comparisons = compare(kind)
        (g,) = summarize(comparisons, key=lambda c: "all")
        m, q = targets(kind)
        m = m if median is None else median
        q = q if p90 is None else p90
        free = _verdict(g.points, g.meets(median=m, p90=q, model="constant_free"))
        calibrated = _verdict(g.points, g.meets(median=m, p90=q))
        rows.append(
            [
                f"{kind} ({_percent(m)}, {_percent(q)})",
                f"{g.points} · {g.constants} · {g.gpus}",
                _errors(
                    g.constant_free_median, g.constant_free_p90, g.constant_free_signed
                ),
                _errors(
                    g.second_order_median, g.second_order_p90, g.second_order_signed
                ),
                f"{free} · {calibrated}",
            ]
        )
    return markdown_table(
        [
            "kind (targets)",
            "points · constants · GPUs",
            "constant-free",
            "calibrated",
            "targets: free · calibrated",
        ],
        rows,
        align="lrrrl",
    )


def by_gpu_markdown(*, kinds: tuple[Kind, ...] = KINDS) -> str:
    """A Markdown table, one row per kind and GPU: points and constants, both models' median / p90 / signed error."""
    rows = []
    for kind in kinds:
        groups = summarize(compare(kind), key=lambda c: c.point.gpu or "host memory")
        for g in sorted(groups, key=lambda g: -g.points):
            rows.append(
                [
                    f"{kind} · {g.group}",
                    f"{g.points} · {g.constants}",
                    _errors(
                        g.constant_free_median,
                        g.constant_free_p90,
                        g.constant_free_signed,
                    ),
                    _errors(
                        g.second_order_median, g.second_order_p90, g.second_order_signed
                    ),
                ]
            )
    return markdown_table(
        ["kind · GPU", "points · constants", "constant-free", "calibrated"],
        rows,
        align="lrrr",
    )


SCOREBOARD = Path(__file__).parent / "data" / "published" / "scoreboard.csv"
"""The committed scoreboard (``make scoreboard``, ``tools/scoreboard.py``)."""

TOOLS = ("book", "aiconfigurator", "mlsysim")
"""The scoreboard's columns of predictions: the book's constant-free model and the two other tools."""


def scoreboard_rows() -> list[dict[str, str]]:
    """The committed scoreboard's rows (one per published point of the engine kinds)."""
    with SCOREBOARD.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _tool_errors(rows: list[dict[str, str]], tool: str) -> list[float]:
    return [
        float(r[tool]) / float(r["published"]) - 1
        for r in rows
        if r["book_role"] == "validation" and r[tool]
    ]


def scoreboard_markdown() -> str:
    """A Markdown table, one row per kind and tool: points covered of the book's validating ones, errors.

    Errors as everywhere on the page: median / 90th percentile of the
    absolute relative error / median of the signed one, over the points the
    tool covers (so a tool that covers few points is judged on those few).
    """
    rows = scoreboard_rows()
    out = []
    for kind in ("serving", "ttft", "attention"):
        mine = [r for r in rows if r["kind"] == kind]
        valid = [r for r in mine if r["book_role"] == "validation"]
        for tool in TOOLS:
            errors = np.array(_tool_errors(mine, tool))
            if errors.size:
                cell = _errors(
                    float(np.median(np.abs(errors))),
                    float(np.percentile(np.abs(errors), 90)),
                    float(np.median(errors)),
                )
            else:
                cell = "—"
            out.append([f"{kind} · {tool}", f"{errors.size} of {len(valid)}", cell])
    return markdown_table(
        ["kind · tool", "points covered", "median / p90 / signed"], out, align="lrr"
    )


def scoreboard_versions() -> str:
    """The tools' versions as the committed scoreboard records them (one line)."""
    versions = sorted({r["versions"] for r in scoreboard_rows() if r["versions"]})
    return " | ".join(versions) if versions else "the tools have not been run"


def scoreboard_worst_markdown(tool: str, *, n: int = 3) -> str:
    """A Markdown table of the ``n`` validating points ``tool`` misses most, beside the book's prediction."""
    if tool not in TOOLS:
        raise ValueError(f"tool must be one of {TOOLS}, got {tool!r}")
    rows = [r for r in scoreboard_rows() if r["book_role"] == "validation" and r[tool]]
    rows.sort(key=lambda r: -abs(float(r[tool]) / float(r["published"]) - 1))
    table = [
        [
            f"{r['kind']} · {r['gpu']}",
            r["label"],
            format_si(float(r["published"]), r["unit"]),
            f"{100 * (float(r[tool]) / float(r['published']) - 1):+.0f} %",
            f"{100 * (float(r['book']) / float(r['published']) - 1):+.0f} %"
            if r["book"]
            else "—",
        ]
        for r in rows[:n]
    ]
    return markdown_table(
        ["kind · GPU", "setting", "published", tool, "book"], table, align="llrrr"
    )


__all__ = [
    "KIND_TARGETS",
    "SCOREBOARD",
    "TOOLS",
    "scoreboard_markdown",
    "scoreboard_rows",
    "scoreboard_versions",
    "scoreboard_worst_markdown",
    "MIN_POINTS",
    "SERVING_SIGNED_TARGET",
    "by_gpu_markdown",
    "targets",
    "TARGET_MEDIAN",
    "TARGET_P90",
    "calibration_markdown",
    "counts_markdown",
    "fractions_markdown",
    "sources_markdown",
    "summary_markdown",
    "targets_markdown",
    "worst_markdown",
]
