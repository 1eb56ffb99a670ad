"""The calculator of the chapter ``convolutions``:
ResNet-50's layers on a roofline, and the network's step time with a per-layer overhead.

:func:`resnet50` builds it (controls with the chapter's defaults) around
:func:`render_resnet50`, which draws and returns a Markdown summary. Conventions are in
:mod:`helpers.calculators`.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets
from matplotlib.axes import Axes

from .. import convnets, hardware, plots, roofline
from ..formatting import format_si, markdown_table
from ..widgets import Calculator
from . import _controls

__all__ = ["render_resnet50", "resnet50", "resnet50_controls"]


def render_resnet50(
    ax: Axes, acc: str, dtype: str, batch: int, overhead_us: float
) -> str:
    """Chapter ``convolutions``'s calculator: ResNet-50's layers on a roofline, and its images/s by
    two models and in print.

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
    table = [["first-order + t0 per layer: datasheet peaks", f"{batch / total:,.0f}"]]
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
    """Chapter ``convolutions``'s calculator (:func:`render_resnet50`): a T4 in fp16 at batch 8 by default."""
    return Calculator(resnet50_controls(), render_resnet50)
