"""The book's figures: one style, the roofline plot, operations and ridge points marked on it,
batch sweeps, ResNet-50's layers.

The style is readable without colour: a colour-blind-safe palette whose every colour comes with
its own line style, hatches and filled or hollow markers where colour carries a meaning, and no
text under 9 points.

Plotting lives here and only here; the model modules compute. Figure
functions return ``(fig, ax)`` (or the axes they drew) so a notebook can
annotate further.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import matplotlib.ticker as mticker
import numpy as np
from cycler import cycler
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from . import _args
from .batching import BatchSweep
from .convnets import LayerRoofline, resnet50_roofline
from .hardware import Accelerator, get_accelerator
from .roofline import attainable_flops, ridge_point
from .validation import Prediction as Comparison

PALETTE = (
    "#0072B2",  # blue
    "#E69F00",  # orange
    "#009E73",  # bluish green
    "#D55E00",  # vermillion
    "#CC79A7",  # reddish purple
    "#56B4E9",  # sky blue
    "#000000",  # black
)
"""Okabe and Ito's colour-blind-safe colours (Okabe & Ito 2008, *Color Universal Design*), without
their yellow, which is too pale on white. Matplotlib's ``C0``-``C4`` keep their usual names: ``C0``
blue, ``C1`` orange, ``C2`` green, ``C3`` red (vermillion), ``C4`` purple."""

LINESTYLES = (
    "-",
    "--",
    "-.",
    ":",
    (0, (5, 1, 1, 1, 1, 1)),
    (0, (3, 1, 1, 1, 1, 1, 1, 1)),
    (0, (8, 2)),
)
"""Line style paired with each colour of :data:`PALETTE`, so that series also differ without colour."""

MARKERS = ("o", "s", "^", "D", "v", "P", "X")
"""Marker paired with each colour of :data:`PALETTE` and line style of :data:`LINESTYLES`: a series
reads in greyscale by its line style and its marker (:func:`series_style`)."""


def series_style(index: int, *, points: int | None = None) -> dict[str, Any]:
    """Colour, line style and marker of the ``index``-th series (keyword arguments for ``ax.plot``).

    Series ``i`` and ``j < len(PALETTE)`` apart differ in all three, so a figure reads in greyscale
    and on a phone. With ``points`` (the number of points the series draws) the marker is put on
    about a dozen of them (``markevery``), staggered by ``index`` so markers of two series that
    run together do not sit on each other.
    """
    i = _args.non_negative_int("index", index)
    style: dict[str, Any] = {
        "color": PALETTE[i % len(PALETTE)],
        "linestyle": LINESTYLES[i % len(LINESTYLES)],
        "marker": MARKERS[i % len(MARKERS)],
        "markersize": 5,
    }
    if points is not None:
        n = _args.positive_int("points", points)
        step = max(1, n // 12)
        style["markevery"] = ((i * max(1, step // 3)) % step, step)
    return style


STYLE: dict[str, Any] = {
    "figure.figsize": (7.0, 4.2),
    "figure.dpi": 100,
    "savefig.dpi": 100,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.prop_cycle": cycler(color=PALETTE) + cycler(linestyle=LINESTYLES),
    "lines.linewidth": 1.8,
    "font.size": 11,
    "axes.titlesize": 11,
    "axes.labelsize": 11,
    "xtick.labelsize": 10,
    "ytick.labelsize": 10,
    "legend.fontsize": 9,
    "legend.frameon": False,
}
"""Matplotlib rc settings applied by :func:`use_style`: the palette and its line styles, and text
no smaller than 9 points (at 100 dpi, 12.5 pixels)."""

SMALL = 9
"""Font size (points) of annotations and legends the helpers draw: the smallest text in a figure."""


def use_style() -> None:
    """Apply the book's figure style to matplotlib's global settings."""
    plt.rcParams.update(STYLE)  # type: ignore[arg-type]


def new_figure(*, figsize: tuple[float, float] | None = None) -> tuple[Figure, Axes]:
    """A fresh figure and axes in the book's style."""
    use_style()
    fig, ax = plt.subplots(
        figsize=figsize or STYLE["figure.figsize"], layout="constrained"
    )
    return fig, ax


