"""Tests for helpers.tinygpt: the model the labs time does the work helpers.llm predicts.

FLOP are counted with ``torch.utils.flop_counter.FlopCounterMode``, which
counts matmuls (``mm``, ``bmm``, ...) at 2 FLOP per multiply-accumulate, the
book's convention; elementwise work (norms, rotary, softmax) is not counted,
and :mod:`helpers.llm` leaves it out too. References: Touvron et al. 2023
(Llama 2: RMSNorm, SwiGLU, rotary) and Ainslie et al. 2023 (GQA).
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from torch.utils.flop_counter import FlopCounterMode

from helpers import llm
from helpers.tinygpt import (
    TinyGPT,
    cache_nbytes,
    cache_tokens,
    prefill_attention_pairs,
    tiny_config,
)


def test_decode_inputs_head_is_the_first_sequences():
    """head(b) views the first b queries and cache rows; attention over it is the first b rows of
    the full batch's attention; b must be between 1 and the batch held."""
    torch = pytest.importorskip("torch")
    from helpers.tinygpt import TinyGPT, tiny_config

    model = TinyGPT(tiny_config())
    inputs = model.decode_inputs(4, model.random_kv_cache(4, 16))
    head = inputs.head(2)
    assert head.queries[0].shape[0] == 2 and head.cache[0][0].shape == (2, 2, 16, 32)
    assert (
        head.cache[0][0].data_ptr() == inputs.cache[0][0].data_ptr()
    )  # a view, not a copy
    torch.testing.assert_close(
        model.decode_attention(head), model.decode_attention(inputs)[:2]
    )
    for bad in (0, 5):
        with pytest.raises(ValueError, match="batch"):
            inputs.head(bad)


CONFIG = tiny_config(
    n_layers=2,
    d_model=64,
    n_heads=4,
    n_kv_heads=2,
    head_dim=16,
    d_ff=176,
    vocab_size=128,
)


@pytest.fixture(scope="module")
def model() -> TinyGPT:
    return TinyGPT(CONFIG, seed=1)


def count_flops(fn) -> tuple[float, object]:
    with FlopCounterMode(display=False) as counter:
        result = fn()
    return float(counter.get_total_flops()), result


@settings(max_examples=8, deadline=None)
@given(
    batch=st.integers(1, 3), tokens=st.integers(1, 24), gqa=st.sampled_from([1, 2, 4])
)
def test_prefill_flops_match_llm_up_to_the_masked_triangle(batch, tokens, gqa):
    """Prefill FLOP equal helpers.llm.prefill_cost plus the masked upper triangle.

    helpers.llm counts causal attention (t(t+1)/2 query-key pairs, what a
    causal FlashAttention kernel computes); TinyGPT computes the full t x t
    score matrix and masks it, as plain PyTorch does. The comparable quantity
    is therefore ``counted - 4 * n_layers * q_dim * batch * (t**2 - t(t+1)/2)``,
    which must equal the model's prediction exactly (linear layers, causal
    attention and the last position's lm_head).
    """
    config = tiny_config(
        n_layers=2,
        d_model=64,
        n_heads=4,
        n_kv_heads=4 // gqa,
        head_dim=16,
        d_ff=176,
        vocab_size=128,
    )
    model = TinyGPT(config)
    prompt = torch.randint(0, config.vocab_size, (batch, tokens))
    counted, _ = count_flops(lambda: model.prefill(prompt))
    computed_pairs, causal_pairs = prefill_attention_pairs(tokens)
    masked = (
        4.0 * config.n_layers * config.q_dim * batch * (computed_pairs - causal_pairs)
    )
    assert_allclose(
        counted - masked,
        llm.prefill_cost(config, tokens, batch=batch).flops,
        rtol=1e-12,
    )


@settings(max_examples=8, deadline=None)
@given(batch=st.integers(1, 4), context=st.integers(1, 40))
def test_decode_flops_match_llm_exactly(model, batch, context):
    """A decode step after ``context`` cached tokens costs exactly helpers.llm.decode_cost FLOP (context + 1 keys)."""
    _, cache = model.prefill(torch.randint(0, CONFIG.vocab_size, (batch, context)))
    counted, _ = count_flops(
        lambda: model.decode_step(torch.zeros(batch, dtype=torch.long), cache)
    )
    assert_allclose(
        counted, llm.decode_cost(CONFIG, context, batch=batch).flops, rtol=1e-12
    )


