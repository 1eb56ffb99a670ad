"""A small harness for the book's calculators: controls on top, result below.

A calculator is a ``render(ax, **values) -> str`` function that draws into
``ax`` and returns a Markdown summary, plus a dict of ipywidgets controls.
:class:`Calculator` shows three outputs: the controls, the figure and the
summary. The figure and summary are ordinary display outputs updated in place
through display handles, so

* in a live kernel (Colab, Binder, JupyterLite) moving a control redraws the
  same figure without flicker, and bad input shows as a message;
* in the rendered book the default figure and summary stay on the page as
  static outputs, and the controls render as a short note saying how to use
  them live (the book's ``_config.yml`` drops the widget view for HTML, so no
  dead controls appear).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import matplotlib.pyplot as plt
from IPython.display import Markdown, display
from matplotlib.axes import Axes

from .plots import new_figure

LIVE_NOTE = (
    "<p class='calc-note'><b>Calculator.</b> The figure and numbers below are its default result. "
    "To move its controls, press the yellow <i>live</i> button above (Python runs in your browser), "
    "or open the page in Colab or Binder from the rocket icon at the top.</p>"
)

Render = Callable[..., str]


def error_message(exc: Exception) -> str:
    """The Markdown shown in place of a result when a control holds bad input."""
    text = exc.args[0] if exc.args else str(exc)
    return f"**Input error:** {text}"


class _Controls:
    """Displays as live widgets in a kernel and as :data:`LIVE_NOTE` in static HTML."""

    def __init__(self, box: Any) -> None:
        self.box = box

    def _repr_mimebundle_(
        self, include: Any = None, exclude: Any = None
    ) -> dict[str, Any]:
        bundle = self.box._repr_mimebundle_(include=include, exclude=exclude) or {}
        bundle = dict(bundle)
        bundle["text/html"] = LIVE_NOTE
        bundle["text/plain"] = "Calculator controls (run the notebook live to use them)"
        return bundle


class Calculator:
    """Controls driving a figure and a summary, updated in place.

    Parameters
    ----------
    controls : Mapping[str, ipywidgets.ValueWidget]
        Keyword name -> control; ``render`` receives ``name=control.value``.
    render : callable
        ``render(ax, **values) -> str``: draw into ``ax`` (already cleared) and
        return a Markdown summary. It should raise ``ValueError``/``KeyError``/
        ``TypeError`` with a message naming the parameter on bad input.
    figsize : (width, height), optional
        Figure size in inches.
    """

    def __init__(
        self,
        controls: Mapping[str, Any],
        render: Render,
        figsize: tuple[float, float] | None = None,
    ) -> None:
        if not controls:
            raise ValueError("controls must contain at least one control")
        if not callable(render):
            raise TypeError("render must be callable")
        self.controls = dict(controls)
        self.render = render
        self.fig, self.ax = new_figure(figsize=figsize)
        plt.close(self.fig)  # shown through a display handle only, never twice
        self._figure_handle: Any = None
        self._summary_handle: Any = None
        self.summary = ""

    def values(self) -> dict[str, Any]:
        """Current value of every control, by keyword."""
        return {name: control.value for name, control in self.controls.items()}

    def update(self, *_: Any) -> str:
        """Redraw with the current control values; return the summary (or the error message)."""
        self.ax.clear()
        try:
            self.summary = self.render(self.ax, **self.values())
        except (ValueError, KeyError, TypeError) as exc:
            self.summary = error_message(exc)
        if self._figure_handle is not None:
            self._figure_handle.update(self.fig)
            self._summary_handle.update(Markdown(self.summary))
        return self.summary

    def show(self) -> None:
        """Display the controls, the figure and the summary, and start listening to the controls."""
        import ipywidgets as widgets

        self.update()
        box = widgets.VBox(list(self.controls.values()))
        display(_Controls(box))
        self._figure_handle = display(self.fig, display_id=True)
        self._summary_handle = display(Markdown(self.summary), display_id=True)
        for control in self.controls.values():
            control.observe(self.update, names="value")

    @property
    def axes(self) -> Axes:
        """The axes ``render`` draws into."""
        return self.ax
