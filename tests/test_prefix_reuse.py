"""Tests for helpers.prefix_reuse: prefill from a cached prefix (TinyGPT); the trace replay is tested in test_tiers.py.

References: Qin et al. (2025), Mooncake, FAST'25 (fetch-or-recompute per cached prefix);
Mattson et al. (1970) (LRU stack distances, used through helpers.cachesim).
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from helpers import cachesim, tiers, traces
from helpers.prefix_reuse import prefill_with_prefix, prefix_of_cache
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


def test_the_replay_moved_to_tiers_and_its_old_name_warns():
    """``prefix_reuse.replay_prefill`` (its home until the split) still reaches ``tiers.replay_prefill``."""
    from helpers import prefix_reuse

    with pytest.warns(DeprecationWarning, match=r"helpers\.tiers\.replay_prefill"):
        assert prefix_reuse.replay_prefill is tiers.replay_prefill
    with pytest.warns(DeprecationWarning, match="ReplayedPrefill"):
        assert prefix_reuse.ReplayedPrefill is tiers.ReplayedPrefill
