"""The calculator of the chapter ``two_ceilings``:
which of compute, memory and overhead binds one operation, as its size varies.

:func:`two_ceilings` builds it (controls with the chapter's defaults) around
:func:`render_two_ceilings`, which draws and returns a Markdown summary. Conventions are in
:mod:`helpers.calculators`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.axes import Axes

from .. import formatting, hardware, ops, plots, roofline
from ..formatting import format_si
from ..widgets import Calculator
from . import _controls

__all__ = [
    "OP_SIZE_LIMITS",
    "render_two_ceilings",
    "two_ceilings",
    "two_ceilings_controls",
]


OP_SIZE_LIMITS: Mapping[str, int] = MappingProxyType(
    {"relu": 2**32, "add": 2**32, "sum": 2**32, "matmul": 2**16, "linear": 2**14}
)
"""Largest ``size`` :func:`render_two_ceilings` accepts per kind of :data:`helpers.ops.OP_KINDS`."""


_REGIME_SHADES = {
    "overhead": "grey",
    "memory": "C1",
    "compute": "C0",
}  # the colours of the lines


def render_two_ceilings(
    ax: Axes, acc: str, dtype: str, op: str, size: float, overhead_us: float
) -> str:
    """Chapter ``two_ceilings``'s calculator: the compute, memory and overhead terms of ``op`` against its size.

    Draws ``F/P``, ``B/W``, the overhead ``t0`` and their total
    (:func:`helpers.ops.op_breakdown`: elementwise ops and sums on the vector
    peak, matmuls on the tensor-core peak) for sizes from 1 to
    :data:`OP_SIZE_LIMITS`, shades the regimes and marks ``size`` (rounded to
    a whole number); returns which ceiling binds there. Input errors name
    the limit: a size above ``OP_SIZE_LIMITS[op]`` (``ValueError``) or a
    dtype the device has no peak for, such as bf16 on a T4 (``KeyError``).

    Parameters
    ----------
    ax : Axes
    acc : str
        A catalog name (:func:`helpers.hardware.get_accelerator`).
    dtype : str
        Storage dtype and peak (``KeyError`` if the device has no such peak,
        on the vector units for relu, add and sum).
    op : str
        One of :data:`helpers.ops.OP_KINDS`.
    size : float
        Elements (relu, add, sum), matrix side (matmul) or batch rows
        (linear, 4096 x 4096 weights); at most ``OP_SIZE_LIMITS[op]``.
    overhead_us : float
        Fixed time per call in microseconds.
    """
    device = hardware.get_accelerator(acc)
    if op not in OP_SIZE_LIMITS:
        raise KeyError(f"op {op!r} is unknown; choose one of {list(OP_SIZE_LIMITS)}")
    limit = OP_SIZE_LIMITS[op]
    n = int(round(size))
    if n > limit:
        raise ValueError(
            f"size must be at most {limit:,} for {op} (the calculator's limit); got {n:,}"
        )
    if dtype not in device.peak_flops:
        raise KeyError(
            f"dtype {dtype!r}: the {device.name} has no {dtype} peak; choose one of "
            f"{list(device.peak_flops)}"
        )
    overhead = overhead_us * 1e-6

    def parts(s: int) -> roofline.TimeBreakdown:
        return ops.op_breakdown(op, s, device, dtype=dtype, overhead=overhead)

    chosen = parts(n)
    sizes = np.unique(np.geomspace(1, limit, 200).round().astype(int))
    terms = [parts(int(s)) for s in sizes]
    ax.loglog(sizes, [t.compute_s for t in terms], label="compute  $F/P$")
    ax.loglog(sizes, [t.memory_s for t in terms], label="memory  $B/W$")
    ax.loglog(
        sizes,
        [t.overhead_s for t in terms],
        "--",
        color="grey",
        label="overhead  $t_0$",
    )
    ax.loglog(
        sizes,
        [t.seconds for t in terms],
        color="black",
        lw=2.5,
        alpha=0.35,
        label="total",
    )
    changes = [i for i in range(1, len(terms)) if terms[i].bound != terms[i - 1].bound]
    edges = [0, *changes, len(terms)]
    for start, stop in zip(edges[:-1], edges[1:]):
        lo, hi = sizes[start], sizes[min(stop, len(sizes) - 1)]
        ax.axvspan(lo, hi, color=_REGIME_SHADES[terms[start].bound], alpha=0.08, lw=0)
        if hi / lo > 30:
            ax.text(
                np.sqrt(lo * hi),
                0.97,
                f"{terms[start].bound}-bound",
                transform=ax.get_xaxis_transform(),
                ha="center",
                va="top",
                fontsize=9,
                color="dimgrey",
            )
    ax.set_ylim(bottom=max(1e-10, min(t.compute_s for t in terms)))
    ax.plot([n], [chosen.seconds], "ko", ms=7)
    ax.annotate(
        f"size {n:,}",
        (n, chosen.seconds),
        textcoords="offset points",
        xytext=(-10, 8),
        ha="right",
    )
    ax.set_xlabel(
        {"matmul": "matrix side n", "linear": "batch (rows)"}.get(op, "elements")
    )
    ax.set_ylabel("time per call (s)")
    ax.set_title(f"{op} in {dtype} on {device.name}")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=plots.SMALL)
    cost = ops.op_cost(op, n, dtype=dtype)
    roof = ops.op_roof(op)
    tensor_units = "FP32 units" if dtype == "fp32" else "tensor cores"
    units = tensor_units if roof == "tensor" else "vector units"
    ridge = roofline.ridge_point(device, dtype=dtype, roof=roof)
    return (
        f"**{op}, size {n:,}, {dtype} on {device.name}**. "
        f"It does {format_si(cost.flops, 'FLOP')} and moves {format_si(cost.bytes, 'B')}: "
        f"intensity {formatting.format_intensity(cost.intensity)} FLOP/byte, against a ridge of "
        f"{ridge:,.0f} on the {units} it runs on.  \n"
        f"Compute {format_si(chosen.compute_s, 's')} · memory {format_si(chosen.memory_s, 's')} · "
        f"overhead {format_si(chosen.overhead_s, 's')} → "
        f"**{format_si(chosen.seconds, 's')}, {chosen.bound}-bound**."
    )


def two_ceilings_controls() -> dict[str, Any]:
    """The controls of :func:`two_ceilings`: one per keyword of :func:`render_two_ceilings`."""
    controls = {
        "acc": _controls.accelerator("T4"),
        "dtype": _controls.dtype("fp16", options=list(hardware.DTYPE_BYTES)),
        "op": widgets.Dropdown(
            options=list(ops.OP_KINDS), value="relu", description="operation"
        ),
        "size": widgets.FloatLogSlider(
            value=2**24, base=2, min=0, max=32, step=1, description="size"
        ),
        "overhead_us": _controls.overhead_us(max_exponent=2),
    }
    return controls


def two_ceilings() -> Calculator:
    """Chapter ``two_ceilings``'s calculator (:func:`render_two_ceilings`); default: an fp16 ReLU on a T4."""
    return Calculator(two_ceilings_controls(), render_two_ceilings)
