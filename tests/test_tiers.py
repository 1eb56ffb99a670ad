"""Tests for helpers.tiers: tiered KV cache verdicts, prefill estimates, the chunk plan, prefetching.

References: Qin et al. (2025), Mooncake, FAST'25 (tiered KV cache, Eq. 1-2 reuse
rule as implemented in helpers.kvcache); Williams et al. (2009), roofline.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from helpers import cachesim, hardware, inference, kvcache, llm, papers, tiers, traces
from helpers.hardware import get_link
from helpers.llm import kv_cache_bytes_per_token


def test_nvme_tier_is_a_quarter_of_a_pcie4_x16_link_per_drive():
    """PCIe 4.0 x16 carries 31.5 GB/s, so an x4 drive 7.9 GB/s; eight drives 63 GB/s; 100 µs latency."""
    one, eight = (
        tiers.nvme_tier("one", 1e12),
        tiers.nvme_tier("eight", 8e12, n_drives=8),
    )
    x16 = hardware.get_link("pcie4").bandwidth
    assert one.bandwidth == pytest.approx(x16 / 4) and one.bandwidth == pytest.approx(
        7.88e9, rel=1e-3
    )
    assert eight.bandwidth == pytest.approx(8 * one.bandwidth)
    assert one.latency == tiers.NVME_LATENCY == 100e-6
    with pytest.raises(ValueError, match="n_drives"):
        tiers.nvme_tier("none", 1e12, n_drives=0)


def test_example_hierarchy_is_chapter_nines():
    """8 x H100: HBM at 8 x 3.35 TB/s, host DRAM over eight PCIe 5.0 x16 links (504 GB/s), a pool
    over eight ConnectX-7 ports (400 GB/s), eight NVMe drives (63 GB/s); 0.1, 1.5, 15, 60 TB."""
    levels = tiers.example_hierarchy()
    assert [t.name for t in levels] == ["HBM", "host DRAM", "remote pool", "local SSD"]
    assert [t.capacity_bytes for t in levels] == [100e9, 1.5e12, 15e12, 60e12]
    assert_allclose(
        [t.bandwidth / 1e9 for t in levels], [26_800, 504.1, 400, 63.0], rtol=1e-3
    )
    assert [t.latency for t in levels] == [0.0, 1e-6, 2e-6, 100e-6]


def test_example_hierarchy_leaves_out_empty_tiers_and_follows_its_arguments():
    """Lab 6's hierarchy: no SSD, and no pool at first; other links and GPUs scale the bandwidths."""
    levels = tiers.example_hierarchy(
        "h800",
        n_gpus=4,
        hbm_bytes=400e9,
        dram_bytes=2e12,
        dram_link="pcie4",
        pool_bytes=0,
        ssd_bytes=0,
    )
    assert [t.name for t in levels] == ["HBM", "host DRAM"]
    assert levels[0].bandwidth == pytest.approx(4 * 3.35e12)
    assert levels[1].bandwidth == pytest.approx(
        4 * hardware.get_link("pcie4").bandwidth
    )


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"dram_bytes": 50e9}, "dram_bytes"),
        ({"pool_bytes": 1e12}, "pool_bytes"),
        ({"ssd_bytes": 15e12}, "ssd_bytes"),
        ({"hbm_bytes": 0}, "hbm_bytes"),
        ({"pool_bytes": -1.0}, "pool_bytes"),
    ],
)
def test_example_hierarchy_rejects_capacities_that_do_not_grow(kwargs, match):
    """An inclusive hierarchy needs each tier larger than the faster ones; the message names the tier."""
    with pytest.raises(ValueError, match=match):
        tiers.example_hierarchy(**kwargs)


M = "llama-3-70b"
HBM = tiers.Tier("HBM", 40e9, 3.35e12, 0.0, "H100 datasheet")
DRAM = tiers.Tier.from_link("DRAM", 1e12, "pcie5")
REMOTE = tiers.Tier.from_link("remote pool", 1e13, "cx7", n_links=8)
SSD = tiers.Tier("SSD", 3e13, 7.88e9, 1e-4, "assumption")


