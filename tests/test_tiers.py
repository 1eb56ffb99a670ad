"""Tests for helpers.tiers: tiered KV cache verdicts, prefill estimates, prefetching, batching under a TPOT target.

References: Qin et al. (2025), Mooncake, FAST'25 (tiered KV cache, Eq. 1-2 reuse
rule as implemented in helpers.kvcache); Williams et al. (2009), roofline.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from helpers import kvcache, tiers
from helpers.hardware import get_link
from helpers.llm import kv_cache_bytes_per_token
from helpers.offload import colocated_step_time

M = "llama-3-70b"
HBM = tiers.Tier("HBM", 40e9, 3.35e12, 0.0, "H100 datasheet")
DRAM = tiers.Tier.from_link("DRAM", 1e12, "pcie5")
REMOTE = tiers.Tier.from_link("remote pool", 1e13, "cx7", n_links=8)
SSD = tiers.Tier("SSD", 3e13, 7.88e9, 1e-4, "assumption")


def test_tier_capacity_tokens_by_hand():
    """40 GB of Llama-3-70B bf16 KV (327,680 bytes/token) hold floor(40e9 / 327680) = 122,070 tokens."""
    assert HBM.capacity_tokens(M) == 122_070
    assert HBM.capacity_tokens(M, "fp8") == 244_140


def test_from_link_adds_bandwidths():
    """Eight ConnectX-7 ports give 8 x 50 GB/s = 400 GB/s and keep the port's latency."""
    cx7 = get_link("cx7")
    assert_allclose(REMOTE.bandwidth, 8 * 50e9)
    assert REMOTE.latency == cx7.latency


def test_fetch_time_by_hand():
    """1,000 tokens from the SSD tier: 1e-4 s + 327,680,000 bytes / 7.88e9 bytes/s."""
    assert_allclose(tiers.fetch_time(M, 1000, SSD), 1e-4 + 1000 * 327_680 / 7.88e9)


def test_single_chunk_verdict_is_kvcache_breakeven():
    """A prefix from one tier at position 0 gets exactly helpers.kvcache.breakeven's verdict and times."""
    for tier in (HBM, DRAM, REMOTE, SSD):
        for n in (1, 100, 4096, 50_000):
            ref = kvcache.breakeven(M, n, "h100", tier.as_link(), n_gpus=8)
            est = tiers.prefill_time(M, n, [tier], [n], "h100", n_gpus=8)
            (chunk,) = est.chunks
            assert chunk.verdict == ref.verdict
            assert_allclose([chunk.fetch_s, chunk.recompute_s], [ref.transfer_s, ref.recompute_s], rtol=1e-12)
            (verdict,) = tiers.tier_verdicts(M, n, [tier], "h100", n_gpus=8)
            assert verdict.verdict == ref.verdict


def test_ssd_loses_and_hbm_wins_for_70b_on_8_h100():
    """With these illustrative tiers an 8-GPU H100 prefill refetches from HBM, DRAM and the pool but recomputes over the SSD."""
    verdicts = {c.tier: c.verdict for c in tiers.tier_verdicts(M, 4096, [HBM, DRAM, REMOTE, SSD], "h100", n_gpus=8)}
    assert verdicts == {"HBM": "transfer", "DRAM": "transfer", "remote pool": "transfer", "SSD": "recompute"}


def test_no_cache_is_a_full_prefill():
    """With nothing cached the estimate is kvcache.recompute_time of the whole prompt, no fetch."""
    est = tiers.prefill_time(M, 3000, [HBM], [0], "h100", n_gpus=8)
    assert est.chunks == () and est.fetch_s == 0
    assert_allclose(est.compute_s, kvcache.recompute_time(M, 3000, "h100", n_gpus=8))


