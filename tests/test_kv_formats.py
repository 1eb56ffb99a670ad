"""Tests of the KV-cache storage formats of :mod:`helpers.kv_formats` and the KV-size functions of :mod:`helpers.llm` that take them.

Every expected value is derived by hand in the test's docstring from the
model's shapes (Llama-3-70B: 80 layers, 8 KV heads of 128, so 2 * 80 * 8 * 128 =
163,840 KV elements per token) and each format's published layout.
"""

from __future__ import annotations

import pytest
from numpy.testing import assert_allclose

from helpers import kv_formats, kvcache, llm

L3 = "llama-3-70b"
ELEMENTS = 2 * 80 * 8 * 128  # KV elements per token of Llama-3-70B


def test_bytes_per_element_with_scales():
    """Average bytes per element, scales included.

    fp8 per-tensor: 8 / 8 = 1. int8, fp16 scale + fp16 zero per 128: (8 + 32/128) / 8 = 1.03125.
    NVFP4, one E4M3 scale per 16: (4 + 8/16) / 8 = 0.5625. KIVI int4, fp16 scale + zero per 32:
    (4 + 32/32) / 8 = 0.625. int2: (2 + 1) / 8 = 0.375. bf16 2, fp32 4.
    """
    expected = {
        "fp32": 4.0,
        "fp16": 2.0,
        "bf16": 2.0,
        "fp8": 1.0,
        "int8": 1.03125,
        "fp4": 0.5625,
        "int4": 0.625,
        "int2": 0.375,
    }
    assert {
        k: f.bytes_per_element for k, f in kv_formats.KV_FORMATS.items()
    } == expected


def test_kv_bytes_per_token_by_format():
    """Llama-3-70B per token: bf16 163,840 * 2 = 327,680; fp8 163,840; int4 163,840 * 0.625 = 102,400;
    fp4 163,840 * 0.5625 = 92,160. Without kv_dtype the weights' dtype sets the width, as before."""
    assert llm.kv_cache_bytes_per_token(L3) == 327_680
    assert llm.kv_cache_bytes_per_token(L3, kv_dtype="fp8") == ELEMENTS
    assert llm.kv_cache_bytes_per_token(L3, kv_dtype="int4") == 102_400
    assert llm.kv_cache_bytes_per_token(L3, kv_dtype="FP4") == 92_160
    assert llm.kv_cache_bytes_per_token(L3, dtype="fp8") == ELEMENTS
    assert llm.kv_cache_bytes(L3, 4096, batch=2, kv_dtype="int4") == 2 * 4096 * 102_400


def test_mla_cache_quantizes_the_same_way():
    """DeepSeek-V3 (MLA, 61 layers x 576 elements = 35,136 per token): fp8 35,136 bytes, int4 21,960."""
    assert llm.kv_cache_bytes_per_token("deepseek-v3", kv_dtype="fp8") == 61 * 576
    assert (
        llm.kv_cache_bytes_per_token("deepseek-v3", kv_dtype="int4") == 61 * 576 * 5 / 8
    )


def test_capacity_in_tokens_moves_along_the_hit_rate_curve():
    """100 GB of HBM holds floor(100e9 / 327,680) = 305,175 bf16 tokens of Llama-3-70B, and
    floor(100e9 / 102,400) = 976,562 int4 tokens: 3.2x, not 4x, because of the scales."""
    bf16 = llm.kv_capacity_tokens(L3, 100e9)
    int4 = llm.kv_capacity_tokens(L3, 100e9, kv_dtype="int4")
    assert (bf16, int4) == (305_175, 976_562)
    assert llm.kv_capacity_tokens(L3, 0) == 0
    with pytest.raises(ValueError, match="capacity_bytes"):
        llm.kv_capacity_tokens(L3, -1)