def test_tier_capacity_tokens_by_hand():
    """40 GB of Llama-3-70B bf16 KV (327,680 bytes/token) hold floor(40e9 / 327680) = 122,070 tokens."""
    assert HBM.capacity_tokens(M) == 122_070
    assert HBM.capacity_tokens(M, dtype="fp8") == 244_140


def test_from_link_adds_bandwidths():
    """Eight ConnectX-7 ports give 8 x 50 GB/s = 400 GB/s and keep the port's latency."""
    cx7 = get_link("cx7")
    assert_allclose(REMOTE.bandwidth, 8 * 50e9)
    assert REMOTE.latency == cx7.latency


def test_fetch_from_a_tier_by_hand():
    """A tier is a link for kvcache.transfer_time: 1,000 tokens from the SSD tier take 1e-4 s + 327,680,000 bytes
    / 7.88e9 bytes/s = 41.7 ms; from the pool (8 x 50 GB/s, 2 us) 2e-6 + 327,680,000 / 400e9 = 0.821 ms."""
    assert_allclose(
        kvcache.transfer_time(M, 1000, SSD), 1e-4 + 1000 * 327_680 / 7.88e9, rtol=1e-12
    )
    assert_allclose(
        kvcache.transfer_time(M, 1000, REMOTE), 2e-6 + 327_680_000 / 400e9, rtol=1e-12
    )
    assert SSD.as_link().bandwidth == 7.88e9 and SSD.as_link().latency == 1e-4


def test_single_chunk_verdict_is_kvcache_breakeven():
    """A prefix from one tier at position 0 gets exactly helpers.kvcache.breakeven's verdict and times."""
    for tier in (HBM, DRAM, REMOTE, SSD):
        for n in (1, 100, 4096, 50_000):
            ref = kvcache.breakeven(M, n, "h100", tier.as_link(), n_gpus=8)
            est = tiers.tiered_prefill(M, n, [tier], [n], "h100", n_gpus=8)
            (chunk,) = est.chunks
            assert chunk.verdict == ref.verdict
            assert_allclose(
                [chunk.fetch_s, chunk.recompute_s],
                [ref.transfer_s, ref.recompute_s],
                rtol=1e-12,
            )
            (verdict,) = tiers.tier_verdicts(M, n, [tier], "h100", n_gpus=8)
            assert verdict.verdict == ref.verdict


def test_ssd_loses_and_hbm_wins_for_70b_on_8_h100():
    """With these illustrative tiers an 8-GPU H100 prefill refetches from HBM, DRAM and the pool but recomputes over the SSD."""
    verdicts = {
        c.tier: c.verdict
        for c in tiers.tier_verdicts(
            M, 4096, [HBM, DRAM, REMOTE, SSD], "h100", n_gpus=8
        )
    }
    assert verdicts == {
        "HBM": "transfer",
        "DRAM": "transfer",
        "remote pool": "transfer",
        "SSD": "recompute",
    }


def test_no_cache_is_a_full_prefill():
    """With nothing cached the estimate is inference.prefill_time of the whole prompt, no fetch."""
    est = tiers.tiered_prefill(M, 3000, [HBM], [0], "h100", n_gpus=8)
    assert est.chunks == () and est.fetch_s == 0
    assert_allclose(
        est.compute_s, inference.prefill_time(M, 3000, "h100", n_gpus=8, link=None)
    )


