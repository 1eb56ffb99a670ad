"""Chapter ``below_roofline``'s calculator: a square matmul's time, term by term, against its size,
beside published measurements.

Same pattern as the other calculators: :func:`render_matmul_terms` draws and
returns a Markdown summary (and raises ``ValueError``/``KeyError`` naming a bad
input), :func:`matmul_terms` wires it to ipywidgets controls. Every number comes
from the model modules: the roofline (:func:`helpers.roofline.roofline_time`),
the achievable ceilings (:func:`helpers.achievable.achievable_device`), tiles,
waves and split-K (:func:`helpers.ops.gemm_time`), the GPU's floor per kernel
(:func:`helpers.dispatch.kernel_floor`) and a fixed cost per call in the published benchmark
fitted once per GPU on a point of another series
(:func:`helpers.validation.calibrated_constant`); the published points are
:func:`helpers.published.load`'s square GEMMs of that GPU and precision.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets
import matplotlib.ticker as mticker
import numpy as np
from matplotlib.axes import Axes

from .. import (
    _args,
    achievable,
    dispatch,
    hardware,
    ops,
    plots,
    published,
    roofline,
    validation,
)
from ..formatting import format_si, markdown_table
from ..widgets import Calculator
from . import _controls

__all__ = [
    "TERMS",
    "matmul_terms_s",
    "render_matmul_terms",
    "matmul_terms_controls",
    "matmul_terms",
]


DTYPES = ("fp16", "bf16", "fp8")
"""The matmul dtypes the calculator offers."""

TERMS: tuple[str, ...] = (
    "roofline",
    "+ achievable peaks, tiles",
    "+ GPU floor",
    "+ fixed cost per call",
)


def matmul_terms_s(n: int, acc: str | hardware.Accelerator, dtype: str) -> list[float]:
    """Seconds of an ``n``-cube ``dtype`` matmul with each term of Chapter ``below_roofline`` added in turn.

    The four values are ``TERMS``: the datasheet roofline of the
    product with a ``dtype`` result (Chapter ``roofline``'s); then, with an fp32 result as
    the published cuBLAS runs write it, the
    achievable ceilings with tiles, waves and split-K; plus the GPU's floor
    per kernel; plus a fixed cost per call in the published benchmark (0 for a GPU with no
    published GEMM to fix it on). Raises ``KeyError`` for a device without
    ``dtype`` or without a published SM count.

    Examples
    --------
    >>> [round(t * 1e6, 2) for t in matmul_terms_s(1024, "H100", "fp16")]
    [2.17, 2.79, 4.63, 11.49]
    """
    n = _args.positive_int("n", n)
    device = hardware.get_accelerator(acc)
    if dtype not in device.peak_flops:
        raise KeyError(f"dtype: {device.name} has no {dtype!r} peak")
    cost = ops.matmul_cost(n, n, n, dtype=dtype)
    roof = roofline.roofline_time(cost.flops, cost.bytes, device, dtype=dtype)
    real = achievable.achievable_device(device, dtype)
    tiled = ops.gemm_time(n, n, n, real, dtype=dtype, out_dtype="fp32")
    floor = tiled + dispatch.kernel_floor(device)
    return [
        roof,
        tiled,
        floor,
        floor + validation.calibrated_constant("gemm", device.name),
    ]


def _published_squares(
    device: hardware.Accelerator, dtype: str
) -> list[tuple[int, float]]:
    """(n, FLOP/s) of the published single square GEMMs of ``device`` in ``dtype``."""
    found = []
    for p in published.load("gemm", gpu=device.name):
        m, n, k = (p.integer(c) for c in "mnk")
        if (
            p.precision == dtype
            and m == n == k
            and p.integer("batch") == 1
            and p.unit == "FLOP/s"
        ):
            found.append((n, p.value))
    return sorted(found)


def render_matmul_terms(ax: Axes, acc: str, dtype: str, n: int) -> str:
    """Throughput of square ``dtype`` matmuls on ``acc`` against their size, one curve per term; summary at ``n``."""
    device = hardware.get_accelerator(acc)
    chosen = matmul_terms_s(n, device, dtype)
    sizes = np.unique(np.geomspace(128, 16384, 40).astype(int))
    curves = np.array([matmul_terms_s(int(s), device, dtype) for s in sizes])
    flops = 2.0 * sizes.astype(float) ** 3
    for i, (label, style, marker) in enumerate(
        zip(TERMS, ("-", "--", "-.", ":"), ("o", "s", "^", "D"))
    ):
        ax.loglog(
            sizes,
            flops / curves[:, i] / 1e12,
            ls=style,
            marker=marker,
            markevery=(i, 6),
            ms=4,
            label=label,
        )
    points = _published_squares(device, dtype)
    if points:
        ax.loglog(
            [p[0] for p in points],
            [p[1] / 1e12 for p in points],
            "k*",
            ls="none",
            ms=9,
            label="published (any library)",
        )
    ax.axvline(n, color="0.5", lw=0.8)
    ax.set_xlabel("matmul size n (an n × n × n product)")
    ax.set_ylabel(f"{dtype} throughput (TFLOP/s)")
    plots.plain_log_ticks(ax)
    ticks = [128, 256, 512, 1024, 2048, 4096, 8192, 16384]
    ax.set_xticks(ticks, [f"{t:,}" for t in ticks])
    ax.xaxis.set_minor_formatter(mticker.NullFormatter())
    ax.legend(loc="lower right", fontsize=plots.SMALL)
    rows = [[label, format_si(t, "s")] for label, t in zip(TERMS, chosen)]
    text = markdown_table([f"{n:,}³ {dtype} on the {device.name}", "time"], rows)
    if not points:
        text += (
            "\n\nNo published square GEMM of this GPU and precision to compare with."
        )
    if validation.calibrated_constant("gemm", device.name) == 0.0:
        text += "\n\nThe fixed cost per call is 0 here: no published GEMM of this GPU fixes it."
    return text


def matmul_terms_controls() -> dict[str, Any]:
    """The controls with chapter ``below_roofline``'s defaults: fp16 on an H100, a 1,024-cube."""
    return {
        "acc": _controls.accelerator("H100 SXM", description="GPU"),
        "dtype": _controls.dtype("fp16", options=DTYPES),
        "n": widgets.BoundedIntText(
            value=1024, min=1, max=65_536, description="size n"
        ),
    }


def matmul_terms() -> Calculator:
    """Chapter ``below_roofline``'s calculator (see :func:`render_matmul_terms`)."""
    return Calculator(matmul_terms_controls(), render_matmul_terms)
