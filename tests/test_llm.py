"""Tests of :mod:`helpers.llm`: parameter counts, KV-cache sizes, prefill and decode costs.

Model shapes come from each model's published ``config.json`` on Hugging Face
(meta-llama/Llama-2-{7b,13b,70b}-hf, meta-llama/Meta-Llama-3-{8B,70B}); papers:
Touvron et al. 2023 (touvron2023llama2), Grattafiori et al. 2024
(grattafiori2024llama3); grouped-query attention: Ainslie et al. 2023 (ainslie2023gqa).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from toy_models import TINY

from helpers import inference, llm
from helpers.llm import (
    attention_flops,
    decode_cost,
    get_model,
    kv_cache_bytes,
    kv_cache_bytes_per_token,
    linear_flops_per_token,
    param_count,
    prefill_cost,
    weight_bytes,
)
from helpers.roofline import bound


def test_attention_and_mlp_weights_split_a_block_in_units_of_d_squared():
    """Llama-3-70B (d = 8192, 8 KV heads of 128, d_ff = 28,672): W_Q and W_O are d^2 each, W_K and
    W_V d^2 / 8 each, so attention is 2.25 d^2; the gated MLP is 3 * 3.5 d^2 = 10.5 d^2; together
    they are the block's weights."""
    m = llm.get_model("llama-3-70b")
    d2 = m.d_model**2
    assert m.attention_weights() == 2.25 * d2
    assert m.mlp_weights() == 10.5 * d2
    assert m.layer_weights() == m.attention_weights() + m.mlp_weights()


def test_ungated_mlp_has_two_matrices():
    """Without gating the MLP is up and down only: 2 d d_ff."""
    m = llm.ModelConfig("plain", 2, 64, 4, 4, 16, 256, 100, gated_mlp=False)
    assert m.mlp_weights() == 2 * 64 * 256


def test_attention_crossover_keys_llama2_7b():
    """Llama-2-7B: 2 * 32 * (4 * 4096^2 + 3 * 4096 * 11008) = 12,952,010,752 FLOP of matmuls per
    token; a key costs 4 * 32 * 4096 = 524,288 FLOP of attention; they are equal at 24,704 keys."""
    keys = llm.attention_crossover_keys("llama-2-7b")
    assert keys == 24_704
    assert llm.attention_flops("llama-2-7b", keys) == pytest.approx(
        llm.linear_flops_per_token("llama-2-7b")
    )


def test_attention_crossover_grows_with_the_mlp_not_the_kv_heads():
    """GQA shrinks only W_K and W_V, so Llama-3-70B's crossover is 2 * 12.75 d^2 / (4 d) = 6.375 d
    = 52,224 keys."""
    assert llm.attention_crossover_keys("llama-3-70b") == pytest.approx(6.375 * 8192)


# Parameter counts as published (the safetensors totals / model cards on Hugging Face).
PUBLISHED_PARAMS = {
    "llama-2-7b": 6_738_415_616,
    "llama-2-13b": 13_015_864_320,
    "llama-2-70b": 68_976_648_192,
    "llama-3-8b": 8_030_261_248,
    "llama-3-70b": 70_553_706_496,
}


def _by_hand(layers, d, heads, kv_heads, head_dim, d_ff, vocab):
    """Llama parameter count written out independently of the module:
    untied embedding + lm_head (2 V d); per layer q and o (2 d * H h), k and v (2 d * KV h),
    SwiGLU gate/up/down (3 d d_ff) and two RMSNorm weights (2 d); one final RMSNorm (d)."""
    per_layer = (
        2 * d * heads * head_dim + 2 * d * kv_heads * head_dim + 3 * d * d_ff + 2 * d
    )
    return 2 * vocab * d + layers * per_layer + d


