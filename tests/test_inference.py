"""Tests for :mod:`helpers.inference`: roofline bounds on prefill and decode, and the decode batch that fits.

The costs come from :mod:`helpers.llm` and the bound from :mod:`helpers.roofline`
(Williams et al. 2009); these tests check that the module composes them as its
docstrings say, and that the results obey the properties chapter 5 teaches.
Model shapes are the published configs (Touvron et al. 2023; Grattafiori et al. 2024).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from helpers import inference, kvcache, llm, roofline
from helpers.hardware import get_accelerator

MODELS = [m.name for m in llm.models()]


def test_decode_step_is_roofline_of_decode_cost():
    """One decode step's bound is exactly roofline_time of llm.decode_cost on one device at full peak."""
    cost = llm.decode_cost("llama-2-7b", 4096, 8, "bf16")
    expected = roofline.roofline_time(cost.flops, cost.bytes, "a100", "bf16")
    step = inference.decode_step("llama-2-7b", "a100", 4096, 8, "bf16")
    assert_allclose(step.seconds, expected, rtol=1e-12)
    assert step.cost == cost
    assert_allclose(step.seconds, max(step.compute_s, step.memory_s), rtol=1e-12)


def test_prefill_step_is_roofline_of_prefill_cost():
    """A prefill's bound is roofline_time of llm.prefill_cost, and a 4k-token prefill of a 7B model is compute-bound."""
    cost = llm.prefill_cost("llama-2-7b", 4096, 1, "bf16")
    step = inference.prefill_step("llama-2-7b", "a100", 4096)
    assert_allclose(step.seconds, roofline.roofline_time(cost.flops, cost.bytes, "a100", "bf16"), rtol=1e-12)
    assert step.regime == "compute"
    assert inference.prefill_time("llama-2-7b", "a100", 4096) == step.seconds


def test_single_sequence_decode_is_weight_read_bound():
    """At batch 1 a decode step is memory-bound and cannot beat reading the weights once.

    Every weight except the embedding table (of which only one row per token is read) is read.
    """
    acc = get_accelerator("h100")
    for model in MODELS:
        m = llm.get_model(model)
        step = inference.decode_step(model, acc, 1024, 1)
        assert step.regime == "memory"
        read = llm.weight_bytes(model) - m.vocab_size * m.d_model * 2
        assert step.seconds >= read / acc.memory_bandwidth


def test_n_gpus_and_mfu_scale_the_terms():
    """Splitting over n GPUs divides both terms by n; an MFU below 1 stretches only the compute term."""
    one = inference.prefill_step("llama-3-8b", "h100", 2048)
    four = inference.prefill_step("llama-3-8b", "h100", 2048, n_gpus=4)
    assert_allclose(four.compute_s, one.compute_s / 4, rtol=1e-12)
    assert_allclose(four.memory_s, one.memory_s / 4, rtol=1e-12)
    half = inference.prefill_step("llama-3-8b", "h100", 2048, mfu=0.5)
    assert_allclose(half.compute_s, 2 * one.compute_s, rtol=1e-12)
    assert_allclose(half.memory_s, one.memory_s, rtol=1e-12)


def test_tokens_per_second_is_batch_over_step_time():
    """Decode throughput is batch / step time, and grows with batch while the step stays memory-bound."""
    rates = [inference.decode_tokens_per_second("llama-3-8b", "a100", 512, b) for b in (1, 2, 4, 8, 16)]
    for b, rate in zip((1, 2, 4, 8, 16), rates):
        assert_allclose(rate, b / inference.decode_step_time("llama-3-8b", "a100", 512, b), rtol=1e-12)
    assert all(later > earlier for earlier, later in zip(rates, rates[1:]))


def test_max_decode_batch_llama2_7b_on_a100():
    """Llama-2-7B in bf16 on an 80 GB A100 with a 4,096-token context: about 27 sequences fit (13.5 GB weights, 2.1 GB KV each)."""
    batch = inference.max_decode_batch("llama-2-7b", "a100", 4096, reserve=0.1)
    free = 0.9 * 80e9 - llm.weight_bytes("llama-2-7b")
    per_seq = 4097 * 512 * 1024
    assert batch == math.floor(free / per_seq) == 27


def test_gqa_fits_more_sequences_than_mha():
    """Llama-3-8B (8 KV heads) fits several times more 4k sequences than Llama-2-7B (32 KV heads) on the same GPU."""
    mha = inference.max_decode_batch("llama-2-7b", "h100", 4096)
    gqa = inference.max_decode_batch("llama-3-8b", "h100", 4096)
    assert gqa > 3 * mha


def test_max_decode_batch_zero_when_weights_do_not_fit():
    """Llama-3-70B (141 GB in bf16) fits on no single 80 GB GPU, so the largest batch is 0; on 8 it is large."""
    assert inference.max_decode_batch("llama-3-70b", "a100", 4096) == 0
    assert inference.max_decode_batch("llama-3-70b", "h100", 4096, n_gpus=8) > 100


@given(
    model=st.sampled_from(MODELS),
    acc=st.sampled_from(["a100", "h100", "h200", "l4", "a10g"]),
    context=st.integers(0, 131_072),
    n_gpus=st.integers(1, 8),
    reserve=st.floats(0, 0.5),
)
def test_max_decode_batch_is_the_largest_that_fits(model, acc, context, n_gpus, reserve):
    """The returned batch fits in the budget and one more sequence would not."""
    budget = n_gpus * get_accelerator(acc).memory_capacity * (1 - reserve)
    batch = inference.max_decode_batch(model, acc, context, "bf16", n_gpus, reserve)
    used = lambda b: llm.weight_bytes(model) + b * kvcache.kv_bytes(model, context + 1)  # noqa: E731
    assert batch >= 0
    if batch > 0:
        assert used(batch) <= budget * (1 + 1e-12)
    assert used(batch + 1) > budget * (1 - 1e-12)


