"""Tests for helpers.prefix_reuse: prefill from a cached prefix (TinyGPT) and per-request trace replay.

References: Qin et al. (2025), Mooncake, FAST'25 (fetch-or-recompute per cached prefix);
Mattson et al. (1970) (LRU stack distances, used through helpers.cachesim).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from helpers import cachesim, hardware, inference, llm, tiers, traces
from helpers.prefix_reuse import (
    ReplayedPrefill,
    prefill_with_prefix,
    prefix_of_cache,
    replay_prefill,
)
from helpers.tinygpt import TinyGPT, cache_tokens, tiny_config

CONFIG = tiny_config(
    n_layers=2,
    d_model=64,
    n_heads=4,
    n_kv_heads=2,
    head_dim=16,
    d_ff=128,
    vocab_size=97,
    name="t",
)


@pytest.fixture(scope="module")
def model() -> TinyGPT:
    return TinyGPT(CONFIG, seed=3)


@pytest.fixture(scope="module")
def tiny_trace() -> cachesim.Trace:
    return traces.load_trace("tiny")


# ---------------------------------------------------------------------------
# prefill_with_prefix / prefix_of_cache
# ---------------------------------------------------------------------------


@given(length=st.integers(2, 40), data=st.data())
def test_suffix_prefill_equals_full_prefill(model, length, data):
    """Prefilling only the suffix after the prefix's cache gives the whole prompt's logits and cache (Mooncake's premise)."""
    h = data.draw(st.integers(1, length - 1))
    batch = data.draw(st.integers(1, 2))
    prompt = torch.randint(
        0,
        CONFIG.vocab_size,
        (batch, length),
        generator=torch.Generator().manual_seed(length),
    )
    full_logits, full_cache = model.prefill(prompt)
    _, prefix_cache = model.prefill(prompt[:, :h])
    logits, cache = prefill_with_prefix(model, prompt[:, h:], prefix_cache)
    assert_allclose(logits.numpy(), full_logits.numpy(), rtol=1e-4, atol=1e-4)
    assert cache_tokens(cache) == length
    for (k, v), (fk, fv) in zip(cache, full_cache):
        assert_allclose(k.numpy(), fk.numpy(), rtol=1e-4, atol=1e-5)
        assert_allclose(v.numpy(), fv.numpy(), rtol=1e-4, atol=1e-5)


def test_prefix_of_cache_is_the_prefix_cache(model):
    """The first h positions of a prompt's cache equal the cache of its first h tokens (causality)."""
    prompt = torch.randint(
        0, CONFIG.vocab_size, (1, 24), generator=torch.Generator().manual_seed(0)
    )
    _, full = model.prefill(prompt)
    _, prefix = model.prefill(prompt[:, :10])
    cut = prefix_of_cache(full, 10)
    assert cache_tokens(cut) == 10
    for (k, v), (pk, pv) in zip(cut, prefix):
        assert_allclose(k.numpy(), pk.numpy(), rtol=1e-4, atol=1e-5)
        assert_allclose(v.numpy(), pv.numpy(), rtol=1e-4, atol=1e-5)


def test_one_token_suffix_is_a_decode_step(model):
    """A one-token suffix is exactly a decode step after the prefix's cache."""
    prompt = torch.randint(
        0, CONFIG.vocab_size, (1, 9), generator=torch.Generator().manual_seed(1)
    )
    _, cache = model.prefill(prompt[:, :8])
    a, _ = prefill_with_prefix(model, prompt[:, 8:], cache)
    b, _ = model.decode_step(prompt[:, 8], cache)
    assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


def test_prefill_with_prefix_bad_inputs(model):
    """Bad inputs raise errors naming the parameter."""
    _, cache = model.prefill(torch.randint(0, CONFIG.vocab_size, (1, 5)))
    good = torch.randint(0, CONFIG.vocab_size, (1, 3))
    with pytest.raises(TypeError, match="model"):
        prefill_with_prefix("gpt", good, cache)
    with pytest.raises(TypeError, match="suffix"):
        prefill_with_prefix(model, [1, 2, 3], cache)
    with pytest.raises(TypeError, match="suffix"):
        prefill_with_prefix(model, torch.zeros(1, 3), cache)
    with pytest.raises(ValueError, match="suffix"):
        prefill_with_prefix(model, torch.zeros(1, 0, dtype=torch.long), cache)
    with pytest.raises(ValueError, match="prefix_cache"):
        prefill_with_prefix(model, good, cache[:1])
    with pytest.raises(ValueError, match="prefix_cache"):
        prefill_with_prefix(model, torch.randint(0, CONFIG.vocab_size, (2, 3)), cache)
    with pytest.raises(ValueError, match="prefix_cache"):
        prefill_with_prefix(model, good, [(k[:, :1], v[:, :1]) for k, v in cache])
    with pytest.raises(ValueError, match="tokens"):
        prefix_of_cache(cache, 6)
    with pytest.raises(ValueError, match="tokens"):
        prefix_of_cache(cache, 0)


# ---------------------------------------------------------------------------
# replay_prefill
# ---------------------------------------------------------------------------

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
    replay = replay_prefill(tiny_trace, hierarchy, MODEL, "h800", n_gpus=n_gpus)
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
            MODEL, int(tiny_trace.input_lengths[r]), "h800", n_gpus=n_gpus
        )
        assert replay.no_cache_s[r] == pytest.approx(no_cache, rel=1e-12)