def test_param_counts_match_published():
    """Each model's count equals the published figure.

    Derivation for Llama-2-7B (config: 32 layers, d 4096, 32 heads, d_ff 11008, vocab 32000):
    2*32000*4096 = 262,144,000 (embed + lm_head) + 32 * (4*4096^2 + 3*4096*11008 + 2*4096)
    = 32 * 202,383,360 = 6,476,267,520, + 4096 (final norm) = 6,738,415,616.
    Llama-2-70B and Llama-3-70B use GQA with 8 KV heads (k/v are 8192 x 1024); Llama-3 has a
    128,256-token vocabulary, which is why Llama-3-8B has 8.03 B parameters, not ~7.
    """
    for name, expected in PUBLISHED_PARAMS.items():
        assert param_count(name) == expected, name
    assert (
        _by_hand(32, 4096, 32, 32, 128, 11008, 32000) == PUBLISHED_PARAMS["llama-2-7b"]
    )
    assert (
        _by_hand(40, 5120, 40, 40, 128, 13824, 32000) == PUBLISHED_PARAMS["llama-2-13b"]
    )
    assert (
        _by_hand(80, 8192, 64, 8, 128, 28672, 32000) == PUBLISHED_PARAMS["llama-2-70b"]
    )
    assert (
        _by_hand(32, 4096, 32, 8, 128, 14336, 128256) == PUBLISHED_PARAMS["llama-3-8b"]
    )
    assert (
        _by_hand(80, 8192, 64, 8, 128, 28672, 128256) == PUBLISHED_PARAMS["llama-3-70b"]
    )


def test_weight_bytes():
    """Weights in bf16 take 2 bytes per parameter (Llama-2-7B: 13.48 GB), fp8 one."""
    assert weight_bytes("llama-2-7b") == 2 * PUBLISHED_PARAMS["llama-2-7b"]
    assert weight_bytes("llama-2-7b", dtype="fp8") == PUBLISHED_PARAMS["llama-2-7b"]
    assert_allclose(weight_bytes("llama-2-7b") / 1e9, 13.48, rtol=1e-3)


def test_kv_bytes_per_token_published_models():
    """KV bytes per token = 2 (K and V) * layers * kv_heads * head_dim * bytes.

    Llama-2-70B bf16: 2*80*8*128*2 = 327,680 (GQA-8); Llama-2-7B: 2*32*32*128*2 = 524,288 (MHA) —
    the 10x smaller model has the larger per-token cache. fp8 halves both.
    """
    assert kv_cache_bytes_per_token("llama-2-70b") == 327_680
    assert kv_cache_bytes_per_token("llama-2-7b") == 524_288
    assert kv_cache_bytes_per_token("llama-3-8b") == 2 * 32 * 8 * 128 * 2
    for name in PUBLISHED_PARAMS:
        assert (
            kv_cache_bytes_per_token(name, dtype="fp8")
            == kv_cache_bytes_per_token(name, dtype="bf16") / 2
        )
        assert kv_cache_bytes_per_token(
            name, dtype="fp32"
        ) == 2 * kv_cache_bytes_per_token(name, dtype="bf16")


def test_mha_gqa_mqa_kv_sizes():
    """Same model with 32 (MHA), 8 (GQA) and 1 (MQA) KV heads: KV cache in ratio 32 : 8 : 1,
    and the k/v projection weights shrink with it (Ainslie et al. 2023)."""
    base = get_model("llama-2-7b")
    mha, gqa, mqa = (replace(base, name=f"kv{k}", n_kv_heads=k) for k in (32, 8, 1))
    sizes = [kv_cache_bytes_per_token(m) for m in (mha, gqa, mqa)]
    assert sizes == [524_288, 524_288 / 4, 524_288 / 32]
    assert (mha.gqa_group, gqa.gqa_group, mqa.gqa_group) == (1, 4, 32)
    assert param_count(mha) - param_count(gqa) == 32 * 2 * 4096 * (32 - 8) * 128
    assert param_count(mha) > param_count(gqa) > param_count(mqa)


def test_tiny_model_counts_by_hand():
    """Tiny config (2 layers, d 8, 2 heads of 4, 1 KV head, d_ff 16, vocab 10), every number by hand:

    * q, o: 8x8 each = 128; k, v: 8x4 each = 64; gated MLP: 3*8*16 = 384 -> 576 weights per layer;
    * params: 2*10*8 (embed + head) + 2*(576 + 2*8) + 8 = 160 + 1184 + 8 = 1352;
    * KV per token (bf16): 2 * 2 layers * 4 * 2 bytes = 32;
    * linear FLOP per token: 2 * 2 layers * 576 = 2304.
    """
    assert (TINY.q_dim, TINY.kv_dim, TINY.gqa_group) == (8, 4, 2)
    assert TINY.layer_weights() == 576
    assert param_count(TINY) == 1352
    assert kv_cache_bytes_per_token(TINY) == 32
    assert linear_flops_per_token(TINY) == 2304
    assert param_count(replace(TINY, tied_embeddings=True)) == 1352 - 80
    assert replace(TINY, gated_mlp=False).layer_weights() == 576 - 128