def test_span_compute_time_telescopes():
    """Computing [0, a) then [a, n) costs as much as computing [0, n)."""
    whole = tiers.span_compute_time(M, 0, 8000, "h100")
    parts = tiers.span_compute_time(M, 0, 3000, "h100") + tiers.span_compute_time(
        M, 3000, 8000, "h100"
    )
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
    est = tiers.expected_prefill_time(
        M, n, [HBM, DRAM, SSD], fractions, "h100", n_gpus=n_gpus
    )
    full = inference.prefill_time(M, n, "h100", n_gpus=n_gpus, link=None)
    assert est.serial_s <= full * (1 + 1e-9)
    assert est.hidden_s <= est.prefetched_s * (
        1 + 1e-12
    ) and est.prefetched_s <= est.serial_s * (1 + 1e-12)
    assert est.hidden_s == est.compute_s
    assert est.head_start_s == max(est.fetch_s - est.compute_s, 0.0)
    for chunk in est.chunks:
        assert chunk.verdict == (
            "transfer" if chunk.fetch_s < chunk.recompute_s else "recompute"
        )


def test_expected_prefill_accepts_cachesim_shape():
    """Fractions with a trailing miss entry (cachesim's shape) give the same estimate as without it."""
    with_miss = tiers.expected_prefill_time(
        M, 10_000, [HBM, DRAM], [0.2, 0.3, 0.5], "h100", n_gpus=8
    )
    without = tiers.expected_prefill_time(
        M, 10_000, [HBM, DRAM], [0.2, 0.3], "h100", n_gpus=8
    )
    assert with_miss == without
    assert [c.tokens for c in without.chunks] == [2000, 3000]


def test_pipelined_time_by_hand():
    """Fetch 8 s and compute 4 s over 4 stages: 2 + 1 + 3 x 2 = 9 s; one stage is the sum; many stages approach the max."""
    assert_allclose(tiers.pipelined_time(8, 4, 4), 9.0)
    assert_allclose(tiers.pipelined_time(8, 4, 1), 12.0)
    assert_allclose(tiers.pipelined_time(8, 4, 10_000), 8.0, rtol=1e-3)
    assert isinstance(tiers.pipelined_time(8, 4, 4), float)


@settings(max_examples=60, deadline=None)
@given(
    st.floats(0, 100, allow_subnormal=False),
    st.floats(0, 100, allow_subnormal=False),
    st.integers(1, 200),
)
def test_pipelined_between_max_and_sum(fetch, compute, stages):
    """Overlap never costs more than the serial sum nor less than the slower of the two."""
    t = tiers.pipelined_time(fetch, compute, stages)
    assert max(fetch, compute) * (1 - 1e-12) <= t <= (fetch + compute) * (1 + 1e-12)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(0, 100, allow_subnormal=False),
            st.floats(0, 100, allow_subnormal=False),
        ),
        min_size=1,
        max_size=20,
    ),
    st.integers(1, 200),
)
def test_pipelined_time_is_vectorised(pairs, stages):
    """Property: arrays of fetch and compute times give the array of the scalar results, each between max and sum."""
    fetch, compute = (np.array(column) for column in zip(*pairs, strict=True))
    got = tiers.pipelined_time(fetch, compute, stages)
    assert isinstance(got, np.ndarray) and got.shape == fetch.shape
    assert_allclose(
        got, [tiers.pipelined_time(f, c, stages) for f, c in pairs], rtol=1e-12
    )
    assert np.all(np.maximum(fetch, compute) * (1 - 1e-12) <= got)
    assert np.all(got <= (fetch + compute) * (1 + 1e-12))
    assert_allclose(
        tiers.pipelined_time(fetch, 0.0, stages), fetch, rtol=1e-12
    )  # broadcasts a scalar


def test_plan_chunks_by_hand():
    """A 10-token prompt: tokens [0, 3) in tier 0, none in tier 1, [3, 7) in tier 2, [7, 10) uncached.

    With prefill(n) = n^2 s and fetch = 1, 100, 50 s per token from tiers 0, 1, 2: chunk [0, 3) fetches in 3 s
    against 9 - 0 = 9 s of compute (fetched); chunk [3, 7) would take 200 s against 49 - 9 = 40 s (recomputed);
    the tail costs 100 - 49 = 51 s. Fetch 3 s, compute 40 + 51 = 91 s; the empty tier 1 has no chunk.
    """
    rate = (1.0, 100.0, 50.0)
    chunks, fetch_s, compute_s = tiers.plan_chunks(
        10, [3, 0, 4], lambda k, n: rate[k] * n, lambda n: float(n * n)
    )
    assert chunks == [(0, 0, 3, 3.0, 9.0, True), (2, 3, 7, 200.0, 40.0, False)]
    assert (fetch_s, compute_s) == (3.0, 91.0)


