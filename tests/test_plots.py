"""Tests of :mod:`helpers.plots`: the book's figure style, the roofline plot, operations marked on it, batch sweeps.

The roofline is Williams et al. 2009 (williams2009roofline): log-log axes,
a memory slope up to the ridge point, then a flat compute roof.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import math  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from numpy.testing import assert_allclose  # noqa: E402

from helpers import batching, convnets, ops, plots  # noqa: E402
from helpers.hardware import get_accelerator  # noqa: E402
from helpers.roofline import attainable_flops, ridge_point  # noqa: E402


def test_label_ridges_writes_each_ridge_at_its_bend():
    """T4: fp16 ridge 65e12 / 320e9 = 203, fp32 8.1e12 / 320e9 = 25; its missing bf16 is skipped."""
    _, ax = plots.roofline_plot("T4", ["fp16", "fp32"])
    plots.label_ridges(ax, "T4", dtypes=["fp16", "fp32", "bf16"])
    texts = {t.get_text(): t.xy for t in ax.texts}
    assert set(texts) == {"203", "25"}
    assert_allclose(texts["203"], (65e12 / 320e9, 65e12))
    assert_allclose(texts["25"], (8.1e12 / 320e9, 8.1e12))


def test_label_ridges_over_several_devices():
    """A100, H100 and H200 in bf16: ridges 153, 295 and 206 FLOP/byte."""
    _, ax = plots.roofline_plot(["A100", "H100", "H200"], "bf16")
    plots.label_ridges(ax, ["A100", "H100", "H200"], dtypes="bf16")
    assert [t.get_text() for t in ax.texts] == ["153", "295", "206"]
    with pytest.raises(KeyError):
        plots.label_ridges(ax, ["no such GPU"])


def test_draw_resnet50_places_every_layer():
    """54 layers, one point each, red (C3) when memory-bound, green (C2) when compute-bound."""
    _, ax = plots.new_figure()
    rows = plots.draw_resnet50(ax, 1, "T4", dtype="fp16")
    assert len(rows) == 54 and rows[-1].kind == "fc"
    points = [
        line
        for line in ax.get_lines()
        if line.get_linestyle() == "None" and not line.get_label().startswith("_")
    ]
    assert sum(len(line.get_xdata()) for line in points) == 54
    memory = sum(len(line.get_xdata()) for line in points if line.get_color() == "C3")
    assert memory == convnets.count_memory_bound(1, "T4", dtype="fp16")
    assert "batch 1" in ax.get_title() and "T4" in ax.get_title()
    with pytest.raises(KeyError, match="bf16"):
        plots.draw_resnet50(ax, 1, "T4", dtype="bf16")


def _labelled_lines(ax):
    return [line for line in ax.get_lines() if not line.get_label().startswith("_")]


def test_new_figure_applies_style():
    """new_figure returns (fig, ax) in the book's style (grid on, top/right spines off)."""
    fig, ax = plots.new_figure()
    assert ax.figure is fig
    assert plt.rcParams["axes.grid"] is True
    assert not ax.spines["top"].get_visible()
    fig2, _ = plots.new_figure(figsize=(3, 2))
    assert_allclose(fig2.get_size_inches(), (3, 2))


def test_roofline_plot_one_line_per_device_dtype():
    """Two devices x two dtypes, where the T4 lacks bf16: three labelled lines (skipped pairs are not drawn),
    log-log axes labelled with units, a legend entry per line."""
    fig, ax = plots.roofline_plot(["T4", "H100"], ["fp16", "bf16"])
    assert ax.figure is fig
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    labels = [line.get_label() for line in _labelled_lines(ax)]
    assert labels == ["T4 fp16", "H100 SXM fp16", "H100 SXM bf16"]
    assert "FLOP/byte" in ax.get_xlabel() and "FLOP/s" in ax.get_ylabel()
    assert [t.get_text() for t in ax.get_legend().get_texts()] == labels