def test_tiny_prefill_by_hand():
    """Prefill of 3 tokens (batch 1, bf16) on the tiny model.

    FLOP: 3 * 2304 (linear) + causal attention 4 * 2 layers * q_dim 8 * (3*4/2 = 6 pairs) = 384
    + lm_head for the last token 2*8*10 = 160 -> 7456.
    Bytes: block weights 2*576*2 = 2304 + lm_head 10*8*2 = 160 + embedding rows 3*8*2 = 48
    + KV written 3*32 = 96 -> 2608. Batch 2 doubles FLOP and the per-token bytes only.
    """
    c = prefill_cost(TINY, 3)
    assert (c.flops, c.bytes) == (7456.0, 2608.0)
    c2 = prefill_cost(TINY, 3, batch=2)
    assert c2.flops == 2 * 7456
    assert c2.bytes == 2304 + 160 + 2 * (48 + 96)


def test_tiny_decode_by_hand():
    """Decode step, context 5, batch 2, bf16, tiny model.

    FLOP per sequence: 2304 (linear) + 4*2*8*(5 + 1 keys) = 384 (attention) + 160 (lm_head) = 2848; x2 = 5696.
    Bytes: weights 2304 + lm_head 160 (shared) + 2 sequences * (embedding 16 + KV (5 + 1)*32 = 192) = 2880.
    """
    c = decode_cost(TINY, context=5, batch=2)
    assert (c.flops, c.bytes) == (5696.0, 2880.0)
    empty = decode_cost(TINY, context=0)
    assert empty.flops == 2304 + 4 * 2 * 8 * 1 + 160


@pytest.mark.parametrize("batch", [1, 2, 4, 8, 16, 32, 64])
def test_decode_intensity_about_batch(batch):
    """At small context, decode reads every weight once per step and does 2 FLOP per weight per
    sequence: intensity ≈ 2B/2 = B FLOP/byte in bf16, far below an H100's ridge (295) -> memory-bound."""
    for name in ("llama-2-7b", "llama-3-70b"):
        c = decode_cost(name, context=16, batch=batch)
        assert_allclose(c.intensity, batch, rtol=0.05)
        assert bound(c.flops, c.bytes, "H100 SXM", dtype="bf16") == "memory"


def test_decode_long_context_stays_memory_bound():
    """At long context the KV read dominates; per-sequence intensity falls toward the attention's ~1-8 FLOP/byte,
    so a larger batch no longer raises intensity in proportion."""
    short = decode_cost("llama-2-7b", context=16, batch=64).intensity
    long = decode_cost("llama-2-7b", context=32768, batch=64).intensity
    assert long < short / 4


def test_prefill_intensity_grows_with_tokens():
    """Prefill reuses each weight for every token: intensity grows with the prompt length, crossing the
    H100 bf16 ridge (295 FLOP/byte) within a few hundred tokens for Llama-2-7B (compute-bound)."""
    tokens = [1, 16, 128, 1024, 4096]
    intensities = [prefill_cost("llama-2-7b", t).intensity for t in tokens]
    assert all(a < b for a, b in zip(intensities, intensities[1:]))
    big = prefill_cost("llama-2-7b", 4096)
    assert bound(big.flops, big.bytes, "H100 SXM", dtype="bf16") == "compute"


@given(st.integers(1, 4096), st.integers(1, 64))
def test_prefill_flops_superlinear_decode_linear(tokens, batch):
    """Property: prefill FLOP scale exactly with batch and grow at least linearly in tokens (causal attention adds t^2);
    decode FLOP scale exactly with batch."""
    one = prefill_cost(TINY, tokens)
    assert prefill_cost(TINY, tokens, batch=batch).flops == batch * one.flops
    assert (
        prefill_cost(TINY, tokens + 1).flops
        > one.flops * (tokens + 1) / tokens * (1 - 1e-12) - 160
    )
    assert (
        decode_cost(TINY, tokens, batch=batch).flops
        == batch * decode_cost(TINY, tokens).flops
    )