def test_plan_chunks_ties_recompute_and_nothing_cached():
    """A fetch exactly as slow as recomputing is not worth it (``fetch < compute``); no hits is one full prefill."""
    chunks, fetch_s, compute_s = tiers.plan_chunks(
        4, [2], lambda k, n: 4.0, lambda n: float(n * n)
    )
    assert chunks == [(0, 0, 2, 4.0, 4.0, False)] and (fetch_s, compute_s) == (
        0.0,
        16.0,
    )
    assert tiers.plan_chunks(5, [0, 0], lambda k, n: 1.0, lambda n: float(n)) == (
        [],
        0.0,
        5.0,
    )


@settings(max_examples=40, deadline=None)
@given(
    st.integers(1, 50_000),
    st.lists(st.integers(0, 20_000), min_size=1, max_size=4),
    st.integers(1, 8),
)
def test_plan_chunks_is_what_tiered_prefill_does(n, counts, n_gpus):
    """Property: tiered_prefill's chunks, fetch and compute times are plan_chunks with transfer_time from each
    tier and inference.prefill_time (the one loop behind every tiered prefill)."""
    levels = [HBM, DRAM, REMOTE, SSD][: len(counts)]
    total = sum(counts)
    n = max(n, total)
    est = tiers.tiered_prefill(M, n, levels, counts, "h100", n_gpus=n_gpus)
    plans, fetch_s, compute_s = tiers.plan_chunks(
        n,
        counts,
        lambda k, t: kvcache.transfer_time(M, t, levels[k]),
        lambda t: (
            inference.prefill_time(M, t, "h100", n_gpus=n_gpus, link=None) if t else 0.0
        ),
    )
    assert [(c.tier, c.start, c.stop, c.verdict == "transfer") for c in est.chunks] == [
        (levels[k].name, a, b, fetched) for k, a, b, _, _, fetched in plans
    ]
    assert_allclose([est.fetch_s, est.compute_s], [fetch_s, compute_s], rtol=1e-12)


def test_wiring_trace_fractions_passes_token_capacities():
    """Wiring: trace_fractions passes each tier's token capacity to cachesim.tier_hit_fractions.

    Value partner: the direct LRU simulation at each capacity (an independent replay) gives
    tier 0 = H(2048), tier 1 = H(8192) - H(2048) and the miss share 1 - H(8192)."""
    trace = traces.load_trace("tiny")
    small = tiers.Tier("small", 2048 * kv_cache_bytes_per_token(M), 1e12)
    large = tiers.Tier("large", 8192 * kv_cache_bytes_per_token(M), 1e11)
    got = tiers.trace_fractions(trace, [small, large], M)
    assert_allclose(got, cachesim.tier_hit_fractions(trace, [2048, 8192]))
    h_small = cachesim.simulate_prefix_cache(trace, 2048).hit_rate
    h_large = cachesim.simulate_prefix_cache(trace, 8192).hit_rate
    assert_allclose(got, [h_small, h_large - h_small, 1 - h_large], rtol=1e-12)