def test_span_compute_time_telescopes():
    """Computing [0, a) then [a, n) costs as much as computing [0, n)."""
    whole = tiers.span_compute_time(M, 0, 8000, "h100")
    parts = tiers.span_compute_time(M, 0, 3000, "h100") + tiers.span_compute_time(M, 3000, 8000, "h100")
    assert_allclose(parts, whole)
    assert tiers.span_compute_time(M, 500, 500, "h100") == 0


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 60_000),
    st.lists(st.floats(0, 1), min_size=3, max_size=3),
    st.integers(1, 8),
)
def test_caching_never_slower_than_recomputing_everything(n, weights, n_gpus):
    """Whatever the hits, choosing per chunk the faster of fetch and recompute is never slower than recomputing everything."""
    total = sum(weights) or 1.0
    fractions = [w / total * 0.999 for w in weights]
    est = tiers.expected_prefill_time(M, n, [HBM, DRAM, SSD], fractions, "h100", n_gpus=n_gpus)
    full = kvcache.recompute_time(M, n, "h100", n_gpus=n_gpus)
    assert est.serial_s <= full * (1 + 1e-9)
    assert est.hidden_s <= est.prefetched_s * (1 + 1e-12) and est.prefetched_s <= est.serial_s * (1 + 1e-12)
    for chunk in est.chunks:
        assert chunk.verdict == ("transfer" if chunk.fetch_s < chunk.recompute_s else "recompute")


def test_expected_prefill_accepts_cachesim_shape():
    """Fractions with a trailing miss entry (cachesim's shape) give the same estimate as without it."""
    with_miss = tiers.expected_prefill_time(M, 10_000, [HBM, DRAM], [0.2, 0.3, 0.5], "h100", n_gpus=8)
    without = tiers.expected_prefill_time(M, 10_000, [HBM, DRAM], [0.2, 0.3], "h100", n_gpus=8)
    assert with_miss == without
    assert [c.tokens for c in without.chunks] == [2000, 3000]


def test_pipelined_time_by_hand():
    """Fetch 8 s and compute 4 s over 4 stages: 2 + 1 + 3 x 2 = 9 s; one stage is the sum; many stages approach the max."""
    assert_allclose(tiers.pipelined_time(8, 4, 4), 9.0)
    assert_allclose(tiers.pipelined_time(8, 4, 1), 12.0)
    assert_allclose(tiers.pipelined_time(8, 4, 10_000), 8.0, rtol=1e-3)


@settings(max_examples=60, deadline=None)
@given(st.floats(0, 100, allow_subnormal=False), st.floats(0, 100, allow_subnormal=False), st.integers(1, 200))
def test_pipelined_between_max_and_sum(fetch, compute, stages):
    """Overlap never costs more than the serial sum nor less than the slower of the two."""
    t = tiers.pipelined_time(fetch, compute, stages)
    assert max(fetch, compute) * (1 - 1e-12) <= t <= (fetch + compute) * (1 + 1e-12)


def test_slo_batch_is_largest_meeting_target():
    """The chosen batch meets the TPOT target and one more sequence would not (8 x H100, Llama-3-70B, 4k context)."""
    choice = tiers.max_batch_under_slo(M, 4096, "h100", 0.02, n_gpus=8)
    assert choice.limited_by == "slo" and choice.batch > 1
    assert colocated_step_time(M, 4096, choice.batch, "h100", 8) <= 0.02
    assert colocated_step_time(M, 4096, choice.batch + 1, "h100", 8) > 0.02
    assert_allclose(choice.tokens_per_s, choice.batch / choice.step_s)


def test_slo_batch_capped_by_memory_and_by_user():
    """A loose target stops at the memory cap; max_batch caps it further; a too-tight target gives batch 0."""
    loose = tiers.max_batch_under_slo(M, 4096, "h100", 10.0, n_gpus=8)
    assert loose.limited_by == "memory"
    capped = tiers.max_batch_under_slo(M, 4096, "h100", 10.0, n_gpus=8, max_batch=16)
    assert (capped.batch, capped.limited_by) == (16, "max_batch")
    tight = tiers.max_batch_under_slo(M, 4096, "h100", 1e-4, n_gpus=8)
    assert (tight.batch, tight.tokens_per_s, tight.limited_by) == (0, 0.0, "slo")
    no_room = tiers.max_batch_under_slo(M, 4096, "h100", 1.0, n_gpus=1)
    assert (no_room.batch, no_room.limited_by) == (0, "memory")


