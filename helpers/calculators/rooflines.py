"""The calculator of the chapter ``roofline``:
rooflines of several devices and dtypes, with operations placed on them.

:func:`rooflines` builds it (controls with the chapter's defaults) around
:func:`render_rooflines`, which draws and returns a Markdown summary. Conventions are in
:mod:`helpers.calculators`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

import ipywidgets as widgets
from matplotlib.axes import Axes

from .. import formatting, hardware, ops, plots, published, roofline
from ..formatting import markdown_table
from ..widgets import Calculator
from . import _controls

__all__ = ["ROOFLINE_OPERATIONS", "render_rooflines", "rooflines", "rooflines_controls"]


ROOFLINE_OPERATIONS: Mapping[str, tuple[str, int]] = MappingProxyType(
    {
        "ReLU": ("relu", 2**24),
        "sum": ("sum", 2**24),
        "linear b=1": ("linear", 1),
        "linear b=16": ("linear", 16),
        "linear b=256": ("linear", 256),
        "matmul 256": ("matmul", 256),
        "matmul 1024": ("matmul", 1024),
        "matmul 8192": ("matmul", 8192),
    }
)
"""What :func:`render_rooflines` can place: ``label -> (kind, size)`` for ``ops.op_cost``."""


def render_rooflines(
    ax: Axes,
    accelerators: Sequence[str],
    dtypes: Sequence[str],
    operations: Sequence[str],
) -> str:
    """Chapter ``roofline``'s calculator: rooflines of ``accelerators`` x ``dtypes``, ``operations`` placed.

    Draws :func:`helpers.plots.roofline_plot`, marks the operations (labels
    of :data:`ROOFLINE_OPERATIONS`) on the first device's first roofline with
    :func:`helpers.plots.mark_ops`, and returns a Markdown table of each
    operation's attainable FLOP/s as a fraction of each drawn roofline's peak
    (``min(1, I / ridge)``; the intensity is recomputed in each dtype).
    Pairs a device lacks are skipped; ``KeyError`` if none is left.
    """
    if not accelerators or not dtypes or not operations:
        raise ValueError(
            "accelerators, dtypes and operations must each have at least one item selected"
        )
    unknown = [op for op in operations if op not in ROOFLINE_OPERATIONS]
    if unknown:
        raise KeyError(
            f"operations {unknown} are unknown; choose from {list(ROOFLINE_OPERATIONS)}"
        )
    plots.roofline_plot(accelerators, dtypes, intensity_range=(0.1, 10_000), ax=ax)
    devices = [hardware.get_accelerator(a) for a in accelerators]
    roofs = [(acc, d) for acc in devices for d in dtypes if d in acc.peak_flops]
    first_acc, first_dtype = roofs[0]
    costs = {
        op: ops.op_cost(*ROOFLINE_OPERATIONS[op], dtype=first_dtype)
        for op in operations
    }
    plots.mark_ops(
        ax, {op: c.intensity for op, c in costs.items()}, first_acc, dtype=first_dtype
    )
    rows = []
    for op, (kind, size) in ROOFLINE_OPERATIONS.items():
        if op not in operations:
            continue
        cells = []
        for acc, dtype in roofs:
            intensity = ops.op_cost(kind, size, dtype=dtype).intensity
            reach = roofline.attainable_flops(intensity, acc, dtype=dtype)
            cells.append(f"{reach / acc.flops(dtype):.1%}")
        rows.append([op, formatting.format_intensity(costs[op].intensity), *cells])
    header = [
        "operation",
        f"FLOP/byte ({first_dtype})",
        *(f"{a.name} {d}" for a, d in roofs),
    ]
    return (
        markdown_table(header, rows)
        + "\n\nEach cell: attainable FLOP/s as a fraction of that roofline's peak "
        "(100% = compute-bound)." + _mark_published_gemms(ax, roofs)
    )


def _mark_published_gemms(
    ax: Axes, roofs: Sequence[tuple[hardware.Accelerator, str]]
) -> str:
    """Draw the published single GEMMs measured on the drawn (device, dtype) roofs as crosses.

    Each sits at its matmul's intensity; returns a sentence saying how many there are and the
    largest share of its roof any of them reaches (a roofline is a bound), or ``""`` if none.
    """
    shares, xs, ys, names = [], [], [], []
    for acc, dtype in roofs:
        for p in published.load("gemm", gpu=acc.name):
            if p.precision != dtype or p.unit != "FLOP/s" or p.integer("batch") != 1:
                continue
            m, n, k = (p.integer(c) for c in "mnk")
            intensity = ops.matmul_cost(m, k, n, dtype=dtype).intensity
            xs.append(intensity)
            ys.append(p.value)
            shares.append(
                p.value / roofline.attainable_flops(intensity, acc, dtype=dtype)
            )
            names.append(f"{acc.name} {dtype}")
    if not shares:
        return ""
    label = f"published {', '.join(dict.fromkeys(names))} GEMMs (measured)"
    ax.plot(xs, ys, "kx", ms=6, ls="none", label=label)
    ax.legend(fontsize=plots.SMALL, loc="lower right")
    return (
        f"\n\nCrosses: {len(shares)} published single GEMMs measured on these roofs "
        f"(appendix of GPU measurements). The best reaches {max(shares):.0%} of its roof: "
        "the roofline bounds them, and Chapter 3 explains the gap."
    )


def rooflines_controls() -> dict[str, Any]:
    """The controls of :func:`rooflines`: one per keyword of :func:`render_rooflines`."""
    controls = {
        "accelerators": widgets.SelectMultiple(
            options=_controls.accelerator_names(),
            value=("T4", "H100 SXM"),
            description="accelerators",
            rows=6,
        ),
        "dtypes": widgets.SelectMultiple(
            options=list(hardware.DTYPE_BYTES),
            value=("fp16",),
            description="dtypes",
            rows=6,
        ),
        "operations": widgets.SelectMultiple(
            options=list(ROOFLINE_OPERATIONS),
            value=("ReLU", "linear b=1", "linear b=256", "matmul 8192"),
            description="operations",
            rows=8,
        ),
    }
    return controls


def rooflines() -> Calculator:
    """Chapter ``roofline``'s calculator (:func:`render_rooflines`); default: T4 and H100, fp16, 4 ops."""
    return Calculator(rooflines_controls(), render_rooflines)