def test_roofline_line_is_the_model():
    """The drawn line is min(peak, I * bandwidth): flat at the T4's 65e12 above its ridge (203), 320e9 * I below."""
    _, ax = plots.roofline_plot("T4", "fp16", intensity_range=(1.0, 1000.0))
    (line,) = _labelled_lines(ax)
    x, y = line.get_xdata(), line.get_ydata()
    assert_allclose(x[[0, -1]], [1.0, 1000.0])
    t4 = get_accelerator("T4")
    assert_allclose(y, np.minimum(65e12, 320e9 * x))
    assert_allclose(y.max(), t4.flops("fp16"))
    # a ridge marker at (203.125, 65e12)
    markers = [
        l for l in ax.get_lines() if l.get_marker() == "o" and len(l.get_xdata()) == 1
    ]
    assert len(markers) == 1
    assert_allclose(markers[0].get_xdata(), [ridge_point("T4")])


def test_roofline_points_are_marked():
    """Points {label: intensity} are marked on the first roof at their attainable FLOP/s and annotated."""
    _, ax = plots.roofline_plot("T4", points={"decode": 1.0, "prefill": 1000.0})
    marks = [l for l in ax.get_lines() if l.get_marker() == "^"]
    assert [tuple(m.get_ydata()) for m in marks] == [(320e9,), (65e12,)]
    assert {t.get_text() for t in ax.texts} == {"decode", "prefill"}


def test_roofline_plot_into_given_axes():
    """Passing ax draws there (cleared first) and returns its figure."""
    fig, ax = plt.subplots()
    ax.plot([1, 2], [3, 4], label="old")
    fig2, ax2 = plots.roofline_plot("A100", "bf16", ax=ax)
    assert ax2 is ax and fig2 is fig
    assert [l.get_label() for l in _labelled_lines(ax)] == ["A100 SXM4 80GB bf16"]


def test_dtype_names_are_case_insensitive():
    """dtypes are matched like everywhere else in helpers: "FP16" draws the fp16 roof."""
    _, ax = plots.roofline_plot("T4", "FP16")
    assert len(_labelled_lines(ax)) == 1


def test_unknown_dtype_on_all_devices_raises():
    """A dtype no listed device has (the T4 and V100 have no bf16) raises KeyError."""
    with pytest.raises(KeyError, match="bf16"):
        plots.roofline_plot(["T4", "V100"], "bf16")


def test_bad_input():
    """Unknown devices, an empty device list and bad ranges or points raise, naming the parameter."""
    with pytest.raises(KeyError, match="accelerator"):
        plots.roofline_plot("nope")
    with pytest.raises(ValueError, match="devices"):
        plots.roofline_plot([])
    with pytest.raises(ValueError, match="intensity_range"):
        plots.roofline_plot("T4", intensity_range=(10.0, 1.0))
    with pytest.raises(ValueError, match=r"intensity_range\[0\]"):
        plots.roofline_plot("T4", intensity_range=(0.0, 1.0))
    with pytest.raises(ValueError, match="points"):
        plots.roofline_plot("T4", points={"bad": -1.0})


# --- operations marked on a roofline ------------------------------------------------------


def test_mark_ops_places_points_on_the_roof():
    """Each operation is drawn at (intensity, attainable FLOP/s) with its label; neighbours alternate sides."""
    points = {"a": 1.0, "b": 1000.0, "c": 2.0}
    fig, ax = plots.roofline_plot("H100", "bf16")
    plots.mark_ops(ax, points, "H100", dtype="bf16")
    texts = {t.get_text(): t for t in ax.texts}
    assert set(texts) == set(points)
    # on the H100's bf16 roof: 1 and 2 FLOP/byte sit on the 3.35e12 B/s slope, 1000 on the 989.4e12 peak
    expected = {"a": 3.35e12, "b": 989.4e12, "c": 6.7e12}
    for label, intensity in points.items():
        assert_allclose(texts[label].xy, (intensity, expected[label]))
        assert_allclose(
            expected[label], attainable_flops(intensity, "H100", dtype="bf16")
        )
    assert (
        texts["a"].xyann[1] > 0 > texts["c"].xyann[1]
    )  # sorted a, c, b: a above, c below
    assert texts["b"].xyann[1] > 0