@settings(max_examples=30, deadline=None)
@given(st.floats(0.005, 0.2), st.integers(0, 32_768))
def test_looser_target_never_smaller_batch(tpot, context):
    """Relaxing the TPOT target never shrinks the batch."""
    a = tiers.max_batch_under_slo("llama-3-8b", context, "h100", tpot)
    b = tiers.max_batch_under_slo("llama-3-8b", context, "h100", tpot * 1.5)
    assert b.batch >= a.batch


def test_trace_fractions_match_cachesim():
    """trace_fractions passes each tier's token capacity to cachesim.tier_hit_fractions (bundled tiny trace)."""
    cachesim = pytest.importorskip("helpers.cachesim")
    trace = cachesim.load_trace("tiny")
    small = tiers.Tier("small", 2048 * kv_cache_bytes_per_token(M), 1e12)
    large = tiers.Tier("large", 8192 * kv_cache_bytes_per_token(M), 1e11)
    got = tiers.trace_fractions(trace, [small, large], M)
    assert_allclose(got, cachesim.tier_hit_fractions(trace, [2048, 8192]))
    assert_allclose(np.sum(got), 1.0)


@pytest.mark.parametrize(
    "call, param",
    [
        (lambda: tiers.Tier("x", 0, 1e9), "capacity_bytes"),
        (lambda: tiers.Tier("x", 1e9, -1), "bandwidth"),
        (lambda: tiers.Tier("x", 1e9, 1e9, math.nan), "latency"),
        (lambda: tiers.Tier("", 1e9, 1e9), "name"),
        (lambda: tiers.Tier.from_link("x", 1e9, "cx7", 0), "n_links"),
        (lambda: tiers.Tier.from_link("x", 1e9, "smoke signal"), "link"),
        (lambda: tiers.fetch_time(M, 0, HBM), "tokens"),
        (lambda: tiers.fetch_time(M, 10, "HBM"), "tier"),
        (lambda: tiers.span_compute_time(M, 10, 5, "h100"), "stop"),
        (lambda: tiers.prefill_time(M, 100, [HBM], [1, 2], "h100"), "cached_tokens"),
        (lambda: tiers.prefill_time(M, 100, [HBM, DRAM], [60, 50], "h100"), "cached_tokens"),
        (lambda: tiers.prefill_time(M, 100, [HBM], [-1], "h100"), "cached_tokens"),
        (lambda: tiers.prefill_time(M, 0, [HBM], [0], "h100"), "input_tokens"),
        (lambda: tiers.prefill_time(M, 100, [HBM], [10], "h100", mfu=1.5), "mfu"),
        (lambda: tiers.expected_prefill_time(M, 100, [HBM, DRAM], [0.7, 0.6], "h100"), "fractions"),
        (lambda: tiers.expected_prefill_time(M, 100, [HBM], [-0.1], "h100"), "fractions"),
        (lambda: tiers.pipelined_time(1, 1, 0), "stages"),
        (lambda: tiers.pipelined_time(-1, 1, 2), "fetch_s"),
        (lambda: tiers.max_batch_under_slo(M, 100, "h100", 0, n_gpus=8), "tpot_s"),
        (lambda: tiers.max_batch_under_slo(M, 100, "h100", 0.1, n_gpus=8, max_batch=0), "max_batch"),
        (lambda: tiers.max_batch_under_slo(M, 100, "h100", 0.1, n_gpus=8, overhead=-1), "overhead"),
        (lambda: tiers.tier_verdicts(M, 0, [HBM], "h100"), "prefix_tokens"),
        (lambda: tiers.trace_fractions(None, ["HBM"], M), "tier"),
    ],
)
def test_bad_input_names_the_parameter(call, param):
    """Bad input raises ValueError/KeyError/TypeError whose message names the parameter."""
    with pytest.raises((ValueError, KeyError, TypeError), match=param):
        call()
