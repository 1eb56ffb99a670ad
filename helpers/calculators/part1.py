"""Part I's calculators (Chapters 1-5: rooflines and batching): a ``render_*`` function and a builder each.

* :func:`two_ceilings` (chapter 1) -- which of compute, memory and overhead
  binds one operation, as its size varies;
* :func:`rooflines` (chapter 2) -- rooflines of several devices and dtypes,
  with operations placed on them;
* :func:`batched_layer` (chapter 4) -- step time, throughput and regime of a
  linear layer or MLP against the batch;
* :func:`resnet50` (chapter 5) -- ResNet-50's layers on a roofline, and the
  network's step time with a per-layer overhead.

Conventions are in :mod:`helpers.calculators`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.axes import Axes

from .. import (
    achievable,
    batching,
    convnets,
    formatting,
    hardware,
    ops,
    plots,
    published,
    roofline,
)
from ..formatting import format_si, markdown_table
from ..widgets import Calculator
from . import _controls

# --------------------------------------------------------------------------------------------------
# Chapter 1: which ceiling binds?

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
    """Chapter 1's calculator: the compute, memory and overhead terms of ``op`` against its size.

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
    """Chapter 1's calculator (:func:`render_two_ceilings`); default: an fp16 ReLU on a T4."""
    return Calculator(two_ceilings_controls(), render_two_ceilings)


# --------------------------------------------------------------------------------------------------
# Chapter 2: rooflines and operations

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
    """Chapter 2's calculator: rooflines of ``accelerators`` x ``dtypes``, ``operations`` placed.

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
    """Chapter 2's calculator (:func:`render_rooflines`); default: T4 and H100, fp16, 4 ops."""
    return Calculator(rooflines_controls(), render_rooflines)


# --------------------------------------------------------------------------------------------------
# Chapter 4: a batched layer or MLP

LAYER_SHAPES: Mapping[str, bool | None] = MappingProxyType(
    {"linear layer": None, "MLP": False, "gated MLP (SwiGLU)": True}
)
"""Shapes :func:`render_batched_layer` knows: ``None`` a linear layer, else an MLP's ``gated``."""

WEIGHT_FORMATS = ("same as compute", "fp16", "int8", "fp8")
"""Weight storage formats of chapter 4's calculator (``"same as compute"``: the compute dtype)."""


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
    """Chapter 4's calculator: step time and throughput of a layer against the batch, by regime.

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
    if gated is None:
        sweep = batching.linear_sweep(
            grid,
            width_1,
            width_2,
            device,
            dtype=dtype,
            weight_dtype=wdtype,
            overhead=overhead,
        )
        knee = ops.critical_batch_size(
            device, dtype=dtype, weight_dtype=wdtype, d_in=width_1, d_out=width_2
        )
        return sweep, knee
    sweep = batching.mlp_sweep(
        grid,
        width_1,
        width_2,
        device,
        dtype=dtype,
        gated=gated,
        weight_dtype=wdtype,
        overhead=overhead,
    )
    knee = roofline.crossing_batch(
        lambda b: ops.mlp_cost(
            b, width_1, width_2, dtype=dtype, gated=gated, weight_dtype=wdtype
        ),
        device,
        dtype=dtype,
    )
    return sweep, knee


def batched_layer_controls() -> dict[str, Any]:
    """The controls of :func:`batched_layer`: one per keyword of :func:`render_batched_layer`."""
    controls = {
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
    return controls


def batched_layer() -> Calculator:
    """Chapter 4's calculator (:func:`render_batched_layer`); default: Llama-2-7B MLP, A100."""
    return Calculator(batched_layer_controls(), render_batched_layer)


# --------------------------------------------------------------------------------------------------
# Chapter 5: ResNet-50 on a roofline


def render_resnet50(
    ax: Axes, acc: str, dtype: str, batch: int, overhead_us: float
) -> str:
    """Chapter 5's calculator: ResNet-50's layers on a roofline, and its images/s by two models and in print.

    Draws :func:`helpers.plots.draw_resnet50` and returns how many layers are
    memory-bound and their share of the roofline time
    (:func:`helpers.convnets.memory_time_share`), then a table of images per
    second: the first-order bound (datasheet peaks plus ``overhead_us`` per
    layer, :func:`helpers.convnets.resnet50_step_time`), the second-order
    model on the GPU's measured fractions of its peaks (eager kernels, GPU
    side only: :func:`helpers.validation.predict_workload`), and NVIDIA's
    published runs for the same setting where there are any
    (:func:`helpers.convnets.resnet50_published`).
    """
    from .. import validation  # validation imports convnets: import it when called

    overhead = overhead_us * 1e-6
    rows = plots.draw_resnet50(ax, batch, acc, dtype=dtype)
    device = hardware.get_accelerator(acc)
    total = convnets.resnet50_step_time(batch, device, dtype=dtype, overhead=overhead)
    share = convnets.memory_time_share(batch, device, dtype=dtype)
    memory = sum(r.bound == "memory" for r in rows)
    of_peak = sum(r.flops for r in rows) / total / device.flops(dtype)
    table = [["first-order: datasheet peaks, t0 per layer", f"{batch / total:,.0f}"]]
    try:
        second = validation.predict_workload(
            "resnet50", device.name, batch=batch, precision=dtype
        ).constant_free
        table.append(
            ["second-order: measured fractions, eager kernels", f"{second:,.0f}"]
        )
    except (KeyError, ValueError) as exc:
        table.append(
            ["second-order (measured fractions)", f"not modelled: {exc.args[0]}"]
        )
    runs = convnets.resnet50_published(device.name, dtype=dtype, batch=batch)
    table += [
        [f"published: NVIDIA, {name}", f"{value:,.0f}"] for name, value in runs.items()
    ]
    if not runs:
        table.append(["published: NVIDIA", "no run at this setting"])
    return (
        f"**Batch {batch} on the {device.name}, {dtype}**. "
        f"**{memory} of {len(rows)} layers memory-bound** "
        f"(ridge {roofline.ridge_point(device, dtype=dtype):,.1f} FLOP/byte). "
        f"Their share of the roofline time: {share:.0%}. First-order step "
        f"**{format_si(total, 's')}** including {len(rows)} × {format_si(overhead, 's')} "
        f"of overhead. That is **{batch / total:,.0f} images/s**, {of_peak:.0%} of the {dtype} peak.\n\n"
        + markdown_table(["model or run", "images/s"], table)
    )


def resnet50_controls() -> dict[str, Any]:
    """The controls of :func:`resnet50`: one per keyword of :func:`render_resnet50`."""
    controls = {
        "acc": _controls.accelerator("T4"),
        "dtype": _controls.dtype("fp16", options=list(hardware.DTYPE_BYTES)),
        "batch": widgets.IntText(value=8, description="batch"),
        "overhead_us": _controls.overhead_us(max_exponent=2),
    }
    return controls


def resnet50() -> Calculator:
    """Chapter 5's calculator (:func:`render_resnet50`): a T4 in fp16 at batch 8 by default."""
    return Calculator(resnet50_controls(), render_resnet50)


__all__ = [
    "LAYER_SHAPES",
    "OP_SIZE_LIMITS",
    "ROOFLINE_OPERATIONS",
    "WEIGHT_FORMATS",
    "batched_layer",
    "batched_layer_controls",
    "render_batched_layer",
    "render_resnet50",
    "render_rooflines",
    "render_two_ceilings",
    "resnet50",
    "resnet50_controls",
    "rooflines",
    "rooflines_controls",
    "two_ceilings",
    "two_ceilings_controls",
]