def test_mark_ops_rejects_bad_input():
    """No points, or a non-positive intensity, are refused, naming the parameter; dtype is keyword-only."""
    fig, ax = plots.roofline_plot("T4", "fp16")
    with pytest.raises(ValueError, match="points"):
        plots.mark_ops(ax, {}, "T4")
    with pytest.raises(ValueError, match="points"):
        plots.mark_ops(ax, {"bad": -1.0}, "T4")
    with pytest.raises(TypeError):
        plots.mark_ops(ax, {"a": 1.0}, "T4", "fp16")  # type: ignore[misc]


# --- batch sweeps -------------------------------------------------------------------------


def test_draw_sweep_redraws_without_piling_up_axes():
    """Drawing twice into the same axes leaves one time axes and one throughput twin, with the marked batch."""
    sweep = batching.linear_sweep(
        [1, 4, 16, 64, 256, 1024], 4096, 4096, "t4", overhead=5e-6
    )
    fig, ax = plots.new_figure()
    knee = ops.critical_batch_size("t4", d_in=4096, d_out=4096)
    for _ in range(2):
        twin = plots.draw_sweep(ax, sweep, knee=knee, mark=64)
    assert len(fig.axes) == 2 and twin in fig.axes
    assert_allclose(twin.lines[0].get_ydata(), sweep.throughput)
    assert any(
        line.get_xdata()[0] == knee for line in ax.lines if line.get_linestyle() == "--"
    )
    with pytest.raises(ValueError, match="mark"):
        plots.draw_sweep(ax, sweep, mark=3)
    with pytest.raises(TypeError, match="sweep"):
        plots.draw_sweep(ax, "sweep")  # type: ignore[arg-type]


def test_draw_sweep_shades_each_bound():
    """Each bound of the sweep gets one labelled band (T4: 65e12 FLOP/s, 320e9 B/s; overhead 4 us).

    Work 4e7 B FLOP on 1e6 + 1e5 B bytes: batch 1 takes 0.62 us compute, 3.44 us memory, below the
    overhead; batch 8 4.9 us compute, 5.6 us memory; batch 64 39.4 us compute, 23.1 us memory.
    """
    sweep = batching.sweep(
        lambda b: ops.Cost(4e7 * b, 1e6 + 1e5 * b), [1, 8, 64], "t4", overhead=4e-6
    )
    assert sweep.bound == ("overhead", "memory", "compute")
    fig, ax = plots.new_figure()
    plots.draw_sweep(ax, sweep)
    labels = [p.get_label() for p in ax.patches if not p.get_label().startswith("_")]
    assert sorted(labels) == ["compute-bound", "memory-bound", "overhead-bound"]
    assert set(plots.BOUND_COLOURS) == {"overhead", "memory", "compute"}


def test_draw_sweep_axes_span_whole_decades():
    """Both log axes run between powers of ten that contain the data, so each shows labelled ticks.

    Regression: a nearly flat step time (Llama-2-7B's MLP on an A100, chapter 4) spanned 1.4e-4 to
    1.3e-2 s and the flat part had no labelled tick below it.
    """
    sweep = batching.mlp_sweep(
        [1, 16, 256, 4096], 4096, 11008, "A100", gated=True, overhead=5e-6
    )
    fig, ax = plots.new_figure()
    twin = plots.draw_sweep(ax, sweep)
    for axes, values in ((ax, sweep.seconds), (twin, sweep.throughput)):
        low, high = axes.get_ylim()
        assert low <= values.min() and values.max() <= high
        for limit in (low, high):
            assert math.isclose(
                math.log10(limit), round(math.log10(limit)), abs_tol=1e-9
            )
    assert plots._decade_limits(np.array([1e-3, 1e-3])) == (
        1e-3,
        1e-2,
    )  # a constant curve still gets a decade


