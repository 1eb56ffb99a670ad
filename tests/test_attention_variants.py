"""Sliding-window, linear-hybrid and sparse attention: cache bytes, bytes read, c(n), prefix reuse (II-15)."""

import pytest

from helpers import attention_variants as av
from helpers import llm


def test_window_layers_stop_growing_at_the_window():
    m = av.get_mix("gpt-oss-120b")
    per_layer = 2 * 8 * 64 * 2
    assert m.full_bytes_per_token == per_layer
    # At the window, every layer holds the same tokens: full-attention bytes.
    assert av.cache_bytes(m, 128) == pytest.approx(36 * 128 * per_layer)
    # Past it, only the 18 full layers grow.
    grow = av.cache_bytes(m, 10_128) - av.cache_bytes(m, 128)
    assert grow == pytest.approx(10_000 * 18 * per_layer)
    # So long contexts cost half the full-attention bytes per token.
    assert av.savings_vs_full(m, 131_072) == pytest.approx(2.0, rel=0.01)


def test_linear_layers_hold_a_constant_state():
    m = av.get_mix("Qwen3-Next-80B-A3B")
    state = 36 * m.linear_state_bytes
    assert state == pytest.approx(36 * 2 * (32 * 128 * 128 + 3 * 8192))
    assert av.cache_bytes(m, 1) == pytest.approx(state + 12 * 2 * 2 * 256 * 2)
    # The savings tend to all-layers / full-layers = 48 / 12 = 4 as the state amortises.
    assert 3.9 < av.savings_vs_full(m, 1_000_000) < 4.0
    assert av.savings_vs_full(m, 4096) < av.savings_vs_full(m, 32_768)


def test_sparse_attention_reads_top_k_but_stores_everything():
    m = av.get_mix("DeepSeek-V3.2")
    ds = llm.kv_cache_bytes_per_token("deepseek-v3")
    # Same latent as DeepSeek-V3, plus the indexer's key: stores more per token.
    assert av.cache_bytes_per_token(m, 50_000) == pytest.approx(ds + 61 * 132)
    # Below top-k it reads everything; above, only top-k latents plus every index key.
    assert av.decode_read_bytes(m, 1000) == pytest.approx(1000 * (ds + 61 * 132))
    n = 131_072
    assert av.decode_read_bytes(m, n) == pytest.approx(61 * (2048 * 1152 + n * 132))
    assert av.decode_read_bytes(m, n) < av.cache_bytes(m, n) / 7


def test_recompute_per_byte_rises_when_fewer_bytes_are_stored():
    # Same FLOP, fewer bytes: c(n) of the window model beats a full-attention twin.
    m = av.get_mix("gpt-oss-120b")
    twin = av.AttentionMix(
        name="twin",
        full_layers=36,
        full_bytes_per_token=m.full_bytes_per_token,
        active_params=m.active_params,
        attention_flops_per_key=m.attention_flops_per_key,
    )
    assert av.prefill_flops(twin, 128) == pytest.approx(av.prefill_flops(m, 128))
    assert av.recompute_flops_per_cache_byte(
        m, 32_768
    ) > av.recompute_flops_per_cache_byte(twin, 32_768)
    # Prefill of n tokens, dense: 2 N n + per_key * L * n(n+1)/2.
    n = 100
    assert av.prefill_flops(twin, n) == pytest.approx(
        2 * m.active_params * n + m.attention_flops_per_key * 36 * n * (n + 1) / 2
    )


def test_prefix_reuse_rounds_down_to_state_checkpoints():
    assert (
        av.reusable_prefix_tokens("gpt-oss-120b", 1000, checkpoint_interval=512) == 1000
    )
    assert (
        av.reusable_prefix_tokens("Qwen3-Next-80B-A3B", 1000, checkpoint_interval=512)
        == 512
    )
    assert av.reusable_prefix_tokens("Qwen3-Next-80B-A3B", 1000) == 1000


def test_bad_input_names_the_parameter():
    with pytest.raises(KeyError, match="mix"):
        av.get_mix("llama-9")
    with pytest.raises(ValueError, match="context"):
        av.cache_bytes("gpt-oss-120b", 0)
    with pytest.raises(ValueError, match="checkpoint_interval"):
        av.reusable_prefix_tokens("Qwen3-Next-80B-A3B", 10, checkpoint_interval=0)
    with pytest.raises(ValueError, match="prefix"):
        av.reusable_prefix_tokens("Qwen3-Next-80B-A3B", -1)