def test_get_model_aliases():
    """Names are case-insensitive, and '_' or spaces read as '-'; a ModelConfig passes through."""
    for spelling in ("Llama-2-7B", "llama_2_7b", " LLAMA 2 7B ", "llama-2-7b"):
        assert get_model(spelling) is get_model("llama-2-7b")
    assert get_model(TINY) is TINY
    assert set(PUBLISHED_PARAMS) | {"deepseek-v3"} <= {m.name for m in llm.models()}
    for m in llm.models():
        assert m.source.startswith("https://huggingface.co/")


def test_get_model_unknown():
    """An unknown model raises KeyError naming ``model`` and the choices; a non-string TypeError."""
    with pytest.raises(KeyError, match="model"):
        get_model("gpt-5")
    with pytest.raises(TypeError, match="model"):
        get_model(7)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "kwargs, param",
    [
        ({"n_layers": 0}, "n_layers"),
        ({"d_model": -8}, "d_model"),
        ({"n_heads": 3, "n_kv_heads": 2}, "n_heads"),
        ({"n_kv_heads": 0}, "n_kv_heads"),
        ({"head_dim": 2.5}, "head_dim"),
        ({"d_ff": "16"}, "d_ff"),
        ({"vocab_size": True}, "vocab_size"),
    ],
)
def test_model_config_validates(kwargs, param):
    """A config with a non-positive, fractional, string or bool size, or heads not a multiple of KV heads,
    raises naming the field."""
    with pytest.raises((ValueError, TypeError), match=param):
        replace(TINY, **kwargs)


def test_cost_bad_input():
    """Bad token counts, contexts, batches and dtypes raise naming the parameter; context 0 is allowed."""
    with pytest.raises(ValueError, match="tokens"):
        prefill_cost(TINY, 0)
    with pytest.raises(TypeError, match="tokens"):
        prefill_cost(TINY, "3")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="batch"):
        prefill_cost(TINY, 3, batch=0)
    with pytest.raises(ValueError, match="context"):
        decode_cost(TINY, -1)
    with pytest.raises(TypeError, match="context"):
        decode_cost(TINY, float("nan"))
    with pytest.raises(TypeError, match="batch"):
        decode_cost(TINY, 1, batch=1.5)
    with pytest.raises(KeyError, match="dtype"):
        kv_cache_bytes_per_token(TINY, dtype="fp12")
    assert math.isfinite(decode_cost(TINY, 0).intensity)


# --- KV cache of whole sequences ---------------------------------------------------------


def test_kv_cache_bytes_by_hand():
    """batch * tokens * KV bytes per token. Llama-3-70B bf16, one 4,096-token sequence: 4096 * 327,680
    = 1,342,177,280 bytes (1.34 GB); 3 sequences thrice that; fp8 half; the tiny model 5 tokens x 32 = 160."""
    assert kv_cache_bytes("llama-3-70b", 4096) == 1_342_177_280
    assert kv_cache_bytes("llama-3-70b", 4096, batch=3) == 3 * 1_342_177_280
    assert kv_cache_bytes("llama-3-70b", 4096, dtype="fp8") == 1_342_177_280 / 2
    assert kv_cache_bytes(TINY, 5) == 160


@given(
    st.integers(1, 10**6),
    st.integers(1, 10**6),
    st.integers(1, 64),
    st.sampled_from(["llama-2-7b", "llama-3-70b"]),
)
def test_kv_cache_bytes_adds_up(a, b, batch, model):
    """Property: sequences of a and b tokens hold as much as one of a + b tokens; a batch holds batch times one."""
    assert kv_cache_bytes(model, a) + kv_cache_bytes(model, b) == kv_cache_bytes(
        model, a + b
    )
    assert kv_cache_bytes(model, a, batch=batch) == batch * kv_cache_bytes(model, a)


def test_kv_cache_bytes_bad_input():
    """No tokens, no sequences, an unknown dtype or a positional option raise, naming the parameter."""
    with pytest.raises(ValueError, match="tokens"):
        kv_cache_bytes(TINY, 0)
    with pytest.raises(ValueError, match="batch"):
        kv_cache_bytes(TINY, 4, batch=0)
    with pytest.raises(KeyError, match="dtype"):
        kv_cache_bytes(TINY, 4, dtype="fp64")
    with pytest.raises(TypeError):
        kv_cache_bytes(TINY, 4, 2)  # type: ignore[misc]


# --- attention FLOP ------------------------------------------------------------------------


