"""One figure style for the whole book, and the roofline plot.

Every function returns ``(fig, ax)`` so a notebook can annotate further.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from . import _validate
from .hardware import Accelerator, get_accelerator
from .roofline import attainable_flops, ridge_point

STYLE = {
    "figure.figsize": (7.0, 4.2),
    "figure.dpi": 100,
    "savefig.dpi": 100,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "font.size": 10,
    "legend.frameon": False,
}
"""Matplotlib rc settings applied by :func:`use_style`."""


def use_style() -> None:
    """Apply the book's figure style to matplotlib's global settings."""
    plt.rcParams.update(STYLE)


def new_figure(figsize: tuple[float, float] | None = None) -> tuple[Figure, Axes]:
    """A fresh figure and axes in the book's style."""
    use_style()
    fig, ax = plt.subplots(figsize=figsize or STYLE["figure.figsize"], layout="constrained")
    return fig, ax


def roofline_plot(
    devices: Iterable[str | Accelerator] | str | Accelerator,
    dtypes: Sequence[str] | str = "fp16",
    points: dict[str, float] | None = None,
    intensity_range: tuple[float, float] = (0.1, 10_000.0),
    ax: Axes | None = None,
) -> tuple[Figure, Axes]:
    """Log-log roofline of one or more devices and dtypes, with operations marked.

    Parameters
    ----------
    devices : name, Accelerator, or a list of them
    dtypes : str or list of str
        Dtypes to draw for each device (those a device lacks are skipped).
    points : dict, optional
        ``{label: intensity in FLOP/byte}``: each is marked on the first
        device's first-dtype roof at its attainable FLOP/s.
    intensity_range : (low, high)
        x-axis range in FLOP/byte.
    ax : Axes, optional
        Draw into these axes (cleared first) instead of a new figure.
    """
    if isinstance(devices, (str, Accelerator)):
        devices = [devices]
    devices = [get_accelerator(d) for d in devices]
    if not devices:
        raise ValueError("devices must name at least one accelerator")
    dtypes = [_validate.name("dtypes", d) for d in ([dtypes] if isinstance(dtypes, str) else dtypes)]
    lo = _validate.positive("intensity_range[0]", intensity_range[0])
    hi = _validate.positive("intensity_range[1]", intensity_range[1])
    if hi <= lo:
        raise ValueError("intensity_range must be (low, high) with low < high")
    if ax is None:
        fig, ax = new_figure()
    else:
        fig = ax.figure
        ax.clear()
    x = np.geomspace(lo, hi, 400)
    drawn = []
    for device in devices:
        for dtype in dtypes:
            if dtype not in device.peak_flops:
                continue
            (line,) = ax.loglog(x, attainable_flops(x, device, dtype), label=f"{device.name} {dtype}")
            ridge = ridge_point(device, dtype)
            ax.plot([ridge], [device.flops(dtype)], "o", color=line.get_color(), ms=4)
            drawn.append((device, dtype))
    if not drawn:
        raise KeyError(f"none of dtypes {dtypes} exists on {[d.name for d in devices]}")
    if points:
        device, dtype = drawn[0]
        for label, intensity in points.items():
            value = attainable_flops(_validate.positive(f"points[{label!r}]", intensity), device, dtype)
            ax.plot([intensity], [value], "k^", ms=6)
            ax.annotate(label, (intensity, value), textcoords="offset points", xytext=(4, -12), fontsize=8)
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("attainable throughput (FLOP/s)")
    ax.legend(fontsize=8)
    return fig, ax