@pytest.mark.parametrize(
    "call, param",
    [
        (lambda: tiers.Tier("x", 0, 1e9), "capacity_bytes"),
        (lambda: tiers.Tier("x", 1e9, -1), "bandwidth"),
        (lambda: tiers.Tier("x", 1e9, 1e9, math.nan), "latency"),
        (lambda: tiers.Tier("", 1e9, 1e9), "name"),
        (lambda: tiers.Tier.from_link("x", 1e9, "cx7", n_links=0), "n_links"),
        (lambda: tiers.Tier.from_link("x", 1e9, "cx7", 2), "positional"),
        (lambda: tiers.Tier.from_link("x", 1e9, "smoke signal"), "link"),
        (lambda: kvcache.transfer_time(M, 0, HBM), "tokens"),
        (lambda: HBM.capacity_tokens(M, dtype="fp64"), "dtype"),
        (lambda: tiers.span_compute_time(M, 10, 5, "h100"), "stop"),
        (lambda: tiers.tiered_prefill(M, 100, [HBM], [1, 2], "h100"), "cached_tokens"),
        (
            lambda: tiers.tiered_prefill(M, 100, [HBM, DRAM], [60, 50], "h100"),
            "cached_tokens",
        ),
        (lambda: tiers.tiered_prefill(M, 100, [HBM], [-1], "h100"), "cached_tokens"),
        (lambda: tiers.tiered_prefill(M, 0, [HBM], [0], "h100"), "input_tokens"),
        (lambda: tiers.tiered_prefill(M, 100, [HBM], [10], "h100", mfu=1.5), "mfu"),
        (lambda: tiers.tiered_prefill(M, 100, ["HBM"], [10], "h100"), "tier"),
        (
            lambda: tiers.expected_prefill_time(
                M, 100, [HBM, DRAM], [0.7, 0.6], "h100"
            ),
            "fractions",
        ),
        (
            lambda: tiers.expected_prefill_time(M, 100, [HBM], [-0.1], "h100"),
            "fractions",
        ),
        (lambda: tiers.pipelined_time(1, 1, 0), "stages"),
        (lambda: tiers.pipelined_time(-1, 1, 2), "fetch_s"),
        (lambda: tiers.pipelined_time([1.0, float("nan")], 1, 2), "fetch_s"),
        (lambda: tiers.pipelined_time(1, [1.0, -2.0], 2), "compute_s"),
        (lambda: tiers.tier_verdicts(M, 0, [HBM], "h100"), "prefix_tokens"),
        (lambda: tiers.trace_fractions(None, ["HBM"], M), "tier"),
    ],
)
def test_bad_input_names_the_parameter(call, param):
    """Bad input raises ValueError/KeyError/TypeError whose message names the parameter."""
    with pytest.raises((ValueError, KeyError, TypeError), match=param):
        call()


# ---------------------------------------------------------------------------
# replay_prefill (every request of a trace through the tiers)
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_trace() -> cachesim.Trace:
    return traces.load_trace("tiny")


MODEL = "llama-3-70b"


def _hierarchy(hbm_tokens: int, dram_tokens: int, pool_tokens: int) -> list[tiers.Tier]:
    per_token = llm.kv_cache_bytes_per_token(MODEL)
    return [
        tiers.Tier(
            "HBM",
            hbm_tokens * per_token,
            8 * hardware.get_accelerator("h800").memory_bandwidth,
        ),
        tiers.Tier.from_link("DRAM", dram_tokens * per_token, "pcie5", n_links=8),
        tiers.Tier.from_link("pool", pool_tokens * per_token, "100gbe"),
    ]