# --- readable without colour, and legible ---------------------------------------------------

# Machado, Oliveira & Fernandes 2009, "A physiologically-based model for simulation of colour
# vision deficiency", severity 1.0 matrices, applied to linear RGB.
_DEFICIENCIES = {
    "protanopia": [
        [0.152286, 1.052583, -0.204868],
        [0.114503, 0.786281, 0.099216],
        [-0.003882, -0.048116, 1.051998],
    ],
    "deuteranopia": [
        [0.367322, 0.860646, -0.227968],
        [0.280085, 0.672501, 0.047413],
        [-0.011820, 0.042940, 0.968881],
    ],
    "tritanopia": [
        [1.255528, -0.076749, -0.178779],
        [-0.078411, 0.930809, 0.147602],
        [0.004733, 0.691367, 0.303900],
    ],
}


def _lab(colour: str, deficiency: str) -> np.ndarray:
    """CIELAB (D65) of ``colour`` as seen with ``deficiency``."""
    from matplotlib.colors import to_rgb

    srgb = np.array(to_rgb(colour))
    linear = np.where(srgb <= 0.04045, srgb / 12.92, ((srgb + 0.055) / 1.055) ** 2.4)
    seen = np.clip(np.array(_DEFICIENCIES[deficiency]) @ linear, 0, 1)
    xyz = (
        np.array(
            [
                [0.4124, 0.3576, 0.1805],
                [0.2126, 0.7152, 0.0722],
                [0.0193, 0.1192, 0.9505],
            ]
        )
        @ seen
        / np.array([0.95047, 1.0, 1.08883])
    )
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


@pytest.mark.parametrize("deficiency", sorted(_DEFICIENCIES))
def test_palette_colours_stay_apart_for_colour_blind_readers(deficiency):
    """Every pair of the palette's colours differs by at least 15 CIELAB units (ΔE*ab) under each
    simulated dichromacy (Machado et al. 2009); matplotlib's default tab10 fails this (its orange and
    green are 4.6 apart for a protanope)."""
    labs = {c: _lab(c, deficiency) for c in plots.PALETTE}
    closest = min(
        (float(np.linalg.norm(labs[a] - labs[b])), a, b)
        for i, a in enumerate(plots.PALETTE)
        for b in plots.PALETTE[i + 1 :]
    )
    assert closest[0] >= 15, f"{closest[1]} and {closest[2]} look alike: {closest}"
    tab10 = {c: _lab(c, "protanopia") for c in ("#ff7f0e", "#2ca02c")}
    assert np.linalg.norm(tab10["#ff7f0e"] - tab10["#2ca02c"]) < 15  # the test can fail


def test_style_pairs_each_colour_with_its_own_line_style():
    """The style's cycle gives every series a different colour *and* line style, so lines differ in
    greyscale; C0-C4 keep their usual hues (blue, orange, green, red, purple) for the prose."""
    plots.use_style()
    cycle = list(plt.rcParams["axes.prop_cycle"])
    assert [c["color"] for c in cycle] == list(plots.PALETTE)
    styles = [str(c["linestyle"]) for c in cycle]
    assert len(set(styles)) == len(styles) == len(plots.PALETTE)
    assert plots.PALETTE[:5] == ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7")


def test_roofline_lines_differ_in_line_style():
    """Three devices on one roofline plot: three lines, three line styles."""
    _, ax = plots.roofline_plot(["T4", "A100", "H100"], "bf16")
    lines = _labelled_lines(ax)
    assert len(lines) == 2  # the T4 has no bf16
    _, ax = plots.roofline_plot(["T4", "A100", "H100"], "fp16")
    lines = _labelled_lines(ax)
    assert len({str(line.get_linestyle()) for line in lines}) == len(lines) == 3


