"""Shared pytest configuration for the helpers test suite.

Hypothesis runs with ``deadline=None`` (timings on a shared 2-core CI machine
jitter; a deadline would make property tests flaky) and about 50 examples per
property. Set ``HYPOTHESIS_PROFILE=thorough`` for a longer search. Tests that
spawn processes, measure this machine or replay the real traces are marked
``slow`` (``-m "not slow"`` skips them).

Torch runs on one CPU thread, as in the labs: its intra-op thread pool spins
while it waits, so on a busy 2-core machine the many tiny TinyGPT forward
passes of the property tests take several times longer with two threads.
"""

from __future__ import annotations

import os

import matplotlib
import pytest
from hypothesis import HealthCheck, settings

os.environ.setdefault(
    "OMP_NUM_THREADS", "1"
)  # read by torch when a test first imports it
matplotlib.use("Agg")

settings.register_profile(
    "book",
    deadline=None,
    max_examples=50,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("thorough", deadline=None, max_examples=1000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "book"))


@pytest.fixture(autouse=True)
def _close_figures():
    """Close every matplotlib figure a test opened, so figures never accumulate."""
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


@pytest.fixture
def ax():
    """A fresh figure's axes for a calculator's render function, closed afterwards."""
    from helpers import plots

    fig, axes = plots.new_figure()
    yield axes
    plots.plt.close(fig)


@pytest.fixture(scope="module")
def tiny():
    """The bundled 16-request sample of the Mooncake traces (the trace calculators' tests)."""
    from helpers import traces

    return traces.load_trace("tiny")
