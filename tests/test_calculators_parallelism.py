"""Tests for :mod:`helpers.calculators.parallelism`: chapter ``many_gpus``'s calculator wires multigpu to its controls."""

from __future__ import annotations

import pytest

from helpers import calculators as cp
from helpers import multigpu


def test_default_summary_reports_the_multigpu_share(ax):
    """At the defaults the summary prints multigpu.tp_prefill's share (60 %, derived in test_multigpu)."""
    values = cp.parallelism().values()
    text = cp.render_parallelism(ax, **values)
    share = multigpu.tp_prefill("llama-3-70b", 4096, "H100", 8, "nvlink4").share
    assert f"**{share:.0%} of the roofline bound**" in text
    assert "60%" in text


def test_bad_strategy_is_named(ax):
    """An unknown strategy names the parameter."""
    values = cp.parallelism().values() | {"strategy": "diagonal"}
    with pytest.raises(ValueError, match="strategy"):
        cp.render_parallelism(ax, **values)