@given(model=st.sampled_from(MODELS), context=st.integers(0, 65_536))
def test_max_decode_batch_falls_with_context(model, context):
    """A longer context never lets more sequences fit."""
    assert inference.max_decode_batch(model, "h200", context + 1) <= inference.max_decode_batch(model, "h200", context)


@pytest.mark.parametrize("model", MODELS)
def test_critical_decode_batch_flips_the_regime(model):
    """At a short context, the step is memory-bound just below the critical batch and compute-bound at or above it."""
    critical = inference.critical_decode_batch(model, "h100", 16)
    assert math.isfinite(critical)
    below, above = math.floor(critical), math.ceil(critical)
    if below == above:
        above += 1
    assert inference.decode_step(model, "h100", 16, max(below, 1)).regime == "memory"
    assert inference.decode_step(model, "h100", 16, above).regime == "compute"


def test_critical_decode_batch_near_ridge_point_at_zero_context():
    """With no cached tokens decode intensity is about the batch, so the critical batch is close to the ridge point (~295 on an H100)."""
    critical = inference.critical_decode_batch("llama-3-8b", "h100", 0)
    assert_allclose(critical, roofline.ridge_point("h100", "bf16"), rtol=0.05)


def test_critical_decode_batch_infinite_for_long_mha_context():
    """With MHA, attention does ~1 FLOP per KV byte, so at long contexts decode never becomes compute-bound."""
    assert inference.critical_decode_batch("llama-2-7b", "h100", 4096) == math.inf
    assert inference.decode_step("llama-2-7b", "h100", 4096, 10_000).regime == "memory"


@pytest.mark.parametrize(
    "call, param",
    [
        (lambda: inference.max_decode_batch("llama-2-7b", "a100", 1024, reserve=1.0), "reserve"),
        (lambda: inference.max_decode_batch("llama-2-7b", "a100", -1), "context"),
        (lambda: inference.max_decode_batch("llama-2-7b", "a100", 1024, n_gpus=0), "n_gpus"),
        (lambda: inference.decode_step_time("llama-2-7b", "a100", 1024, batch=0), "batch"),
        (lambda: inference.decode_step_time("llama-2-7b", "a100", 1024, mfu=1.5), "mfu"),
        (lambda: inference.prefill_time("llama-2-7b", "a100", 0), "tokens"),
        (lambda: inference.prefill_time("gpt-5", "a100", 16), "model"),
        (lambda: inference.prefill_time("llama-2-7b", "b9000", 16), "accelerator"),
        (lambda: inference.prefill_time("llama-2-7b", "t4", 16, dtype="bf16"), "dtype"),
        (lambda: inference.critical_decode_batch("llama-2-7b", "a100", 16, mfu=0), "mfu"),
    ],
)
def test_bad_input_names_the_parameter(call, param):
    """Bad input raises ValueError, KeyError or TypeError whose message names the parameter."""
    with pytest.raises((ValueError, KeyError, TypeError)) as info:
        call()
    assert param in str(info.value)


def test_step_time_vectorises_nothing_silently():
    """A non-integer batch is refused (TypeError naming batch) rather than rounded."""
    with pytest.raises(TypeError, match="batch"):
        inference.decode_step_time("llama-2-7b", "a100", 1024, batch=np.float64(2.5))


@given(
    model=st.sampled_from(MODELS),
    acc=st.sampled_from(["a100", "h100", "l4", "h20"]),
    link=st.sampled_from(["100gbe", "cx6", "cx7", "pcie4"]),
    n_gpus=st.sampled_from([1, 8]),
    mfu=st.floats(0.2, 1.0),
)
@settings(max_examples=15)
def test_recompute_window_matches_brute_force(model, acc, link, n_gpus, mfu):
    """recompute_window returns exactly the prefix lengths (scanned one by one up to 3,000) where recompute is faster."""
    top = 3000
    wins = [n for n in range(1, top + 1)
            if kvcache.recompute_time(model, n, acc, "bf16", n_gpus, mfu) < kvcache.transfer_time(model, n, link, "bf16")]
    window = inference.recompute_window(model, acc, link, "bf16", n_gpus, 1, mfu, max_tokens=top)
    if not wins:
        assert window is None
    else:
        assert window == (wins[0], wins[-1])
        assert wins == list(range(wins[0], wins[-1] + 1))


def test_recompute_window_where_breakeven_tokens_says_one():
    """Llama-2-7B on an H100 behind 100 GbE: fetching wins for tiny prefixes (the lone prefill is weight-bound) and
    for very long ones, recomputing in between; breakeven_tokens reports the end of that window plus one."""
    window = inference.recompute_window("llama-2-7b", "h100", "100gbe")
    assert window is not None
    first, last = window
    assert 1 < first < 1000 < 10_000 < last
    assert kvcache.breakeven("llama-2-7b", first, "h100", "100gbe").verdict == "recompute"
    assert kvcache.breakeven("llama-2-7b", first - 1, "h100", "100gbe").verdict == "transfer"
    assert kvcache.breakeven("llama-2-7b", last + 1, "h100", "100gbe").verdict == "transfer"
    assert kvcache.breakeven_tokens("llama-2-7b", "h100", "100gbe") == last + 1


def test_recompute_window_none_on_a_fast_link():
    """Llama-3-70B's GQA cache is so small per FLOP that one ConnectX-7 port beats recompute on 8 H100s at every length."""
    assert inference.recompute_window("llama-3-70b", "h100", "cx7", n_gpus=8) is None
