"""The calculator of the chapter ``batching``:
step time, throughput and regime of a linear layer or MLP against the batch.

:func:`batched_layer` builds it (controls with the chapter's defaults) around
:func:`render_batched_layer`, which draws and returns a Markdown summary. Conventions are in
:mod:`helpers.calculators`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.axes import Axes

from .. import achievable, batching, hardware, ops, plots, roofline
from ..formatting import format_si
from ..widgets import Calculator
from . import _controls

__all__ = [
    "LAYER_SHAPES",
    "WEIGHT_FORMATS",
    "batched_layer",
    "batched_layer_controls",
    "render_batched_layer",
]


LAYER_SHAPES: Mapping[str, bool | None] = MappingProxyType(
    {"linear layer": None, "MLP": False, "gated MLP (SwiGLU)": True}
)
"""Shapes :func:`render_batched_layer` knows: ``None`` a linear layer, else an MLP's ``gated``."""


WEIGHT_FORMATS = ("same as compute", "fp16", "int8", "fp8")
"""Weight storage formats of chapter ``batching``'s calculator (``"same as compute"``: the compute dtype)."""


def render_batched_layer(
    ax: Axes,
    acc: str,
    dtype: str,
    weights: str,
    shape: str,
    width_1: int,
    width_2: int,
    batch: int,
    overhead_us: float,
) -> str:
    """Chapter ``batching``'s calculator: step time and throughput of a layer against the batch, by regime.

    A linear layer ``width_1 -> width_2`` (:func:`helpers.batching.linear_sweep`)
    or an MLP with ``d_model = width_1`` and ``d_ff = width_2``
    (:func:`helpers.batching.mlp_sweep`, the overhead charged once per step),
    swept over batches 1 to 65,536 and ``batch``, drawn with
    :func:`helpers.plots.draw_sweep`; the predicted knee is the critical batch
    (:func:`helpers.ops.critical_batch_size` or
    :func:`helpers.roofline.crossing_batch` of :func:`helpers.ops.mlp_cost`).

    Two models, labelled as such: the *first-order bound* on the datasheet
    ceilings, and the *second-order prediction*, the same sweep on the
    ceilings published measurements reach on that GPU
    (:func:`helpers.achievable.achievable_device`, the fractions of
    ``appendix/gpu_measurements``), drawn dotted. Input errors: a dtype the
    device lacks (``KeyError``), a width or batch below 1 (``ValueError``).

    Parameters
    ----------
    weights : str
        One of :data:`WEIGHT_FORMATS`: the weights' dtype.
    shape : str
        One of :data:`LAYER_SHAPES`.
    width_1, width_2 : int
        ``d_in, d_out`` of a linear layer; ``d_model, d_ff`` of an MLP.
    batch : int
        The batch to report (and mark).
    overhead_us : float
        Fixed time per step in microseconds.
    """
    if weights not in WEIGHT_FORMATS:
        raise KeyError(
            f"weights {weights!r} is unknown; choose one of {list(WEIGHT_FORMATS)}"
        )
    if shape not in LAYER_SHAPES:
        raise KeyError(
            f"shape {shape!r} is unknown; choose one of {list(LAYER_SHAPES)}"
        )
    wdtype = None if weights == "same as compute" else weights
    overhead = overhead_us * 1e-6
    grid = np.unique(np.r_[np.geomspace(1, 65536, 160).round(), batch].astype(int))
    gated = LAYER_SHAPES[shape]
    device = hardware.get_accelerator(acc)
    measured = achievable.achievable_device(device, dtype)
    first, knee = _layer_sweep(
        device, grid, dtype, wdtype, gated, width_1, width_2, overhead
    )
    second, knee_2 = _layer_sweep(
        measured, grid, dtype, wdtype, gated, width_1, width_2, overhead
    )
    twin = plots.draw_sweep(ax, first, knee=knee, mark=batch)
    for line in ax.get_lines():
        if line.get_label() == "step time":
            line.set_label("step time, first-order bound")
    ax.loglog(
        first.batch,
        second.seconds,
        color="C0",
        ls=":",
        lw=2,
        label="step time, second-order (measured ceilings)",
    )
    handles, labels = ax.get_legend_handles_labels()
    more, more_labels = twin.get_legend_handles_labels()
    twin.legend(  # below the axes, off the data
        handles + more,
        labels + more_labels,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.16),
        ncol=3,
        fontsize=plots.SMALL,
        frameon=False,
    )
    i = int(np.flatnonzero(first.batch == batch)[0])
    compute_share, memory_share = achievable.fractions(device, dtype)

    def knee_text(k: float) -> str:
        return "never (too narrow)" if not np.isfinite(k) else f"batch {k:,.0f}"

    return (
        f"**{shape}, {width_1} × {width_2}, {dtype} compute, {wdtype or dtype} weights, "
        f"{device.name}, batch {batch:,}**.  \n"
        f"*First-order bound* (datasheet ceilings, plus the assumed overhead): step "
        f"**{format_si(first.seconds[i], 's')}**, **{first.throughput[i]:,.0f} tokens/s**, "
        f"{first.bound[i]}-bound; knee {knee_text(knee)}.  \n"
        f"*Second-order prediction* (measured ceilings): "
        f"step **{format_si(second.seconds[i], 's')}**, "
        f"**{second.throughput[i]:,.0f} tokens/s**, {second.bound[i]}-bound; "
        f"knee {knee_text(knee_2)}. Its ceilings are those published measurements reach on this "
        f"GPU: {compute_share:.0%} of the compute peak and {memory_share:.0%} of the bandwidth.  \n"
        f"First-order terms: compute {format_si(first.compute_s[i], 's')}, "
        f"memory {format_si(first.memory_s[i], 's')}, overhead {format_si(overhead, 's')}."
    )


