"""Markdown tables of the published GPU measurements and of the models scored on them.

The renderers that :mod:`helpers.published` (what was collected) and
:mod:`helpers.validation` (the naive, constant-free and calibrated models'
errors) feed to ``appendix/gpu_measurements.ipynb``. No number is computed
here beyond formatting and the grouping of :func:`helpers.validation.summarize`.
"""

from __future__ import annotations

from typing import Literal

from .achievable import _fraction_table, fractions
from .formatting import format_si, markdown_table
from .published import KINDS, Kind, PublishedPoint, load
from .validation import compare, summarize, with_role

TARGET_MEDIAN = 0.15
TARGET_P90 = 0.40
MIN_POINTS = 10
"""Groups with fewer validating points are reported but not judged."""


def _percent(x: float) -> str:
    return f"{100 * x:.0f} %"


def _verdict(points: int, met: bool) -> str:
    if points < MIN_POINTS:
        return "too few points"
    return "met" if met else "missed"


def counts_markdown() -> str:
    """A Markdown table of how many points each GPU (host memory as "host") has of each kind."""
    points = load()
    gpus = sorted({p.gpu or "host" for p in points})
    rows = []
    for gpu in gpus:
        mine = [p.kind for p in points if (p.gpu or "host") == gpu]
        rows.append([gpu, *(mine.count(k) or "" for k in KINDS), len(mine)])
    totals = [sum(1 for p in points if p.kind == k) for k in KINDS]
    rows.append(["all", *totals, len(points)])
    return markdown_table(["GPU", *KINDS, "points"], rows)


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
    median: float = TARGET_MEDIAN,
    p90: float = TARGET_P90,
    by: Literal["gpu", "series"] = "gpu",
) -> str:
    """A Markdown table of the three models' absolute relative errors per GPU (or series) on ``kind``.

    Columns: points, constants fitted (one per GPU, :mod:`helpers.validation`),
    the naive roofline's, the constant-free model's and the calibrated model's
    median and 90th percentile, and whether the calibrated and the
    constant-free model meet the targets (``median``, ``p90``); groups of
    fewer than :data:`MIN_POINTS` points are reported but not judged.
    """
    if by not in ("gpu", "series"):
        raise ValueError(f"by must be 'gpu' or 'series', got {by!r}")
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
        rows.append(
            [
                name,
                g.points,
                g.constants,
                f"{_percent(g.naive_median)} / {_percent(g.naive_p90)}",
                f"{_percent(g.constant_free_median)} / {_percent(g.constant_free_p90)}",
                f"{_percent(g.second_order_median)} / {_percent(g.second_order_p90)}",
                _verdict(g.points, g.meets(median=median, p90=p90)),
                _verdict(
                    g.points, g.meets(median=median, p90=p90, model="constant_free")
                ),
            ]
        )
    return markdown_table(
        [
            "GPU" if by == "gpu" else "series",
            "points",
            "constants",
            "naive median / p90",
            "constant-free median / p90",
            "calibrated median / p90",
            "calibrated: targets",
            "constant-free: targets",
        ],
        rows,
        align="lrrrrrll",
    )


def worst_markdown(kind: Kind, *, n: int = 4) -> str:
    """A Markdown table of the ``n`` validating points of ``kind`` the calibrated model misses most."""
    valid = with_role(compare(kind), "validation")
    valid.sort(key=lambda c: -abs(c.second_order_error))
    rows = [
        [
            c.series,
            c.point.label,
            format_si(c.point.value, c.point.unit),
            format_si(c.naive, c.point.unit),
            format_si(c.constant_free, c.point.unit),
            format_si(c.second_order, c.point.unit),
            f"{100 * c.second_order_error:+.0f} %",
        ]
        for c in valid[:n]
    ]
    return markdown_table(
        [
            "series",
            "setting",
            "published",
            "naive",
            "constant-free",
            "calibrated",
            "error",
        ],
        rows,
        align="llrrrrr",
    )


def calibration_markdown() -> str:
    """A Markdown table of every calibration point (one per GPU and kind) and the constant it fixes."""
    rows = []
    for kind in KINDS:
        for c in with_role(compare(kind), "calibration"):
            rows.append(
                [
                    kind,
                    c.point.gpu or "host memory",
                    c.series,
                    c.point.label,
                    format_si(c.point.value, c.point.unit),
                    c.reason,
                ]
            )
    return markdown_table(
        ["kind", "GPU", "series", "point", "published", "fixes"],
        rows,
        align="lllllr",
    )


def fractions_markdown() -> str:
    """A Markdown table of each GPU's achievable fractions, as :func:`helpers.achievable.fractions` derives them."""
    table = _fraction_table()
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


def targets_markdown(*, median: float = TARGET_MEDIAN, p90: float = TARGET_P90) -> str:
    """A Markdown table, one row per kind: points, constants, GPUs, and both second-order models' errors and targets."""
    rows = []
    for kind in KINDS:
        comparisons = compare(kind)
        (g,) = summarize(comparisons, key=lambda c: "all")
        rows.append(
            [
                kind,
                g.points,
                g.constants,
                g.gpus,
                f"{_percent(g.naive_median)} / {_percent(g.naive_p90)}",
                f"{_percent(g.constant_free_median)} / {_percent(g.constant_free_p90)}",
                f"{_percent(g.second_order_median)} / {_percent(g.second_order_p90)}",
                _verdict(g.points, g.meets(median=median, p90=p90)),
                _verdict(
                    g.points, g.meets(median=median, p90=p90, model="constant_free")
                ),
            ]
        )
    return markdown_table(
        [
            "kind",
            "validating points",
            "constants",
            "GPUs",
            "naive median / p90",
            "constant-free median / p90",
            "calibrated median / p90",
            f"calibrated: targets ({_percent(median)}, {_percent(p90)})",
            "constant-free: targets",
        ],
        rows,
        align="lrrrrrrll",
    )


__all__ = [
    "MIN_POINTS",
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
