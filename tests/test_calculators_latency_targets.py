"""Tests for :mod:`helpers.calculators.latency_targets`: chapter ``latency_targets``'s calculator wires serving and queueing to its controls."""

from __future__ import annotations

import pytest

from helpers import calculators as cl
from helpers import inference, queueing, serving


def test_default_summary_matches_the_chapter(ax):
    """At the defaults (Chapter ``latency_targets``'s A800 example) the batch is 119 and 1,024 tokens is the largest
    chunk drawn within 100 ms (2,048 tokens take 144 ms, the chapter's table); the 512-token step,
    42.6 ms, includes the attention over the earlier chunks; the utilisation is
    queueing.md1_max_utilisation of the whole prompt's prefill."""
    values = cl.latency_targets().values()
    text = cl.render_latency_targets(ax, **values)
    assert text.startswith("119 sequences")
    assert "**1,024 tokens**" in text
    step = serving.colocated_step_time(
        "llama-3-70b",
        12_206,
        "a800",
        batch=119,
        chunk=512,
        prefix=12_035 - 512,
        n_gpus=8,
        link=None,
    )
    assert step == pytest.approx(0.0426, abs=5e-4)
    too_big = serving.colocated_step_time(
        "llama-3-70b",
        12_206,
        "a800",
        batch=119,
        chunk=2048,
        prefix=12_035 - 2048,
        n_gpus=8,
        link=None,
    )
    assert too_big > 0.1
    prefill = inference.prefill_time("llama-3-70b", 12_035, "a800", n_gpus=8, link=None)
    rho = queueing.md1_max_utilisation(prefill, 10.0)
    assert f"**{rho:.0%} busy**" in text


def test_the_legend_names_the_step_it_draws(ax):
    """Every chunk is costed as a full chunk that ends the prompt, and the legend says so
    (the chapter's table uses the same words)."""
    cl.render_latency_targets(ax, **cl.latency_targets().values())
    assert (
        ax.get_legend_handles_labels()[1][0]
        == "step with a full chunk ending the prompt"
    )


def test_a_target_below_one_prefill_is_said_not_raised(ax):
    """A TTFT target shorter than the prefill gets a sentence, not a traceback."""
    values = cl.latency_targets().values() | {"ttft_s": 0.1}
    assert "no load meets" in cl.render_latency_targets(ax, **values)


def test_bad_inputs_name_the_parameter(ax):
    """An unknown GPU raises KeyError; a prompt of no tokens names the parameter."""
    values = cl.latency_targets().values()
    with pytest.raises(KeyError, match="no such GPU"):
        cl.render_latency_targets(ax, **(values | {"acc": "no such GPU"}))
    with pytest.raises(ValueError, match="prompt"):
        cl.render_latency_targets(ax, **(values | {"prompt": 0}))