def roofline_plot(
    devices: Iterable[str | Accelerator] | str | Accelerator,
    dtypes: Sequence[str] | str = "fp16",
    *,
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
    chosen = [devices] if isinstance(devices, (str, Accelerator)) else devices
    accs = [get_accelerator(d) for d in chosen]
    if not accs:
        raise ValueError("devices must name at least one accelerator")
    dtypes = [
        _args.name("dtypes", d)
        for d in ([dtypes] if isinstance(dtypes, str) else dtypes)
    ]
    lo = _args.positive("intensity_range[0]", intensity_range[0])
    hi = _args.positive("intensity_range[1]", intensity_range[1])
    if hi <= lo:
        raise ValueError("intensity_range must be (low, high) with low < high")
    if ax is None:
        fig, ax = new_figure()
    else:
        fig = ax.figure  # type: ignore[assignment]
        ax.clear()
    x = np.geomspace(lo, hi, 400)
    drawn: list[tuple[Accelerator, str]] = []
    for device in accs:
        for dtype in dtypes:
            if dtype not in device.peak_flops:
                continue
            (line,) = ax.loglog(
                x,
                attainable_flops(x, device, dtype=dtype),
                label=f"{device.name} {dtype}",
                **series_style(len(drawn), points=len(x)),
            )
            ridge = ridge_point(device, dtype=dtype)
            ax.plot([ridge], [device.flops(dtype)], "o", color=line.get_color(), ms=4)
            drawn.append((device, dtype))
    if not drawn:
        raise KeyError(f"none of dtypes {dtypes} exists on {[d.name for d in accs]}")
    if points:
        device, dtype = drawn[0]
        for label, intensity in points.items():
            intensity = _args.positive(f"points[{label!r}]", intensity)
            value = attainable_flops(intensity, device, dtype=dtype)
            ax.plot([intensity], [float(value)], "k^", ms=6)
            ax.annotate(
                label,
                (intensity, value),
                textcoords="offset points",
                xytext=(4, -12),
                fontsize=SMALL,
            )
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("attainable throughput (FLOP/s)")
    ax.legend(fontsize=SMALL, loc="lower right")  # under the roofs: no data there
    return fig, ax


def mark_ops(
    ax: Axes,
    points: Mapping[str, float],
    acc: str | Accelerator,
    *,
    dtype: str = "fp16",
) -> None:
    """Mark operations on a roofline drawn in ``ax``, labels alternating above and below.

    Each ``label: intensity`` (FLOP/byte) becomes a black triangle at the
    attainable FLOP/s of ``acc`` in ``dtype``; labels of neighbouring points
    (sorted by intensity) go on opposite sides so close points stay legible,
    and the y-axis gains head-room for labels above the compute roof.

    Parameters
    ----------
    ax : matplotlib Axes
        Axes holding a roofline, e.g. from :func:`helpers.plots.roofline_plot`.
    points : Mapping[str, float]
        ``{label: arithmetic intensity in FLOP/byte}``.
    acc : str or Accelerator
        The device whose roof the points sit on.
    dtype : str
        Which of its peaks.
    """
    device = get_accelerator(acc)
    if not points:
        raise ValueError("points must name at least one operation")
    ordered = sorted(points.items(), key=lambda item: item[1])
    for i, (label, intensity) in enumerate(ordered):
        intensity = _args.positive(f"points[{label!r}]", intensity)
        value = attainable_flops(intensity, device, dtype=dtype)
        ax.plot([intensity], [float(value)], "k^", ms=6, zorder=5)
        # up-left or down-right of the point: off a rising or flat roof either way
        above = i % 2 == 0
        ax.annotate(
            label,
            (intensity, value),
            textcoords="offset points",
            xytext=(-5, 7) if above else (5, -7),
            ha="right" if above else "left",
            va="bottom" if above else "top",
            fontsize=SMALL,
        )
    low, high = ax.get_ylim()
    ax.set_ylim(low, high * 3)  # head-room for the labels above the compute roof


BOUND_COLOURS = {"overhead": "0.88", "memory": "#cce3f0", "compute": "#f9e2bf"}
"""Background colour of each bound (regime) in :func:`draw_sweep`: pale blue and orange from
:data:`PALETTE`."""

BOUND_HATCHES = {"overhead": "", "memory": "/", "compute": "."}
"""Hatching of each bound's background in :func:`draw_sweep`, so the regimes differ without colour."""

HATCH_COLOUR = "0.8"
"""Grey of the hatching in :func:`draw_sweep`: light enough that the curves, not the texture, stand
out (R4-12), dark enough to tell the regimes apart in greyscale."""


def _decade_limits(values: np.ndarray) -> tuple[float, float]:
    """Axis limits rounded out to whole powers of ten, so a log axis always shows labelled decades."""
    low = 10.0 ** math.floor(math.log10(float(np.min(values))))
    high = 10.0 ** math.ceil(math.log10(float(np.max(values))))
    return low, high if high > low else 10 * low


def draw_sweep(
    ax: Axes, sweep: BatchSweep, *, knee: float | None = None, mark: int | None = None
) -> Axes:
    """Step time (left axis, solid) and throughput (right axis, dash-dotted) against batch,
    regimes shaded and hatched.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        Axes to draw the step time into. It is cleared, and any other axes in
        its figure (an earlier throughput twin) removed, so a calculator can redraw.
    sweep : BatchSweep
        What to draw (log-log, batch on x).
    knee : float, optional
        A predicted knee batch, drawn as a dashed vertical line.
    mark : int, optional
        A batch to highlight with a dot on both curves (must be in ``sweep.batch``).

    Returns
    -------
    matplotlib.axes.Axes
        The throughput axes (a twin of ``ax``).
    """
    if not isinstance(sweep, BatchSweep):
        raise TypeError(f"sweep must be a BatchSweep, got {type(sweep).__name__}")
    for other in list(ax.figure.axes):
        if other is not ax:
            other.remove()
    ax.clear()
    b = sweep.batch.astype(float)
    edges = np.concatenate([[b[0]], np.sqrt(b[1:] * b[:-1]), [b[-1]]])
    shown = set()
    # One band per run of batches in the same regime (not one per batch: abutting hatched
    # bands restart their pattern at every edge), its hatching in a light grey behind the data.
    runs: list[tuple[str, int, int]] = []
    for i, regime in enumerate(sweep.bound):
        if runs and runs[-1][0] == regime:
            runs[-1] = (regime, runs[-1][1], i + 1)
        else:
            runs.append((regime, i, i + 1))
    for bound, first, last in runs:
        label = f"{bound}-bound" if bound not in shown else None
        shown.add(bound)
        ax.axvspan(
            edges[first],
            edges[last],
            facecolor=BOUND_COLOURS[bound],
            edgecolor=HATCH_COLOUR,
            hatch=BOUND_HATCHES[bound],
            lw=0,
            label=label,
            zorder=0,
        )
    every = max(1, len(b) // 12)
    ax.loglog(
        b,
        sweep.seconds,
        color="C0",
        ls="-",
        lw=2,
        marker="o",
        ms=4,
        markevery=every,
        label="step time",
    )
    ax.set_xlabel("batch (samples or tokens per step)")
    ax.set_ylabel("step time (s)", color="C0")
    ax.set_xlim(b[0], b[-1])
    twin = ax.twinx()
    twin.loglog(
        b,
        sweep.throughput,
        color="C3",
        ls="-.",
        lw=2,
        marker="s",
        ms=4,
        markevery=every,
        label="throughput",
    )
    twin.set_ylabel("throughput (samples/s)", color="C3")
    twin.grid(False)
    ax.set_ylim(*_decade_limits(sweep.seconds))
    twin.set_ylim(*_decade_limits(sweep.throughput))
    if knee is not None and math.isfinite(knee) and b[0] <= knee <= b[-1]:
        ax.axvline(
            knee, color="k", ls="--", lw=1, label=f"predicted knee ({knee:,.0f})"
        )
    if mark is not None:
        where = np.flatnonzero(sweep.batch == mark)
        if where.size == 0:
            raise ValueError(f"mark must be one of the sweep's batches, got {mark!r}")
        i = int(where[0])
        ax.plot([b[i]], [sweep.seconds[i]], "o", color="C0", ms=7)
        twin.plot([b[i]], [sweep.throughput[i]], "s", color="C3", ms=7)
    handles, labels = ax.get_legend_handles_labels()
    more, more_labels = twin.get_legend_handles_labels()
    twin.legend(
        handles + more,
        labels + more_labels,
        loc="upper left",
        fontsize=SMALL,
        framealpha=0.8,
        frameon=True,
    )
    return twin


def label_ridges(
    ax: Axes,
    devices: Iterable[str | Accelerator] | str | Accelerator,
    *,
    dtypes: Sequence[str] | str = "fp16",
) -> None:
    """Write each ridge point's intensity (FLOP/byte, no decimals) just above its marker.

    For every device in ``devices`` and every dtype of ``dtypes`` it has a
    peak for, the label ``ridge_point(device, dtype=dtype)`` goes at
    ``(ridge, peak)``, the bend of the roofline drawn by
    :func:`roofline_plot`. Dtypes a device lacks are skipped.
    """
    if isinstance(devices, (str, Accelerator)):
        devices = [devices]
    dtypes = [dtypes] if isinstance(dtypes, str) else list(dtypes)
    for device in (get_accelerator(d) for d in devices):
        for dtype in dtypes:
            if _args.name("dtypes", dtype) not in device.peak_flops:
                continue
            ridge = ridge_point(device, dtype=dtype)
            ax.annotate(
                f"{ridge:,.0f}",
                (ridge, device.flops(dtype)),
                textcoords="offset points",
                xytext=(0, 6),
                ha="center",
                fontsize=SMALL,
            )


_KERNEL_STYLE = {1: ("o", "1 × 1 conv"), 3: ("s", "3 × 3 conv"), 7: ("D", "7 × 7 stem")}
_BOUND_MARKER_COLOURS = {"memory": "C3", "compute": "C2"}
_BOUND_MARKER_FILL = {"memory": "full", "compute": "none"}


def draw_resnet50(
    ax: Axes,
    batch: int,
    acc: str | Accelerator,
    *,
    dtype: str = "fp16",
    image_size: int = 224,
) -> list[LayerRoofline]:
    """ResNet-50's layers on the roofline of ``acc`` in ``dtype`` at ``batch``, coloured by bound.

    Draws :func:`roofline_plot` into ``ax`` (cleared first) and each layer of
    :func:`helpers.convnets.resnet50_roofline` at its intensity and
    attainable FLOP/s: the marker says the kernel size (1 x 1, 3 x 3, the
    7 x 7 stem; a triangle for the fc layer); memory-bound layers are filled
    red (vermillion), compute-bound ones hollow green.

    Returns
    -------
    list of LayerRoofline
        The rows drawn, in network order.
    """
    device = get_accelerator(acc)
    rows = resnet50_roofline(batch, device, dtype=dtype, image_size=image_size)
    roofline_plot(device, dtype, intensity_range=(0.3, 3000), ax=ax)
    for kernel, (marker, label) in _KERNEL_STYLE.items():
        for bound, colour in _BOUND_MARKER_COLOURS.items():
            pick = [
                r
                for r in rows
                if r.kind == "conv" and r.kernel == kernel and r.bound == bound
            ]
            if pick:
                ax.plot(
                    [r.intensity for r in pick],
                    [r.attainable for r in pick],
                    marker,
                    color=colour,
                    fillstyle=_BOUND_MARKER_FILL[bound],
                    mew=1.5,
                    ms=6,
                    alpha=0.8,
                    ls="none",
                    label=f"{label}, {bound}-bound",
                )
    for fc in (r for r in rows if r.kind == "fc"):
        ax.plot(
            [fc.intensity],
            [fc.attainable],
            "v",
            color=_BOUND_MARKER_COLOURS[fc.bound],
            fillstyle=_BOUND_MARKER_FILL[fc.bound],
            mew=1.5,
            ms=7,
            ls="none",
            label=f"fc, {fc.bound}-bound",
        )
    ax.set_title(
        f"ResNet-50 layers, batch {batch}, {dtype}, {device.name}", fontsize=SMALL
    )
    ax.legend(fontsize=SMALL, loc="lower right")
    return rows


def plain_log_ticks(*axes: Axes) -> None:
    """Label log axes with plain numbers (4, 6, 10, 20) rather than powers of ten."""
    for ax in axes:
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_formatter(
                mticker.FuncFormatter(lambda value, _: f"{value:g}")
            )
            axis.set_minor_formatter(
                mticker.LogFormatter(labelOnlyBase=False, minor_thresholds=(2, 0.5))
            )


def draw_speed_ratios(
    ax: Axes, comparisons: Mapping[str, Sequence[Comparison]]
) -> None:
    """Each validating point's predicted over published speed, one column per kind, log scale.

    ``comparisons`` maps a kind's label to its :func:`helpers.validation.compare`
    results. Left of each column the naive roofline (hollow squares), right the
    second-order model (filled circles); above 1 a model predicts faster than
    measured (:meth:`helpers.validation.Prediction.speed_ratio`). The hatched
    band is within a factor 1.4 either way.
    """
    if not comparisons:
        raise ValueError("comparisons must hold at least one kind")
    ax.axhspan(
        1 / 1.4,
        1.4,
        facecolor="none",
        edgecolor="0.6",
        hatch="///",
        linewidth=0,
        label="within a factor 1.4",
    )
    ax.axhline(1, color="0.3", linewidth=1)
    for i, items in enumerate(comparisons.values()):
        valid = [c for c in items if c.role == "validation"]
        spread = np.linspace(-0.12, 0.12, len(valid)) if len(valid) > 1 else np.zeros(1)
        order = np.argsort([c.speed_ratio("second_order") for c in valid])
        x = np.empty(len(valid))
        x[order] = spread[: len(valid)]
        ax.scatter(
            i - 0.2 + x,
            [c.speed_ratio("naive") for c in valid],
            marker="s",
            facecolors="none",
            edgecolors=PALETTE[1],
            s=14,
            linewidths=0.8,
            label="naive roofline" if i == 0 else None,
        )
        ax.scatter(
            i + 0.2 + x,
            [c.speed_ratio("second_order") for c in valid],
            marker="o",
            color=PALETTE[0],
            s=10,
            label="second-order model" if i == 0 else None,
        )
    ax.set_yscale("log")
    low, high = ax.get_ylim()
    ticks = [t for t in (0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200) if low <= t <= high]
    ax.set_yticks(ticks, [f"{t:g}" for t in ticks])
    ax.yaxis.set_minor_formatter(mticker.NullFormatter())
    ax.set_xticks(range(len(comparisons)), list(comparisons))
    ax.set_ylabel("predicted speed / published speed")
    ax.legend(loc="upper right", fontsize=SMALL)


def legend_ridges(
    ax: Axes,
    devices: Iterable[str | Accelerator] | str | Accelerator,
    *,
    dtypes: Sequence[str] | str = "fp16",
) -> None:
    """Name each roof's ridge point (FLOP/byte) in its legend entry instead of beside its marker.

    For rooflines whose ridges sit close together (an H100 and an H200 in
    bf16: 295 and 206), labels at the markers (:func:`label_ridges`) run into
    each other; in the legend they cannot. Each line :func:`roofline_plot`
    drew as ``"<device> <dtype>"`` becomes ``"<device> <dtype>, ridge N"``.
    Raises ``KeyError`` if none of the devices' lines is on ``ax``.
    """
    if isinstance(devices, (str, Accelerator)):
        devices = [devices]
    dtypes = [dtypes] if isinstance(dtypes, str) else list(dtypes)
    lines = {line.get_label(): line for line in ax.get_lines()}
    renamed = 0
    for device in (get_accelerator(d) for d in devices):
        for dtype in dtypes:
            line = lines.get(f"{device.name} {_args.name('dtypes', dtype)}")
            if line is None:
                continue
            ridge = ridge_point(device, dtype=dtype)
            line.set_label(f"{device.name} {dtype}, ridge {ridge:,.0f}")
            renamed += 1
    if not renamed:
        raise KeyError("devices: none of their rooflines is drawn on ax")
    ax.legend(fontsize=SMALL)
