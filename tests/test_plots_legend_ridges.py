"""plots.legend_ridges: ridge points named in the legend, where close ridges cannot collide (reader review R7)."""

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from helpers import plots  # noqa: E402


def _legend(ax):
    return [t.get_text() for t in ax.get_legend().get_texts()]


def test_each_roof_carries_its_ridge_in_the_legend():
    """H100 and H200 bf16 ridges (989.4e12 / 3.35e12 = 295, / 4.8e12 = 206) each name their own line."""
    fig, ax = plots.roofline_plot(["H100", "H200"], "bf16")
    plots.legend_ridges(ax, ["H100", "H200"], dtypes="bf16")
    assert _legend(ax) == ["H100 SXM bf16, ridge 295", "H200 SXM bf16, ridge 206"]
    matplotlib.pyplot.close(fig)


def test_dtypes_a_device_lacks_are_skipped():
    """The T4 has no fp8 roof: only its fp16 line (65e12 / 320e9 = 203) is renamed."""
    fig, ax = plots.roofline_plot("T4", ["fp16", "fp32"])
    plots.legend_ridges(ax, "T4", dtypes=["fp16", "fp8"])
    assert _legend(ax) == ["T4 fp16, ridge 203", "T4 fp32"]
    matplotlib.pyplot.close(fig)


def test_devices_not_drawn_raise_key_error():
    fig, ax = plots.roofline_plot("T4", "fp16")
    with pytest.raises(KeyError, match="devices"):
        plots.legend_ridges(ax, "H100", dtypes="fp16")
    matplotlib.pyplot.close(fig)