def test_attention_flops_by_hand():
    """4 * n_layers * q_dim FLOP per query-key pair (2 q_dim for the score, 2 q_dim for the weighted value).

    Tiny model: 4 * 2 * 8 = 64 per pair, so 6 pairs (a causal prefill of 3 tokens) cost 384.
    Llama-3-70B: 4 * 80 * 8192 = 2,621,440 per pair; a decode step over 4,096 cached tokens has 4,097 pairs:
    10,740,039,680 FLOP. Vectorised: an array of pair counts gives an array.
    """
    assert attention_flops(TINY, 6) == 384.0
    assert attention_flops("llama-3-70b", 4097) == 10_740_039_680
    assert attention_flops(TINY, 0) == 0.0
    out = attention_flops(TINY, np.array([0, 1, 6]))
    assert isinstance(out, np.ndarray) and out.tolist() == [0.0, 64.0, 384.0]
    assert isinstance(attention_flops(TINY, 6), float)


@pytest.mark.parametrize(
    "bad, error",
    [
        (-1, ValueError),
        (float("nan"), ValueError),
        (float("inf"), ValueError),
        ([1, -2], ValueError),
        ("6", TypeError),
        (True, TypeError),
        (None, TypeError),
    ],
)
def test_attention_flops_bad_input(bad, error):
    """Negative, NaN or infinite pair counts, strings, bools and None raise, naming ``pairs``."""
    with pytest.raises(error, match="pairs"):
        attention_flops(TINY, bad)


@given(
    st.integers(0, 100_000),
    st.integers(1, 64),
    st.sampled_from(["llama-2-7b", "llama-3-70b"]),
)
def test_decode_cost_uses_attention_flops(context, batch, model):
    """Property: one more cached token adds attention_flops(1) per sequence to a decode step, and nothing else."""
    longer = decode_cost(model, context + 1, batch=batch).flops
    added = longer - decode_cost(model, context, batch=batch).flops
    assert_allclose(added, batch * attention_flops(model, 1), rtol=1e-6)


@given(st.integers(1, 100_000), st.sampled_from(["llama-2-7b", "llama-3-70b"]))
def test_prefill_cost_uses_attention_flops(tokens, model):
    """Property: a prefill's FLOP are its tokens' weight matmuls, attention over t (t + 1) / 2 pairs and one
    lm_head (2 d V); cachesim's saved FLOP of an h-token hit is the same count without the lm_head."""
    m = get_model(model)
    lm_head = 2.0 * m.d_model * m.vocab_size
    expected = (
        tokens * linear_flops_per_token(m)
        + attention_flops(m, tokens * (tokens + 1) / 2)
        + lm_head
    )
    assert_allclose(prefill_cost(m, tokens).flops, expected, rtol=1e-12)
    assert_allclose(llm.prefill_flops_saved(m, tokens), expected - lm_head, rtol=1e-12)


# --- the catalog ------------------------------------------------------------------------------


def test_nominal_params_are_the_published_sizes():
    """Each model's nominal size is the one in its name; the exact counts above round to it within 4 %."""
    nominal = {name: get_model(name).nominal_params for name in PUBLISHED_PARAMS}
    assert nominal == {
        "llama-2-7b": 7e9,
        "llama-2-13b": 13e9,
        "llama-2-70b": 70e9,
        "llama-3-8b": 8e9,
        "llama-3-70b": 70e9,
    }
    for name, count in PUBLISHED_PARAMS.items():
        assert abs(count / nominal[name] - 1) < 0.04, name
    assert TINY.nominal_params is None


@pytest.mark.parametrize("field", ["gated_mlp", "tied_embeddings"])
@pytest.mark.parametrize("bad", ["yes", 1, 0, None])
def test_model_config_booleans_must_be_bool(field, bad):
    """gated_mlp and tied_embeddings must be True or False: "yes" or 1 would silently change the counts."""
    with pytest.raises(TypeError, match=field):
        replace(TINY, **{field: bad})


def test_model_config_nominal_params_must_be_positive():
    """A nominal size must be a positive number (or None)."""
    with pytest.raises(ValueError, match="nominal_params"):
        replace(TINY, nominal_params=-7e9)
    with pytest.raises(TypeError, match="nominal_params"):
        replace(TINY, nominal_params="7B")


