"""Tests of :mod:`helpers.widgets`: the calculator harness used by every chapter.

Intent (from the common brief): in a kernel, moving a control re-renders and
bad input shows an "Input error" message instead of a traceback; in static HTML
the controls render as a short note.
"""

from __future__ import annotations

import ipywidgets as widgets
import pytest

from helpers import widgets as hw
from helpers.roofline import ridge_point


def _render(ax, device, dtype):
    """A tiny calculator: the ridge point of a device and dtype (raises KeyError on a missing dtype)."""
    ridge = ridge_point(device, dtype=dtype)
    ax.axvline(ridge)
    return f"Ridge of {device} {dtype}: **{ridge:.0f} FLOP/byte**"


def _calculator():
    controls = {
        "device": widgets.Dropdown(options=["T4", "H100"], value="T4"),
        "dtype": widgets.Dropdown(options=["fp16", "bf16"], value="fp16"),
    }
    return hw.Calculator(controls, _render)


def test_update_returns_summary():
    """With good values update() renders and returns the summary (T4 fp16 ridge 203 FLOP/byte)."""
    calc = _calculator()
    assert calc.update() == "Ridge of T4 fp16: **203 FLOP/byte**"
    assert calc.summary.endswith("203 FLOP/byte**")
    assert calc.values() == {"device": "T4", "dtype": "fp16"}
    assert len(calc.axes.lines) == 1


def test_bad_value_gives_input_error_not_exception():
    """A render raising KeyError (T4 has no bf16) or ValueError yields an "Input error" summary naming the cause."""
    calc = _calculator()
    calc.controls["dtype"].value = "bf16"
    summary = calc.update()
    assert summary.startswith("**Input error:**") and "dtype" in summary

    def bad(ax, x):
        raise ValueError("x must be > 0, got -1")

    calc2 = hw.Calculator({"x": widgets.FloatText(value=-1.0)}, bad)
    assert calc2.update() == "**Input error:** x must be > 0, got -1"


def test_programming_errors_still_raise():
    """Only ValueError/KeyError/TypeError become messages; a bug (ZeroDivisionError) is not hidden."""

    def buggy(ax, x):
        return str(1 / 0)

    calc = hw.Calculator({"x": widgets.IntSlider(value=1)}, buggy)
    with pytest.raises(ZeroDivisionError):
        calc.update()


def test_show_and_live_update(capsys):
    """After show(), changing a control re-renders: the summary changes (T4 -> H100), and a bad value
    shows an input error instead of raising."""
    calc = _calculator()
    calc.show()
    before = calc.summary
    calc.controls["device"].value = "H100"
    assert calc.summary != before and "H100" in calc.summary and "295" in calc.summary
    calc.controls["dtype"].value = "bf16"
    assert "295" in calc.summary
    calc.controls["device"].value = "T4"  # T4 has no bf16
    assert calc.summary.startswith("**Input error:**")
    capsys.readouterr()


def test_controls_mimebundle_has_static_note():
    """The controls display as widgets in a kernel and as the LIVE_NOTE html in a static page."""
    box = widgets.VBox([widgets.IntSlider()])
    bundle = hw._Controls(box)._repr_mimebundle_()
    assert bundle["text/html"] == hw.LIVE_NOTE
    assert "Calculator" in bundle["text/plain"]
    assert "application/vnd.jupyter.widget-view+json" in bundle


def test_error_message_format():
    """error_message shows the exception's first argument after a bold label."""
    assert (
        hw.error_message(KeyError("dtype 'bf16' is missing"))
        == "**Input error:** dtype 'bf16' is missing"
    )
    assert hw.error_message(ValueError()) == "**Input error:** "


def test_constructor_validation():
    """No controls -> ValueError naming controls; a non-callable render -> TypeError naming render."""
    with pytest.raises(ValueError, match="controls"):
        hw.Calculator({}, _render)
    with pytest.raises(TypeError, match="render"):
        hw.Calculator({"x": widgets.IntSlider()}, "not callable")  # type: ignore[arg-type]