@given(
    hbm=st.integers(512, 4096),
    extra=st.tuples(st.integers(1, 8192), st.integers(1, 40_000)),
    n_gpus=st.sampled_from([1, 8]),
)
def test_replay_equals_tiered_prefill_per_request(tiny_trace, hbm, extra, n_gpus):
    """Property: every request of the tiny trace gets from replay_prefill the fetch and compute seconds, the
    fetched tiers and the prefetched time that helpers.tiers.tiered_prefill gives it for its own tier split."""
    hierarchy = _hierarchy(hbm, hbm + extra[0], hbm + extra[0] + extra[1])
    replay = tiers.replay_prefill(tiny_trace, hierarchy, MODEL, "h800", n_gpus=n_gpus)
    for r in range(tiny_trace.n_requests):
        est = tiers.tiered_prefill(
            MODEL,
            int(tiny_trace.input_lengths[r]),
            hierarchy,
            [int(c) for c in replay.cached_tokens[r]],
            "h800",
            n_gpus=n_gpus,
        )
        assert_allclose(
            [replay.fetch_s[r], replay.compute_s[r]],
            [est.fetch_s, est.compute_s],
            rtol=1e-12,
        )
        fetched = {c.tier for c in est.chunks if c.verdict == "transfer"}
        assert {hierarchy[k].name for k in np.flatnonzero(replay.fetched[r])} == fetched
        assert replay.prefetched_s[r] == pytest.approx(est.prefetched_s, rel=1e-12)
        no_cache = inference.prefill_time(
            MODEL, int(tiny_trace.input_lengths[r]), "h800", n_gpus=n_gpus, link=None
        )
        assert replay.no_cache_s[r] == pytest.approx(no_cache, rel=1e-12)


def test_replay_tier_split_matches_cachesim(tiny_trace):
    """Served fractions equal cachesim.tier_hit_fractions (same inclusive LRU hierarchy) and sum to 1."""
    hierarchy = _hierarchy(1024, 4096, 16384)
    replay = tiers.replay_prefill(
        cachesim.stack_distances(tiny_trace), hierarchy, MODEL, "h800"
    )
    expected = tiers.trace_fractions(tiny_trace, hierarchy, MODEL)
    assert_allclose(replay.served_fractions(), expected, rtol=1e-12, atol=1e-15)
    assert replay.served_fractions().sum() == pytest.approx(1.0)
    assert replay.cached_tokens.sum(axis=1).max() <= replay.input_tokens.max()
    assert np.all(replay.cached_tokens.sum(axis=1) <= replay.input_tokens)
    assert (
        isinstance(replay, tiers.ReplayedPrefill)
        and replay.n_requests == tiny_trace.n_requests
    )


def test_replay_saving_grows_with_capacity(tiny_trace):
    """More capacity never makes the trace's total prefill slower when every tier fetches faster than it recomputes."""
    savings = []
    for pool in (2048, 8192, 65536, 10**6):
        hierarchy = _hierarchy(512, 1024, pool)
        hierarchy[2] = tiers.Tier.from_link(
            "pool", hierarchy[2].capacity_bytes, "cx7", n_links=8
        )
        replay = tiers.replay_prefill(tiny_trace, hierarchy, MODEL, "h800", n_gpus=8)
        savings.append(replay.saved_fraction())
        assert 0.0 <= replay.saved_fraction() < 1.0
        assert replay.saved_fraction(prefetch=True) >= replay.saved_fraction() - 1e-12
    assert np.all(np.diff(savings) >= -1e-12)


def test_replay_no_hits_saves_nothing():
    """A trace with no repeated block saves nothing: serial time equals the no-cache time."""
    trace = cachesim.Trace(
        "distinct",
        np.arange(3),
        np.array([600, 1000, 20]),
        np.ones(3, dtype=np.int64),
        np.arange(5),
        np.array([0, 2, 4, 5]),
    )
    replay = tiers.replay_prefill(trace, _hierarchy(512, 1024, 4096), MODEL, "h800")
    assert_allclose(replay.serial_s, replay.no_cache_s, rtol=1e-12)
    assert replay.saved_fraction() == pytest.approx(0.0, abs=1e-12)
    assert not replay.fetched.any()