# --- DeepSeek-V3: multi-head latent attention and mixture of experts --------------------------------
# config.json (huggingface.co/deepseek-ai/DeepSeek-V3): 61 layers, hidden 7168, 128 heads, q_lora_rank 1536,
# kv_lora_rank 512, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128, intermediate 18432 (dense),
# moe_intermediate 2048, 256 routed + 1 shared experts, 8 per token, first_k_dense_replace 3, vocab 129,280.
# Technical report (arXiv:2412.19437): 671 B total, 37 B activated per token; the release notes give the
# activated count as 36.6 B "including 0.9 B for the output head" (main model, no MTP module).


def _deepseek_v3_by_hand():
    d, h, v = 7168, 128, 129_280
    attention = (
        d * 1536  # W_DQ
        + 1536 * h * (128 + 64)  # W_UQ (non-rotary and rotary query parts)
        + d * (512 + 64)  # W_DKV and the shared rotary key
        + 512 * h * (128 + 128)  # W_UK and W_UV
        + h * 128 * d  # W_O
    )
    norms = 2 * d + 1536 + 512  # two RMSNorms, the query and KV latent norms
    dense_mlp = 3 * d * 18_432
    expert = 3 * d * 2048
    router = d * 256 + 256  # gate matrix and its bias
    moe_all = 257 * expert + router
    moe_active = 9 * expert + router
    blocks = 61 * (attention + norms) + 3 * dense_mlp
    total = 2 * v * d + blocks + 58 * moe_all + d
    active = v * d + blocks + 58 * moe_active + d  # no input embedding table
    return total, active


def test_deepseek_v3_parameters_by_hand_and_published():
    """671.0 B total and 36.6 B active, written out from config.json; 671 B and 36.6 B published."""
    total, active = _deepseek_v3_by_hand()
    assert llm.param_count("deepseek-v3") == total
    assert llm.active_param_count("deepseek-v3") == active
    assert round(total / 1e9) == 671
    assert round(active / 1e8) == 366
    # dense models: active = total less the input embedding table
    m = get_model("llama-3-70b")
    assert (
        llm.active_param_count(m)
        == PUBLISHED_PARAMS["llama-3-70b"] - m.vocab_size * m.d_model
    )


def test_deepseek_v3_kv_cache_is_latent():
    """MLA caches kv_lora_rank + qk_rope_head_dim = 576 elements per layer: 61 * 576 * 2 = 70,272 B/token in bf16,
    4.66x less than Llama-3-70B's 327,680 at about 10x the parameters."""
    assert kv_cache_bytes_per_token("deepseek-v3") == 70_272
    assert kv_cache_bytes_per_token("deepseek-v3", dtype="fp8") == 35_136
    assert get_model("deepseek-v3").attention_kind == "MLA"
    assert [get_model(n).attention_kind for n in ("llama-2-7b", "llama-3-8b")] == [
        "MHA",
        "GQA",
    ]


def test_expected_experts_touched_by_hand():
    """E (1 - (1 - k/E)^b) with E = 256, k = 8: b = 1 -> 8; b = 8 -> 256 (1 - (31/32)^8) = 57.42;
    it never exceeds E and a dense model has none."""
    assert llm.expected_experts_touched("deepseek-v3", 1) == pytest.approx(8.0)
    assert llm.expected_experts_touched("deepseek-v3", 8) == pytest.approx(
        256 * (1 - (31 / 32) ** 8)
    )
    assert llm.expected_experts_touched("deepseek-v3", 8) == pytest.approx(
        57.42, abs=0.01
    )
    many = llm.expected_experts_touched("deepseek-v3", np.array([0, 100, 10_000]))
    assert many[0] == 0 and many[1] < 256 and many[2] == pytest.approx(256)
    assert llm.expected_experts_touched("llama-3-70b", 64) == 0.0
    with pytest.raises(ValueError, match="tokens"):
        llm.expected_experts_touched("deepseek-v3", -1)


@settings(max_examples=30)
@given(st.floats(0, 1e5), st.floats(0, 1e5))
def test_experts_touched_grow_but_less_than_linearly(a, b):
    """Property: more tokens touch more experts, never more than all of them, and two batches together
    touch no more than each separately (sub-additive, concave)."""
    f = lambda t: llm.expected_experts_touched("deepseek-v3", t)  # noqa: E731
    lo, hi = sorted((a, b))
    assert f(lo) <= f(hi) + 1e-9 <= 256 + 1e-9
    assert f(a + b) <= f(a) + f(b) + 1e-9


