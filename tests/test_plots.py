"""Tests of :mod:`helpers.plots`: the book's figure style and the roofline plot.

The roofline is Williams et al. 2009 (williams2009roofline): log-log axes,
a memory slope up to the ridge point, then a flat compute roof.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from numpy.testing import assert_allclose  # noqa: E402

from helpers import plots  # noqa: E402
from helpers.hardware import get_accelerator  # noqa: E402
from helpers.roofline import ridge_point  # noqa: E402


def _labelled_lines(ax):
    return [line for line in ax.get_lines() if not line.get_label().startswith("_")]


def test_new_figure_applies_style():
    """new_figure returns (fig, ax) in the book's style (grid on, top/right spines off)."""
    fig, ax = plots.new_figure()
    assert ax.figure is fig
    assert plt.rcParams["axes.grid"] is True
    assert not ax.spines["top"].get_visible()
    fig2, _ = plots.new_figure((3, 2))
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
    markers = [l for l in ax.get_lines() if l.get_marker() == "o"]
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


def test_figures_are_closed_between_tests():
    """The suite's autouse fixture closes figures: none are left open from earlier tests."""
    assert plt.get_fignums() == []