def _layer_sweep(
    device: hardware.Accelerator,
    grid: np.ndarray,
    dtype: str,
    wdtype: str | None,
    gated: bool | None,
    width_1: int,
    width_2: int,
    overhead: float,
) -> tuple[batching.BatchSweep, float]:
    """The sweep of :func:`render_batched_layer` on ``device``, and its critical batch."""
    opts: dict[str, Any] = {"dtype": dtype, "weight_dtype": wdtype}
    if gated is None:
        sweep = batching.linear_sweep(
            grid, width_1, width_2, device, overhead=overhead, **opts
        )
        return sweep, ops.critical_batch_size(
            device, d_in=width_1, d_out=width_2, **opts
        )
    sweep = batching.mlp_sweep(
        grid, width_1, width_2, device, gated=gated, overhead=overhead, **opts
    )
    cost = lambda b: ops.mlp_cost(b, width_1, width_2, gated=gated, **opts)  # noqa: E731
    return sweep, roofline.crossing_batch(cost, device, dtype=dtype)


def batched_layer_controls() -> dict[str, Any]:
    """The controls of :func:`batched_layer`: one per keyword of :func:`render_batched_layer`."""
    return {
        "acc": _controls.accelerator("A100 SXM4 80GB"),
        "dtype": widgets.Dropdown(
            options=list(hardware.DTYPE_BYTES), value="fp16", description="compute"
        ),
        "weights": widgets.Dropdown(
            options=list(WEIGHT_FORMATS), value="same as compute", description="weights"
        ),
        "shape": widgets.Dropdown(
            options=list(LAYER_SHAPES), value="gated MLP (SwiGLU)", description="shape"
        ),
        "width_1": widgets.IntText(value=4096, description="d_in / d_model"),
        "width_2": widgets.IntText(value=11008, description="d_out / d_ff"),
        "batch": widgets.IntText(value=64, description="batch"),
        "overhead_us": _controls.overhead_us(max_exponent=3),
    }


def batched_layer() -> Calculator:
    """Chapter ``batching``'s calculator (:func:`render_batched_layer`); default: Llama-2-7B MLP, A100."""
    return Calculator(batched_layer_controls(), render_batched_layer)