def test_moe_decode_reads_the_experts_the_batch_touches():
    """A decode step reads the shared part plus 58 layers x (1 shared + touched) experts; FLOP follow the
    active parameters, so batch 1 reads ~37 B of weights and a large batch nearly all 671 B."""
    m = get_model("deepseek-v3")
    one = llm.weights_read_bytes(m, 1)
    assert one == pytest.approx(
        2 * llm.active_param_count(m) - 2 * (61 * (2 * 7168 + 2048) + 7168)
    )
    big = llm.weights_read_bytes(m, 100_000)
    assert big == pytest.approx(
        2
        * (
            llm.param_count(m)
            - m.vocab_size * m.d_model
            - 61 * (2 * 7168 + 2048)
            - 7168
        ),
        rel=1e-6,
    )
    c1 = llm.decode_cost(m, 1000, batch=1)
    c64 = llm.decode_cost(m, 1000, batch=64)
    assert c64.flops == pytest.approx(64 * c1.flops)
    assert c64.bytes < 64 * c1.bytes


def test_moe_critical_batch_by_hand():
    """DeepSeek-V3, 16-token context, H100 bf16 (ridge 989.4e12 / 3.35e12 = 295.3): at the crossing b*,
    b* f1 / ridge = W(b*) + b* k, with f1 the FLOP per sequence; every expert is touched by then, so
    b* ~ ridge W_all / (f1 - ridge k), far above Llama-3-70B's ~299 although its active size is half."""
    m = get_model("deepseek-v3")
    crit = inference.critical_decode_batch(m, 16, "h100")
    ridge = 989.4e12 / 3.35e12
    one = llm.decode_cost(m, 16)
    per_seq = one.bytes - llm.weights_read_bytes(m, 1)
    w_at = llm.weights_read_bytes(m, crit)
    assert crit * one.flops / ridge == pytest.approx(w_at + crit * per_seq, rel=1e-5)
    w_all = llm.weights_read_bytes(m, 1e9)
    assert crit == pytest.approx(
        ridge * w_all / (one.flops - ridge * per_seq), rel=0.01
    )
    assert crit > 15 * inference.critical_decode_batch("llama-3-70b", 16, "h100")


def test_speculative_decoding_raises_intensity():
    """s query tokens per step: FLOP ~ s-fold, bytes ~ unchanged. Llama-3-70B at 4,096 cached tokens,
    batch 1: intensity grows almost 4x from s = 1 to 4; with s = 1 the cost is the plain decode step."""
    one = llm.decode_cost("llama-3-70b", 4096)
    assert one == llm.decode_cost("llama-3-70b", 4096, query_tokens=1)
    four = llm.decode_cost("llama-3-70b", 4096, query_tokens=4)
    assert 3.99 < four.flops / one.flops < 4.01
    assert 1.0 < four.bytes / one.bytes < 1.001
    assert 3.99 < four.intensity / one.intensity < 4.01


# ---------------------------------------------------------------------------
# compute saved
# ---------------------------------------------------------------------------


@given(st.integers(1, 40_000), st.sampled_from(["llama-3-70b", "llama-2-7b"]))
def test_prefill_flops_saved_is_prefix_prefill_without_lm_head(h, model):
    """Saved FLOP for an h-token cached prefix = prefill_cost(h) minus the last token's lm_head (helpers.llm rules)."""
    m = llm.get_model(model)
    expected = llm.prefill_cost(model, h).flops - 2.0 * m.d_model * m.vocab_size
    assert_allclose(llm.prefill_flops_saved(model, h), expected, rtol=1e-12)


def test_prefill_flops_saved_is_full_minus_suffix():
    """Full prefill minus the suffix-only cost (its tokens attend to all L keys) equals the saved FLOP."""
    m = llm.get_model("llama-3-70b")
    L, h = 12_000, 5_120
    attention = lambda pairs: 4.0 * m.n_layers * m.q_dim * pairs  # noqa: E731
    full = L * llm.linear_flops_per_token(m) + attention(L * (L + 1) / 2)
    suffix = (L - h) * llm.linear_flops_per_token(m) + attention(
        L * (L + 1) / 2 - h * (h + 1) / 2
    )
    assert_allclose(
        llm.prefill_flops_saved(m, [0, h]), [0.0, full - suffix], rtol=1e-12
    )
    with pytest.raises(ValueError, match="hit_tokens"):
        llm.prefill_flops_saved(m, [-1])
    with pytest.raises(KeyError, match="model"):
        llm.prefill_flops_saved("gpt-5", [1])