def test_size_ratio():
    """bf16 -> fp8 2x; -> int4 2 / 0.625 = 3.2x; -> fp4 2 / 0.5625 = 3.556x; -> int2 5.333x; fp8 -> int4 1.6x."""
    assert kv_formats.kv_size_ratio("fp8") == 2.0
    assert kv_formats.kv_size_ratio("int4") == 3.2
    assert_allclose(kv_formats.kv_size_ratio("fp4"), 32 / 9, rtol=1e-12)
    assert_allclose(kv_formats.kv_size_ratio("int2"), 16 / 3, rtol=1e-12)
    assert kv_formats.kv_size_ratio("int4", baseline="fp8") == 1.6


def test_recompute_flops_per_kv_byte_is_c_times_d():
    """c * d for Llama-3-70B in bf16: linear FLOP per token 136,902,082,560 / 327,680 bytes = 417,792 FLOP/byte,
    which is Chapter 7's hidden_size_constant (51.0) times d = 8,192. int4 makes each byte 3.2x as costly to
    recompute: 1,336,934.4 FLOP/byte."""
    assert llm.linear_flops_per_token(L3) == 136_902_082_560
    assert llm.recompute_flops_per_kv_byte(L3) == 417_792
    assert_allclose(
        llm.recompute_flops_per_kv_byte(L3),
        kvcache.hidden_size_constant(L3) * llm.get_model(L3).d_model,
        rtol=1e-12,
    )
    assert_allclose(
        llm.recompute_flops_per_kv_byte(L3, kv_dtype="int4"), 417_792 * 3.2, rtol=1e-12
    )


def test_transfer_bytes_with_a_codec():
    """4,096 tokens of Llama-3-70B in fp8: 4,096 x 163,840 = 671,088,640 bytes; a CacheGen-like 4x codec
    on top sends 167,772,160."""
    assert llm.kv_transfer_bytes(L3, 4096, kv_dtype="fp8") == 671_088_640
    assert llm.kv_transfer_bytes(L3, 4096, kv_dtype="fp8", compression=4) == 167_772_160
    with pytest.raises(ValueError, match="compression"):
        llm.kv_transfer_bytes(L3, 4096, compression=0.5)
    with pytest.raises(ValueError, match="compression"):
        llm.kv_transfer_bytes(L3, 4096, compression=0)


def test_bad_kv_dtype_is_named():
    """An unknown format raises KeyError naming kv_dtype and listing the choices; a non-string, TypeError."""
    with pytest.raises(KeyError, match="kv_dtype.*int3.*choose one of"):
        llm.kv_cache_bytes_per_token(L3, kv_dtype="int3")
    with pytest.raises(KeyError, match="kv_dtype"):
        kv_formats.kv_size_ratio("nf4")
    with pytest.raises(TypeError, match="kv_dtype"):
        kv_formats.kv_format(4)  # type: ignore[arg-type]


def test_kv_format_validates_its_fields():
    """A custom format is checked: positive bits and group size, no scale bits without groups."""
    custom = kv_formats.KVFormat("int3", 3, 64, 32, "https://example.org")
    assert custom.bytes_per_element == (3 + 0.5) / 8
    assert kv_formats.kv_format(custom) is custom
    assert llm.kv_cache_bytes_per_token(L3, kv_dtype=custom) == ELEMENTS * 3.5 / 8
    with pytest.raises(ValueError, match="bits"):
        kv_formats.KVFormat("x", 0, 32, 32, "https://example.org")
    with pytest.raises(ValueError, match="group_size"):
        kv_formats.KVFormat("x", 4, 0, 32, "https://example.org")
    with pytest.raises(ValueError, match="scale_bits"):
        kv_formats.KVFormat("x", 4, None, 16, "https://example.org")


def test_every_format_cites_a_source():
    """Each format names an https source and explains its layout."""
    for fmt in kv_formats.KV_FORMATS.values():
        assert fmt.source.startswith("https://"), fmt.name
        assert len(fmt.notes) > 10, fmt.name