@settings(max_examples=6, deadline=None)
@given(batch=st.integers(1, 8), context=st.integers(1, 64))
def test_decode_parts_split_the_step(model, batch, context):
    """decode_linear does batch * linear_flops_per_token FLOP; decode_attention 4 * L * q_dim * batch * context.

    Together with the lm_head they make up a decode step over ``context`` keys.
    """
    linear, _ = count_flops(lambda: model.decode_linear(batch))
    assert_allclose(linear, batch * llm.linear_flops_per_token(CONFIG), rtol=1e-12)
    inputs = model.decode_inputs(batch, model.random_kv_cache(batch, context))
    attention, _ = count_flops(lambda: model.decode_attention(inputs))
    assert_allclose(
        attention, 4.0 * CONFIG.n_layers * CONFIG.q_dim * batch * context, rtol=1e-12
    )
    lm_head = 2.0 * batch * CONFIG.d_model * CONFIG.vocab_size
    assert_allclose(
        linear + attention + lm_head,
        llm.decode_cost(CONFIG, context - 1, batch=batch).flops,
        rtol=1e-12,
    )


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_kv_cache_bytes_match_llm(dtype):
    """The cache holds llm.kv_cache_bytes of its tokens and sequences in that dtype, and grows by one token per step."""
    model = TinyGPT(CONFIG, dtype=dtype)
    batch, tokens = 3, 10
    logits, cache = model.prefill(torch.randint(0, CONFIG.vocab_size, (batch, tokens)))
    assert cache_tokens(cache) == tokens
    assert cache_nbytes(cache) == llm.kv_cache_bytes(
        CONFIG, tokens, batch=batch, dtype=dtype
    )
    _, cache = model.decode_step(logits.argmax(-1), cache)
    assert cache_nbytes(cache) == llm.kv_cache_bytes(
        CONFIG, tokens + 1, batch=batch, dtype=dtype
    )


@settings(max_examples=6, deadline=None)
@given(tokens=st.integers(1, 20), steps=st.integers(1, 4))
def test_prefill_then_decode_equals_longer_prefill(model, tokens, steps):
    """Decoding after a cached prefix gives the logits of prefilling the whole sequence (the cache is correct)."""
    generator = torch.Generator().manual_seed(tokens * 10 + steps)
    sequence = torch.randint(
        0, CONFIG.vocab_size, (2, tokens + steps), generator=generator
    )
    logits, cache = model.prefill(sequence[:, :tokens])
    for i in range(steps):
        logits, cache = model.decode_step(sequence[:, tokens + i], cache)
    expected, full_cache = model.prefill(sequence)
    assert_allclose(logits.numpy(), expected.numpy(), rtol=1e-4, atol=1e-4)
    for (k, v), (k_full, v_full) in zip(cache, full_cache):
        assert_allclose(k.numpy(), k_full.numpy(), rtol=1e-5, atol=1e-5)
        assert_allclose(v.numpy(), v_full.numpy(), rtol=1e-5, atol=1e-5)


def test_same_seed_same_model_different_seed_different_model():
    """Weights are a function of the seed alone, so two processes can build the same model."""
    prompt = torch.randint(0, CONFIG.vocab_size, (1, 5))
    a, _ = TinyGPT(CONFIG, seed=7).prefill(prompt)
    b, _ = TinyGPT(CONFIG, seed=7).prefill(prompt)
    c, _ = TinyGPT(CONFIG, seed=8).prefill(prompt)
    assert torch.equal(a, b)
    assert not torch.allclose(a, c)


def test_parameter_count_matches_llm():
    """The module's parameters are exactly helpers.llm.param_count (embeddings, blocks with two norms, final norm, lm_head)."""
    model = TinyGPT(CONFIG)
    assert sum(p.numel() for p in model.parameters()) == llm.param_count(CONFIG)


def test_bad_inputs_name_the_parameter(model):
    """Wrong shapes and types raise errors that say which argument is wrong."""
    with pytest.raises(TypeError, match="tokens"):
        model.prefill([1, 2, 3])
    with pytest.raises(ValueError, match="token"):
        _, cache = model.prefill(torch.zeros(1, 3, dtype=torch.long))
        model.decode_step(torch.zeros(1, 2, dtype=torch.long), cache)
    with pytest.raises(ValueError, match="kv_cache"):
        model.decode_step(torch.zeros(1, dtype=torch.long), [])
    with pytest.raises(ValueError, match="context"):
        model.random_kv_cache(1, 0)
    with pytest.raises(ValueError, match="tokens"):
        prefill_attention_pairs(0)
    with pytest.raises(KeyError, match="dtype"):
        TinyGPT(CONFIG, dtype="fp64")