def test_sweep_and_resnet_encode_more_than_colour():
    """draw_sweep: time and throughput differ in line style, each bound in hatching;
    draw_resnet50: memory-bound markers are filled, compute-bound ones hollow."""
    sweep = batching.linear_sweep([1, 16, 256, 4096], 4096, 4096, "t4", overhead=5e-6)
    fig, ax = plots.new_figure()
    twin = plots.draw_sweep(ax, sweep)
    assert ax.lines[0].get_linestyle() != twin.lines[0].get_linestyle()
    assert len(set(plots.BOUND_HATCHES.values())) == len(plots.BOUND_HATCHES)
    assert {p.get_hatch() or "" for p in ax.patches} == {
        plots.BOUND_HATCHES[b] for b in set(sweep.bound)
    }
    fig, ax = plots.new_figure()
    rows = plots.draw_resnet50(ax, 8, "T4")
    fills = {
        line.get_label().rsplit(", ", 1)[1]: line.get_fillstyle()
        for line in _labelled_lines(ax)
        if "bound" in line.get_label()
    }
    assert {r.bound for r in rows} == {"memory", "compute"}
    assert fills == {"memory-bound": "full", "compute-bound": "none"}


def test_text_in_the_helpers_figures_is_at_least_9_points():
    """No tick label, axis label, title, legend entry or annotation the helpers draw is below 9 pt."""
    figures = []
    fig, ax = plots.roofline_plot(["T4", "H100"], ["fp16", "fp32"], points={"a": 1.0})
    plots.mark_ops(ax, {"b": 10.0, "c": 100.0}, "T4")
    plots.label_ridges(ax, ["T4", "H100"], dtypes=["fp16", "fp32"])
    figures.append(fig)
    sweep = batching.linear_sweep([1, 16, 256, 4096], 4096, 4096, "t4", overhead=5e-6)
    fig, ax = plots.new_figure()
    plots.draw_sweep(ax, sweep, knee=100.0, mark=16)
    figures.append(fig)
    fig, ax = plots.new_figure()
    plots.draw_resnet50(ax, 8, "T4")
    figures.append(fig)
    for fig in figures:
        fig.canvas.draw()
        texts = [
            t
            for t in fig.findobj(matplotlib.text.Text)
            if t.get_visible() and t.get_text().strip()
        ]
        assert texts
        small = [
            (t.get_text(), t.get_fontsize()) for t in texts if t.get_fontsize() < 9
        ]
        assert small == [], f"text below 9 pt: {small[:5]}"
        plt.close(fig)


def _series_of(fig):
    """Every labelled Line2D of a figure, axes by axes (twins included)."""
    return [
        (ax, line)
        for ax in fig.axes
        for line in ax.get_lines()
        if not line.get_label().startswith("_")
    ]


def _has_marker(line):
    return line.get_marker() not in (None, "", " ", "None", "none")


def _helper_figures():
    """One figure from each drawing function of helpers.plots, by name."""
    figures = {}
    fig, ax = plots.roofline_plot(["T4", "A100", "H100"], "fp16", points={"a": 1.0})
    plots.mark_ops(ax, {"b": 10.0, "c": 100.0}, "T4")
    plots.label_ridges(ax, ["T4", "A100", "H100"])
    figures["roofline_plot"] = fig
    sweep = batching.linear_sweep([1, 16, 256, 4096], 4096, 4096, "t4", overhead=5e-6)
    fig, ax = plots.new_figure()
    plots.draw_sweep(ax, sweep, knee=100.0, mark=16)
    figures["draw_sweep"] = fig
    fig, ax = plots.new_figure()
    plots.draw_resnet50(ax, 8, "T4")
    figures["draw_resnet50"] = fig
    from helpers import published, validation

    fig, ax = plots.new_figure()
    plots.draw_speed_ratios(
        ax, {kind: validation.compare(kind) for kind in published.KINDS}
    )
    figures["draw_speed_ratios"] = fig
    return figures