def test_replay_bad_inputs(tiny_trace):
    """Bad inputs raise errors naming the parameter."""
    good = _hierarchy(1024, 4096, 16384)
    with pytest.raises(TypeError, match="trace"):
        tiers.replay_prefill("tiny", good, MODEL, "h800")
    with pytest.raises(ValueError, match="tiers"):
        tiers.replay_prefill(tiny_trace, [], MODEL, "h800")
    with pytest.raises(TypeError, match=r"tiers\[1\]"):
        tiers.replay_prefill(tiny_trace, [good[0], "DRAM"], MODEL, "h800")
    with pytest.raises(ValueError, match="tiers"):
        tiers.replay_prefill(tiny_trace, [good[1], good[0]], MODEL, "h800")
    with pytest.raises(ValueError, match="n_gpus"):
        tiers.replay_prefill(tiny_trace, good, MODEL, "h800", n_gpus=0)
    with pytest.raises(ValueError, match="mfu"):
        tiers.replay_prefill(tiny_trace, good, MODEL, "h800", mfu=1.5)
    with pytest.raises(ValueError, match="block_tokens"):
        tiers.replay_prefill(
            cachesim.stack_distances(tiny_trace), good, MODEL, "h800", block_tokens=1024
        )
    with pytest.raises(KeyError):
        tiers.replay_prefill(tiny_trace, good, "no-such-model", "h800")
    assert math.isfinite(
        tiers.replay_prefill(tiny_trace, good, MODEL, "h800").saved_fraction()
    )


def test_example_hierarchy_takes_a_server_host_bandwidth():
    """Chapter 11's host tier at Mooncake's Table 1 B_h2d, 128 GB/s for the server, in place of eight
    PCIe 5.0 links' 504 GB/s line rate; the latency stays the link's, and a bad value is named."""
    levels = tiers.example_hierarchy(
        dram_bandwidth=papers.MOONCAKE_TABLE1_H2D_BANDWIDTH
    )
    assert levels[1].name == "host DRAM"
    assert levels[1].bandwidth == 128e9
    assert levels[1].latency == hardware.get_link("pcie5").latency
    assert levels[2].bandwidth == pytest.approx(400e9)
    with pytest.raises(ValueError, match="dram_bandwidth"):
        tiers.example_hierarchy(dram_bandwidth=0.0)


def test_a_fully_hidden_fetch_costs_the_compute_alone_given_its_head_start():
    """Review H14.2: fully hidden means t = R, provided the head start covers t_fetch - R. A 30 ms
    fetch behind 10 ms of compute needs a 20 ms head start; a 5 ms fetch behind 10 ms needs none."""
    slow = tiers.PrefillEstimate((), 0.030, 0.010, 80)
    assert slow.hidden_s == 0.010
    assert slow.head_start_s == pytest.approx(0.020)
    fast = tiers.PrefillEstimate((), 0.005, 0.010, 80)
    assert fast.hidden_s == 0.010 and fast.head_start_s == 0.0


# --- rack-scale and coherent tiers (II-16) ---


def test_rack_scale_tiers_from_the_datasheets():
    peer, grace, cxl = tiers.rack_scale_tiers(n_gpus=8, peer_share=0.5, cxl_bytes=2e12)
    assert peer.bandwidth == pytest.approx(8 * 900e9)
    assert peer.capacity_bytes == pytest.approx(0.5 * 13.4e12 / 72 * 64)
    assert grace.bandwidth == pytest.approx(4 * 450e9)  # one Grace per two GPUs
    assert grace.capacity_bytes == pytest.approx(4 * 17e12 / 36)
    assert cxl.bandwidth == pytest.approx(8 * 63.015e9, rel=1e-3)
    assert cxl.capacity_bytes == 2e12
    assert peer.bandwidth > grace.bandwidth > cxl.bandwidth
    assert "gb200-nvl72" in grace.source


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"n_gpus": 7}, "n_gpus"),
        ({"n_gpus": 72}, "n_gpus"),
        ({"peer_share": 0}, "peer_share"),
        ({"peer_share": 1.5}, "peer_share"),
        ({"cxl_bytes": 0}, "cxl_bytes"),
    ],
)
def test_rack_scale_tiers_reject_bad_input(kwargs, name):
    with pytest.raises(ValueError, match=name):
        tiers.rack_scale_tiers(**kwargs)