def test_replay_tier_split_matches_cachesim(tiny_trace):
    """Served fractions equal cachesim.tier_hit_fractions (same inclusive LRU hierarchy) and sum to 1."""
    hierarchy = _hierarchy(1024, 4096, 16384)
    replay = replay_prefill(
        cachesim.stack_distances(tiny_trace), hierarchy, MODEL, "h800"
    )
    expected = tiers.trace_fractions(tiny_trace, hierarchy, MODEL)
    assert_allclose(replay.served_fractions(), expected, rtol=1e-12, atol=1e-15)
    assert replay.served_fractions().sum() == pytest.approx(1.0)
    assert replay.cached_tokens.sum(axis=1).max() <= replay.input_tokens.max()
    assert np.all(replay.cached_tokens.sum(axis=1) <= replay.input_tokens)
    assert (
        isinstance(replay, ReplayedPrefill)
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
        replay = replay_prefill(tiny_trace, hierarchy, MODEL, "h800", n_gpus=8)
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
    replay = replay_prefill(trace, _hierarchy(512, 1024, 4096), MODEL, "h800")
    assert_allclose(replay.serial_s, replay.no_cache_s, rtol=1e-12)
    assert replay.saved_fraction() == pytest.approx(0.0, abs=1e-12)
    assert not replay.fetched.any()


def test_replay_bad_inputs(tiny_trace):
    """Bad inputs raise errors naming the parameter."""
    good = _hierarchy(1024, 4096, 16384)
    with pytest.raises(TypeError, match="trace"):
        replay_prefill("tiny", good, MODEL, "h800")
    with pytest.raises(ValueError, match="tier_list"):
        replay_prefill(tiny_trace, [], MODEL, "h800")
    with pytest.raises(TypeError, match=r"tier_list\[1\]"):
        replay_prefill(tiny_trace, [good[0], "DRAM"], MODEL, "h800")
    with pytest.raises(ValueError, match="tier_list"):
        replay_prefill(tiny_trace, [good[1], good[0]], MODEL, "h800")
    with pytest.raises(ValueError, match="n_gpus"):
        replay_prefill(tiny_trace, good, MODEL, "h800", n_gpus=0)
    with pytest.raises(ValueError, match="mfu"):
        replay_prefill(tiny_trace, good, MODEL, "h800", mfu=1.5)
    with pytest.raises(ValueError, match="block_tokens"):
        replay_prefill(
            cachesim.stack_distances(tiny_trace), good, MODEL, "h800", block_tokens=1024
        )
    with pytest.raises(KeyError):
        replay_prefill(tiny_trace, good, "no-such-model", "h800")
    assert math.isfinite(
        replay_prefill(tiny_trace, good, MODEL, "h800").saved_fraction()
    )