def test_every_helper_figure_is_drawn_by_this_test():
    """Each public drawing function of helpers.plots (draw_* and *_plot) is in _helper_figures, so a
    new one cannot skip the greyscale check below."""
    drawing = {
        name
        for name in dir(plots)
        if callable(getattr(plots, name))
        and (name.startswith("draw_") or name.endswith("_plot"))
    }
    assert drawing == set(_helper_figures())
    plt.close("all")


def test_every_series_reads_in_greyscale():
    """Every labelled line series of every helpers.plots figure has a marker, or a line style other
    than the default solid one, and no two series of a figure share line style, marker and fill (so
    colour is never the only difference); scatter series differ in marker shape or fill."""
    for name, fig in _helper_figures().items():
        series = _series_of(fig)
        keys = []
        for _, line in series:
            assert _has_marker(line) or line.get_linestyle() not in ("-", "None"), (
                name,
                line.get_label(),
            )
            keys.append(
                (
                    str(line.get_linestyle()),
                    str(line.get_marker()),
                    line.get_fillstyle(),
                )
            )
        assert len(set(keys)) == len(keys), (name, keys)
        scatters = [
            c
            for ax in fig.axes
            for c in ax.collections
            if isinstance(c, matplotlib.collections.PathCollection)
            and not c.get_label().startswith("_")
        ]
        looks = {
            (len(c.get_paths()[0].vertices), bool(len(c.get_facecolors())))
            for c in scatters
        }
        assert len(looks) == len(scatters), name
        plt.close(fig)


def test_series_style_pairs_colour_line_style_and_marker():
    """series_style(i): the i-th palette colour, line style and marker; markevery staggered by i."""
    first, second = plots.series_style(0), plots.series_style(1)
    assert first["color"] == plots.PALETTE[0] and first["marker"] == "o"
    assert len({str(plots.series_style(i)["linestyle"]) for i in range(7)}) == 7
    assert len({plots.series_style(i)["marker"] for i in range(7)}) == 7
    assert second["linestyle"] != first["linestyle"]
    a, b = plots.series_style(0, points=120), plots.series_style(1, points=120)
    assert a["markevery"] == (0, 10) and b["markevery"] == (3, 10)
    assert plots.series_style(7)["marker"] == "o"  # the cycle repeats
    with pytest.raises(ValueError, match="index"):
        plots.series_style(-1)
    with pytest.raises(ValueError, match="points"):
        plots.series_style(0, points=0)


def test_the_greyscale_check_can_fail():
    """Two solid, marker-less lines in one axes fail the check used above."""
    fig, ax = plots.new_figure()
    ax.plot([1, 2], [1, 2], "-", label="a")
    ax.plot([1, 2], [2, 3], "-", label="b")
    keys = [
        (str(line.get_linestyle()), str(line.get_marker()))
        for _, line in _series_of(fig)
    ]
    assert not all(_has_marker(line) for _, line in _series_of(fig))
    assert len(set(keys)) < len(keys)
    plt.close(fig)


def test_sweep_hatching_is_light_and_one_band_per_regime():
    """R4-12: the regimes' hatching is a light grey behind the curves, one band per run of batches
    in a regime (not one per batch), so the data is what stands out."""
    import matplotlib.colors as mcolors

    sweep = batching.linear_sweep(
        [1, 2, 4, 8, 16, 64, 256, 1024, 4096], 4096, 4096, "t4", overhead=5e-6
    )
    _, ax = plots.new_figure()
    plots.draw_sweep(ax, sweep)
    runs = 1 + sum(a != b for a, b in zip(sweep.bound, sweep.bound[1:]))
    assert len(ax.patches) == runs < len(sweep.batch)
    for patch in ax.patches:
        assert min(mcolors.to_rgb(patch.get_edgecolor())) >= 0.75
        assert patch.get_zorder() < ax.lines[0].get_zorder()
