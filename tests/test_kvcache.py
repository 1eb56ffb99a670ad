"""Tests of :mod:`helpers.kvcache`: transfer or recompute a KV cache.

Main reference: Qin et al., "Mooncake: Trading more storage for less
computation", FAST'25 (qin2025mooncake), section 2.2, Eq. 1-2, and the worked
example after them: LLaMA3-70B, an 8192-token prefix, needs about 6 GB/s on
8x A800 and 19 GB/s on 8x H800 for reuse to beat recomputation.
Hardware: NVIDIA A100/A800 and H100/H800 datasheets (bf16 dense 312 and
989.4 TFLOP/s); ConnectX-7 datasheet (nvidia_cx7).
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from helpers import inference, kvcache, llm, papers, tiers
from helpers.hardware import Link, get_accelerator, get_link
from helpers.kvcache import (
    best_split,
    breakeven,
    breakeven_tokens,
    hidden_size_constant,
    mooncake_prefill_flops,
    pipelined_time,
    recompute_time,
    recompute_window,
    reuse_bandwidth_threshold,
    transfer_time,
)
from helpers.llm import (
    get_model,
    kv_cache_bytes,
    kv_cache_bytes_per_token,
    linear_flops_per_token,
)


def test_mooncake_coefficients_from_the_config():
    """Llama-3-70B: b = 2 * 12.75 = 25.5 (the paper rounds its own count to 22), a = 2 * q_dim / d
    = 2 (causal pairs; the paper's 4 counts every query-key pair)."""
    assert kvcache.mooncake_coefficients("llama-3-70b") == (2.0, 25.5)


def test_mooncake_formula_with_config_coefficients_matches_prefill_cost():
    """With the config's (a, b), Eq. 1 counts the prefill's FLOP without the lm_head, up to the
    n vs n + 1 of the causal pairs: within 1e-4 at 8,192 tokens."""
    m = llm.get_model("llama-3-70b")
    n = 8192
    eq1 = kvcache.mooncake_prefill_flops(
        m, n, coefficients=kvcache.mooncake_coefficients(m)
    )
    counted = llm.prefill_cost(m, n).flops - 2.0 * m.d_model * m.vocab_size
    assert eq1 == pytest.approx(counted, rel=1e-4)


A800_X8 = (
    8 * 312e12
)  # A800 = A100 80GB compute: bf16 dense 312 TFLOP/s (A100 datasheet)
H800_X8 = (
    8 * 989.4e12
)  # H800 = H100 SXM compute: bf16 dense 989.4 TFLOP/s (H100 datasheet, half of 1,979 sparse)


def _link(bandwidth: float, latency: float = 0.0) -> Link:
    return Link(
        f"test link {bandwidth:.3g}",
        bandwidth,
        latency,
        "https://example.org",
        "test link for the suite",
    )


def test_catalog_peaks_are_the_ones_mooncake_used():
    """The catalog's A800 and H800 bf16 peaks are the dense datasheet figures used below, and
    :func:`kvcache.compute_rate` is n x mu x P: 8 A800s at half their peak sustain 4 x 312 TFLOP/s."""
    assert kvcache.compute_rate("A800", n_gpus=8) == A800_X8
    assert kvcache.compute_rate("H800", n_gpus=8) == H800_X8
    assert kvcache.compute_rate("a800", n_gpus=8, mfu=0.5) == pytest.approx(4 * 312e12)
    with pytest.raises(ValueError, match="mfu"):
        kvcache.compute_rate("a800", mfu=0)


def test_the_old_flops_signature_still_works_with_a_warning():
    """Chapters written before the accelerator signature pass 8 x peak FLOP/s as the third
    argument: same threshold and factor, with a (pending) deprecation warning naming the new call."""
    new = reuse_bandwidth_threshold("llama-3-70b", 8192, "a800", n_gpus=8)
    with pytest.warns(PendingDeprecationWarning, match="n_gpus="):
        old = reuse_bandwidth_threshold("llama-3-70b", 8192, A800_X8)
    assert old == new
    with pytest.warns(PendingDeprecationWarning, match="n_gpus="):
        factor = kvcache.congestion_factor(12.5e9, "llama-3-70b", 8192, A800_X8)
    assert factor == kvcache.congestion_factor(
        12.5e9, "llama-3-70b", 8192, "a800", n_gpus=8
    )


def test_mooncake_eq1_2_with_paper_coefficients():
    """Reproduce Mooncake's numbers with the paper's own Eq. 1 (flops = l (4 n^2 d + 22 n d^2)):
    LLaMA3-70B, n = 8192, 8x A800 -> 5.86e9 B/s ("6 GB/s"), 8x H800 -> 18.6e9 B/s ("19 GB/s"), within 5%.

    By hand for the A800 case: KV = 8192 * 327,680 B = 2.68e9 B; FLOP = 80 (4*8192^2*8192 + 22*8192*8192^2)
    = 80 * 26 * 8192^3 = 1.143e15; B = 2.68e9 * 2.496e15 / 1.143e15 = 5.86e9 B/s.
    """
    a800 = reuse_bandwidth_threshold(
        "llama-3-70b", 8192, "a800", n_gpus=8, coefficients=(4, 22)
    )
    h800 = reuse_bandwidth_threshold(
        "llama-3-70b", 8192, "h800", n_gpus=8, coefficients=(4, 22)
    )
    assert_allclose(a800, 5.86e9, rtol=0.05)
    assert_allclose(h800, 18.6e9, rtol=0.05)
    by_hand = 8192 * 327_680 * A800_X8 / (80 * 26 * 8192**3)
    assert_allclose(a800, by_hand, rtol=1e-12)
    # the paper rounds to 6 and 19 GB/s
    assert round(a800 / 1e9) == 6 and round(h800 / 1e9) == 19


def test_mooncake_config_derived_default_within_10_percent():
    """Without coefficients the FLOP come from the Llama-3-70B config: within 10% of the paper's 6 and 19 GB/s.

    Why not exact: the config gives b = 2 * layer_weights / d^2 = 2 * 855,638,016 / 8192^2 = 25.5 (GQA k/v
    projections and a 3.5x SwiGLU MLP), not the paper's 22; and attention is counted causal, n(n+1)/2 pairs,
    i.e. a ≈ 2 instead of 4. At n = d = 8192 the paper's 4 + 22 = 26 vs ~2 + 25.5 = 27.5 makes the threshold
    ~6% lower (plus the lm_head of the last token).
    """
    m = get_model("llama-3-70b")
    b = linear_flops_per_token(m) / (m.n_layers * m.d_model**2)
    assert_allclose(b, 25.5, rtol=1e-12)
    a800 = reuse_bandwidth_threshold("llama-3-70b", 8192, "a800", n_gpus=8)
    h800 = reuse_bandwidth_threshold("llama-3-70b", 8192, "h800", n_gpus=8)
    assert_allclose(a800, 6e9, rtol=0.10)
    assert_allclose(h800, 19e9, rtol=0.10)
    assert a800 < reuse_bandwidth_threshold(
        "llama-3-70b", 8192, "a800", n_gpus=8, coefficients=(4, 22)
    )
    # the threshold is linear in the compute: H800 / A800 = 989.4 / 312
    assert_allclose(h800 / a800, 989.4 / 312, rtol=1e-12)


def test_hidden_size_constant():
    """c = linear FLOP per token / (d * KV bytes per token).

    Llama-2-7B (MHA, SwiGLU 11008): 2*32*(4 d^2 + 3 d 11008) / (4096 * 524,288) = 6.03.
    Textbook MHA with a plain 4x MLP: 24 d^2 / (d * 4 d) = 6 exactly.
    Llama-3-70B (GQA-8, 64 query heads): the KV shrinks 8x -> c = 51.
    """
    assert_allclose(hidden_size_constant("llama-2-7b"), 6.03125, rtol=1e-12)
    textbook = replace(
        get_model("llama-2-7b"), name="mha-4x", d_ff=4 * 4096, gated_mlp=False
    )
    assert_allclose(hidden_size_constant(textbook), 6.0, rtol=1e-12)
    assert_allclose(hidden_size_constant("llama-3-70b"), 51.0, rtol=1e-12)
    # fp8 KV halves the bytes, doubling c
    assert_allclose(
        hidden_size_constant("llama-2-7b", dtype="fp8"), 2 * 6.03125, rtol=1e-12
    )


@given(
    st.sampled_from(["llama-2-7b", "llama-3-70b"]),
    st.sampled_from(["H100 SXM", "A100", "H800"]),
    st.floats(min_value=0.05, max_value=20.0),
)
def test_hidden_size_rule_agrees_with_breakeven(model, device, ratio):
    """Property: for a prefix where recomputation is compute-bound but attention is negligible
    (1024 tokens: intensity ~1000 > ridge, attention ~2% of the FLOP), the source text's rule
    "transfer wins iff F / B < c d" (F peak FLOP/s, B link bandwidth, latency 0) gives the same verdict
    as the full breakeven() model, away from a ±10% band around the boundary."""
    assume(abs(math.log(ratio)) > 0.1)
    m = get_model(model)
    peak = get_accelerator(device).flops("bf16")
    c_d = hidden_size_constant(m) * m.d_model
    bandwidth = peak / (c_d * ratio)  # so F / B = ratio * c d
    rule = kvcache.hidden_size_rule(m, device, _link(bandwidth))
    assert rule.threshold == pytest.approx(c_d, rel=1e-12)
    assert rule.compute_per_byte == pytest.approx(ratio * c_d, rel=1e-9)
    assert breakeven(m, 1024, device, _link(bandwidth)).verdict == rule.verdict


def test_kv_bytes_and_transfer_time_linear_plus_latency():
    """transfer_time = latency + tokens * KV bytes per token / (n_links * bandwidth).

    Llama-2-70B over one ConnectX-7 (50e9 B/s, 2 us): 1000 tokens = 327,680,000 B -> 6.5536 ms + 2 us.
    """
    assert kv_cache_bytes("llama-2-70b", 1000) == 327_680_000
    cx7 = get_link("cx7")
    t1000 = transfer_time("llama-2-70b", 1000, "cx7")
    assert_allclose(t1000, cx7.latency + 327_680_000 / 50e9, rtol=1e-12)
    t2000 = transfer_time("llama-2-70b", 2000, "cx7")
    assert_allclose(t2000 - cx7.latency, 2 * (t1000 - cx7.latency), rtol=1e-12)
    assert_allclose(
        transfer_time("llama-2-70b", 1000, "cx7", n_links=4) - cx7.latency,
        (t1000 - cx7.latency) / 4,
        rtol=1e-12,
    )


@given(st.integers(1, 100_000), st.integers(1, 100_000))
def test_transfer_time_affine_in_tokens(a, b):
    """Property: transfer_time(a + b) + latency == transfer_time(a) + transfer_time(b) (affine in tokens)."""
    t = lambda n: transfer_time("llama-3-8b", n, "pcie5x16")  # noqa: E731
    assert_allclose(t(a + b) + get_link("pcie5x16").latency, t(a) + t(b), rtol=1e-9)


def test_recompute_time_is_prefill_time_without_communication():
    """Recomputing a prefix's KV cache is prefilling it, with the tensor-parallel all-reduces left out (a lower bound).

    On one GPU there is nothing to leave out, so it equals inference.prefill_time; on 8 H100s it equals
    prefill_time(link=None) and is shorter than the default, which charges 2 all-reduces per layer.
    Values are derived by hand in tests/test_inference.py (test_prefill_llama3_70b_on_8_h100_by_hand).
    """
    m = "llama-3-70b"
    assert recompute_time(m, 4096, "h100") == inference.prefill_time(m, 4096, "h100")
    bound = recompute_time(m, 4096, "h100", n_gpus=8)
    assert bound == inference.prefill_time(m, 4096, "h100", n_gpus=8, link=None)
    assert bound < inference.prefill_time(m, 4096, "h100", n_gpus=8)


def test_breakeven_fields():
    """breakeven() reports both times, the faster as verdict, speedup = slower / faster >= 1, and the
    threshold bandwidth = KV bytes / recompute time (above it, fetching wins, latency ignored)."""
    r = breakeven("llama-3-70b", 8192, "H800", "cx7", n_gpus=8)
    assert r.verdict == ("transfer" if r.transfer_s < r.recompute_s else "recompute")
    assert_allclose(
        r.speedup, max(r.recompute_s, r.transfer_s) / min(r.recompute_s, r.transfer_s)
    )
    assert r.speedup >= 1
    assert_allclose(
        r.threshold_bandwidth, kv_cache_bytes("llama-3-70b", 8192) / r.recompute_s
    )
    # one 50 GB/s CX7 is above the ~18 GB/s Mooncake threshold on 8x H800: fetching wins
    assert r.verdict == "transfer"


def _brute_force_breakeven(model, acc, link, candidates):
    """Smallest candidate n such that fetching wins at n and at every larger candidate."""
    result = math.inf
    for n in sorted(candidates, reverse=True):
        if breakeven(model, n, acc, link).verdict == "transfer" or math.isclose(
            transfer_time(model, n, link), recompute_time(model, n, acc)
        ):
            result = n
        else:
            break
    return result


@pytest.mark.parametrize("link", ["100gbe", "cx6", "cx7", "pcie4x16", "nvlink4"])
def test_breakeven_tokens_means_fetching_wins_for_good(link):
    """breakeven_tokens(n*) is where fetching starts winning and keeps winning: it wins at n*, loses at n* - 1,
    and wins at every longer prefix checked on a grid. Regression test: a slow link (100 GbE) also wins
    for a few-token prefix, whose recomputation is memory-bound (all weights read for a few tokens);
    that must not be reported as the break-even."""
    model, acc = "llama-2-7b", "H100"
    n = breakeven_tokens(model, acc, link)
    assert (
        n == 1
        or math.isinf(n)
        or breakeven(model, n - 1, acc, link).verdict == "recompute"
    )
    if math.isfinite(n):
        for m in sorted(
            {n, n + 1, 2 * n, 10 * n, 1 << 20}
            | {k for k in (1, 10, 100, 1000, 10_000, 100_000) if k > n}
        ):
            if m <= 1 << 20:
                assert transfer_time(model, m, link) <= recompute_time(model, m, acc), m
    grid = [1 << k for k in range(21)]
    brute = _brute_force_breakeven(model, acc, link, grid)
    # the grid answer is the first power of two at or after n*
    assert brute == 1 if n == 1 else brute == min(g for g in grid if g >= n)


def test_breakeven_tokens_slow_link_is_not_one():
    """Llama-2-7B on an H100 over 100 GbE: recomputation wins from 100 to 100,000 tokens, so the break-even
    is far above 1 even though fetching wins at 1-10 tokens."""
    n = breakeven_tokens("llama-2-7b", "H100", "100gbe")
    assert n > 100_000
    for tokens in (100, 1000, 10_000, 100_000):
        assert breakeven("llama-2-7b", tokens, "H100", "100gbe").verdict == "recompute"


@given(
    st.floats(min_value=1e9, max_value=1e12), st.floats(min_value=1.01, max_value=100.0)
)
def test_breakeven_tokens_monotone_in_bandwidth(bandwidth, factor):
    """Property: a faster link never needs a longer prefix before fetching wins for good."""
    slow = breakeven_tokens(
        "llama-3-8b", "A100", _link(bandwidth, 2e-6), max_tokens=1 << 18
    )
    fast = breakeven_tokens(
        "llama-3-8b", "A100", _link(bandwidth * factor, 2e-6), max_tokens=1 << 18
    )
    assert fast <= slow


def test_breakeven_tokens_inf_when_never():
    """With a very slow link and a short max_tokens, fetching never wins: inf."""
    assert (
        breakeven_tokens("llama-2-7b", "H100", _link(1e6), max_tokens=4096) == math.inf
    )


def test_bad_input():
    """Bad prefixes, compute, coefficients, counts, mfu, links and models raise naming the parameter."""
    with pytest.raises(ValueError, match="tokens"):
        transfer_time("llama-2-7b", 0, "cx7")
    with pytest.raises(ValueError, match="prefix_tokens"):
        reuse_bandwidth_threshold("llama-3-70b", -1, "a800", n_gpus=8)
    with pytest.raises(KeyError, match="8e15"):
        reuse_bandwidth_threshold("llama-3-70b", 8192, "8e15")
    with pytest.raises(ValueError, match="n_gpus"):
        reuse_bandwidth_threshold("llama-3-70b", 8192, "a800", n_gpus=0)
    with (
        pytest.warns(
            PendingDeprecationWarning, match="FLOP/s in place of the accelerator"
        ),
        pytest.raises(ValueError, match="compute_flops"),
    ):
        reuse_bandwidth_threshold("llama-3-70b", 8192, float("inf"))
    with pytest.raises(ValueError, match="coefficients"):
        reuse_bandwidth_threshold(
            "llama-3-70b", 8192, "a800", n_gpus=8, coefficients=(4, 22, 1)
        )
    with pytest.raises(ValueError, match="coefficients"):
        reuse_bandwidth_threshold(
            "llama-3-70b", 8192, "a800", n_gpus=8, coefficients=(4, 0)
        )
    with pytest.raises(ValueError, match="coefficients"):
        reuse_bandwidth_threshold("llama-3-70b", 8192, "a800", n_gpus=8, coefficients=4)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="coefficients"):
        reuse_bandwidth_threshold(
            "llama-3-70b", 8192, "a800", n_gpus=8, coefficients=("4", 22)
        )
    with pytest.raises(ValueError, match="n_gpus"):
        recompute_time("llama-2-7b", 10, "H100", n_gpus=0)
    with pytest.raises(ValueError, match="mfu"):
        recompute_time("llama-2-7b", 10, "H100", mfu=1.5)
    with pytest.raises(ValueError, match="mfu"):
        recompute_time("llama-2-7b", 10, "H100", mfu=0)
    with pytest.raises(ValueError, match="n_links"):
        transfer_time("llama-2-7b", 10, "cx7", n_links=0)
    with pytest.raises(KeyError, match="link"):
        transfer_time("llama-2-7b", 10, "smoke signals")
    with pytest.raises(KeyError, match="link"):
        transfer_time(
            "llama-2-7b", 10, "HBM"
        )  # a tier's name is not a link: pass the tiers.Tier itself
    with pytest.raises(KeyError, match="model"):
        transfer_time("gpt-2", 10, "cx7")
    with pytest.raises(ValueError, match="max_tokens"):
        breakeven_tokens("llama-2-7b", "H100", "cx7", max_tokens=0)
    with pytest.raises(ValueError, match="max_tokens"):
        recompute_window("llama-2-7b", "H100", "cx7", max_tokens=0)
    with pytest.raises(ValueError, match="tokens"):
        mooncake_prefill_flops("llama-3-70b", 0)
    with pytest.raises(ValueError, match="coefficients"):
        mooncake_prefill_flops("llama-3-70b", 10, coefficients=(4, 22, 1))
    with pytest.raises(ValueError, match="tokens"):
        hidden_size_constant("llama-3-70b", tokens=0)
    with pytest.raises(TypeError, match="positional argument"):
        transfer_time("llama-2-7b", 10, "cx7", "bf16")  # type: ignore[misc]  # dtype is keyword-only


# --- Mooncake's Eq. 1 ----------------------------------------------------------------------------


def test_mooncake_prefill_flops_by_hand():
    """Mooncake (FAST'25, section 2.2) Eq. 1, flops(n) = l (a n^2 d + b n d^2), for LLaMA3-70B (l 80, d 8192).

    n = 8192 with the paper's (4, 22): 80 * 26 * 8192^3 = 2080 * 549,755,813,888 = 1,143,492,092,887,040.
    n = 1000: 80 * (4 * 1000^2 * 8192 + 22 * 1000 * 8192^2) = 80 * (32,768,000,000 + 1,476,395,008,000)
    = 120,733,040,640,000. Without attention (a = 0) it is linear in n.
    """
    assert mooncake_prefill_flops("llama-3-70b", 8192) == 1_143_492_092_887_040
    assert (
        mooncake_prefill_flops("llama-3-70b", 1000, coefficients=(4, 22))
        == 120_733_040_640_000
    )
    linear_only = mooncake_prefill_flops("llama-3-70b", 1000, coefficients=(0, 22))
    assert (
        mooncake_prefill_flops("llama-3-70b", 2000, coefficients=(0, 22))
        == 2 * linear_only
        == 2 * 80 * 22 * 1000 * 8192**2
    )


@given(st.integers(1, 200_000))
def test_mooncake_eq1_with_the_configs_coefficients_is_prefill_cost(n):
    """Property: for Llama-3-70B (q_dim = d_model = 8192) helpers.llm's prefill FLOP are Eq. 1 with a = 2, b = 25.5,
    plus 2 l d n and the lm_head.

    Weights: 2 * layer_weights = 2 * 855,638,016 = 25.5 d^2 FLOP per token and layer (b = 25.5). Causal attention:
    4 l q_dim n (n + 1) / 2 = 2 l d n^2 + 2 l d n (a = 2, the paper's 4 counts the full n x n square).
    lm_head of the last token: 2 d V = 2 * 8192 * 128,256.
    """
    from helpers.llm import prefill_cost

    expected = (
        mooncake_prefill_flops("llama-3-70b", n, coefficients=(2, 25.5))
        + 2 * 80 * 8192 * n
        + 2 * 8192 * 128_256
    )
    assert_allclose(prefill_cost("llama-3-70b", n).flops, expected, rtol=1e-12)


# --- the hidden-size constant of a whole prefill ---------------------------------------------------


def test_hidden_size_constant_of_a_prefill_by_hand():
    """With tokens = n, c(n) = prefill FLOP / (n * kv_bytes_per_token * d), which is the linear constant plus the
    attention and lm_head shares:

        c(n) = c + 2 L q_dim (n + 1) / (d kv) + 2 V / (n kv).

    Llama-2-7B (L 32, d = q_dim = 4096, V 32,000, kv 524,288 bytes, c = 6.03125): the attention share is
    64 (n + 1) / 524,288 = (n + 1) / 8192 and the lm_head share 64,000 / (524,288 n) = 0.1220703125 / n, so
    c(1) = 6.03125 + 2 / 8192 + 0.1220703125 = 6.153564453125 and c(4096) = 6.03125 + 4097 / 8192 + 2.98e-5 = 6.5314.
    """
    assert_allclose(
        hidden_size_constant("llama-2-7b", tokens=1), 6.153564453125, rtol=1e-12
    )
    assert_allclose(
        hidden_size_constant("llama-2-7b", tokens=4096),
        6.03125 + 4097 / 8192 + 64_000 / (4096 * 524_288),
        rtol=1e-12,
    )


@given(
    st.integers(1, 10**6),
    st.sampled_from(["llama-2-7b", "llama-2-70b", "llama-3-8b", "llama-3-70b"]),
)
def test_hidden_size_constant_of_a_prefill_closed_form(n, model):
    """Property: c(n) = c + 2 L q_dim (n + 1) / (d kv) + 2 V / (n kv) for every catalog model and length."""
    m = get_model(model)
    kv = kv_cache_bytes_per_token(m)
    attention = 2 * m.n_layers * m.q_dim * (n + 1) / (m.d_model * kv)
    expected = hidden_size_constant(m) + attention + 2 * m.vocab_size / (n * kv)
    assert_allclose(hidden_size_constant(m, tokens=n), expected, rtol=1e-9)


@pytest.mark.parametrize("model, turn", [("llama-2-7b", 32), ("llama-3-70b", 40)])
def test_hidden_size_constant_grows_with_the_prefix_beyond_a_few_tens_of_tokens(
    model, turn
):
    """c(n + 1) - c(n) = 2 L q_dim / (d kv) - 2 V / (n (n + 1) kv): c grows iff n (n + 1) > V d / (L q_dim).

    Llama-2-7B: 32,000 * 4096 / (32 * 4096) = 1,000, so c falls up to n = 32 (31 * 32 = 992) and grows from there
    (32 * 33 = 1,056). Llama-3-70B: 128,256 * 8192 / (80 * 8192) = 1,603.2: the turn is at 40 (39 * 40 = 1,560,
    40 * 41 = 1,640). Attention adds work per token as the prefix lengthens; below the turn the last token's
    lm_head, shared by fewer tokens, matters more.
    """
    c = [
        hidden_size_constant(model, tokens=n) for n in range(1, 4097)
    ]  # c[n - 1] = c(n)
    falls = [n for n in range(1, 4096) if c[n] < c[n - 1]]  # n with c(n + 1) < c(n)
    assert falls == list(range(1, turn))
    long, short = (
        hidden_size_constant(model, tokens=1 << 20),
        hidden_size_constant(model, tokens=4096),
    )
    assert long > short > hidden_size_constant(model)


# --- where recomputing wins -------------------------------------------------------------------------


@given(
    model=st.sampled_from(["llama-2-7b", "llama-3-8b", "llama-3-70b"]),
    acc=st.sampled_from(["a100", "h100", "l4", "h20"]),
    link=st.sampled_from(["100gbe", "cx6", "cx7", "pcie4"]),
    n_gpus=st.sampled_from([1, 8]),
    mfu=st.floats(0.2, 1.0),
)
@settings(max_examples=15)
def test_recompute_window_matches_brute_force(model, acc, link, n_gpus, mfu):
    """recompute_window returns exactly the prefix lengths (scanned one by one up to 3,000) where recompute is faster."""
    top = 3000
    wins = [
        n
        for n in range(1, top + 1)
        if recompute_time(model, n, acc, n_gpus=n_gpus, mfu=mfu)
        < transfer_time(model, n, link)
    ]
    window = recompute_window(model, acc, link, n_gpus=n_gpus, mfu=mfu, max_tokens=top)
    if not wins:
        assert window is None
    else:
        assert window == (wins[0], wins[-1])
        assert wins == list(range(wins[0], wins[-1] + 1))


@given(
    model=st.sampled_from(["llama-2-7b", "llama-2-70b", "llama-3-8b", "llama-3-70b"]),
    acc=st.sampled_from(["a100", "h100", "l4", "h20", "t4"]),
    link=st.sampled_from(["100gbe", "cx6", "cx7", "pcie4", "pcie5", "nvlink4"]),
    n_gpus=st.sampled_from([1, 2, 8]),
    n_links=st.sampled_from([1, 4]),
    mfu=st.floats(0.2, 1.0),
    max_tokens=st.sampled_from([4096, 1 << 20]),
)
@settings(max_examples=30)
def test_recompute_window_ends_where_breakeven_tokens_says(
    model, acc, link, n_gpus, n_links, mfu, max_tokens
):
    """Property: the recompute window is empty exactly when breakeven_tokens is 1, and otherwise ends one token
    before it (or at max_tokens when fetching never wins for good)."""
    dtype = get_accelerator(acc).half_dtype
    options = {
        "dtype": dtype,
        "n_gpus": n_gpus,
        "n_links": n_links,
        "mfu": mfu,
        "max_tokens": max_tokens,
    }
    end = breakeven_tokens(model, acc, link, **options)
    window = recompute_window(model, acc, link, **options)
    if end == 1:
        assert window is None
    else:
        first, last = window
        assert 1 <= first <= last == (max_tokens if math.isinf(end) else end - 1)


def test_recompute_window_where_breakeven_tokens_says_one():
    """Llama-2-7B on an H100 behind 100 GbE: fetching wins for tiny prefixes (the lone prefill is weight-bound) and
    for very long ones, recomputing in between; breakeven_tokens reports the end of that window plus one."""
    window = recompute_window("llama-2-7b", "h100", "100gbe")
    assert window is not None
    first, last = window
    assert 1 < first < 1000 < 10_000 < last
    assert breakeven("llama-2-7b", first, "h100", "100gbe").verdict == "recompute"
    assert breakeven("llama-2-7b", first - 1, "h100", "100gbe").verdict == "transfer"
    assert breakeven("llama-2-7b", last + 1, "h100", "100gbe").verdict == "transfer"
    assert breakeven_tokens("llama-2-7b", "h100", "100gbe") == last + 1


def test_recompute_window_none_on_a_fast_link():
    """Llama-3-70B's GQA cache is so small per FLOP that one ConnectX-7 port beats recompute on 8 H100s at every length."""
    assert recompute_window("llama-3-70b", "h100", "cx7", n_gpus=8) is None


# --- fetch and recompute at once: the split, layer-wise pipelining, efficiency -----------------------


def _llama3_70b_recompute_by_hand(r: int) -> float:
    """Prefill of r tokens of Llama-3-70B on 8 x H100 at the dense bf16 peak, compute-bound:
    per layer attention 2 * 8192 * 8192 + 2 * 8192 * 1024 = 150,994,944 weights and MLP
    3 * 8192 * 28672 = 704,643,072; 2 FLOP each over 80 layers = 136,902,082,560 FLOP per token;
    causal attention 4 * 80 * 8192 = 2,621,440 FLOP per query-key pair over r (r + 1) / 2 pairs;
    the lm_head for the last token, 2 * 8192 * 128,256 FLOP."""
    flops = 136_902_082_560 * r + 2_621_440 * r * (r + 1) / 2 + 2 * 8192 * 128_256
    return flops / (8 * 989.4e12)


def _fetch_by_hand(tokens: int) -> float:
    """100 GbE: 10 us + tokens * 327,680 B / 12.5e9 B/s."""
    return 10e-6 + tokens * 327_680 / 12.5e9 if tokens else 0.0


def test_best_split_reproduces_the_issue_numbers_by_hand():
    """Llama-3-70B, 4,096-token prefix, 8 x H100 at peak, one 100 GbE link: recompute alone 73.6 ms,
    fetch alone 107.4 ms; the split solves R(r) = T(n - r), a quadratic in r, and takes 43.3 ms."""
    n = 4096
    assert_allclose(_llama3_70b_recompute_by_hand(n), 73.62e-3, rtol=1e-3)
    assert_allclose(_fetch_by_hand(n), 107.38e-3, rtol=1e-3)
    # R(r) = T(n - r):  A r^2 + B r + C = 0
    p = 8 * 989.4e12
    a = 2_621_440 / 2 / p
    b = (136_902_082_560 + 2_621_440 / 2) / p + 327_680 / 12.5e9
    c = 2 * 8192 * 128_256 / p - 10e-6 - n * 327_680 / 12.5e9
    root = (-b + math.sqrt(b * b - 4 * a * c)) / (2 * a)
    split = best_split("llama-3-70b", n, "h100", "100gbe", n_gpus=8)
    assert abs(split.recompute_tokens - root) <= 1
    assert split.recompute_tokens + split.fetch_tokens == n
    expected = max(
        _llama3_70b_recompute_by_hand(split.recompute_tokens),
        _fetch_by_hand(split.fetch_tokens),
    )
    assert_allclose(split.seconds, expected, rtol=1e-9)
    assert_allclose(split.seconds, 43.3e-3, rtol=2e-3)
    assert_allclose(
        [
            recompute_time("llama-3-70b", n, "h100", n_gpus=8),
            transfer_time("llama-3-70b", n, "100gbe"),
        ],
        [73.6e-3, 107.4e-3],
        rtol=1e-3,
    )


@settings(max_examples=25, deadline=None)
@given(
    st.integers(1, 20_000),
    st.sampled_from(["llama-2-7b", "llama-3-8b", "llama-3-70b", "deepseek-v3"]),
    st.sampled_from(["100gbe", "cx7", "pcie 4.0"]),
    st.floats(0.2, 1.0),
)
def test_best_split_is_optimal_and_never_worse(tokens, model, link, efficiency):
    """Property: the split beats (or ties) fetching alone and recomputing alone, and no neighbouring split is better."""
    kw = {"n_gpus": 8, "efficiency": efficiency}
    split = best_split(model, tokens, "h100", link, **kw)

    def cost(r: int) -> float:
        rec = 0.0 if r == 0 else recompute_time(model, r, "h100", n_gpus=8)
        if r == tokens:
            return rec
        return max(rec, transfer_time(model, tokens - r, link, efficiency=efficiency))

    assert split.seconds <= cost(0) + 1e-15 and split.seconds <= cost(tokens) + 1e-15
    for r in (split.recompute_tokens - 1, split.recompute_tokens + 1):
        if 0 <= r <= tokens:
            assert split.seconds <= cost(r) + 1e-15


def test_pipelined_time_by_hand():
    """80 layers, fetch 80 ms, compute 40 ms: 1 + 0.5 + 79 * 1 = 80.5 ms = max + min / 80; tiers re-exports it."""
    assert_allclose(pipelined_time(0.080, 0.040, 80), 0.0805)
    assert_allclose(pipelined_time(0.040, 0.080, 80), 0.0805)
    assert pipelined_time(0.03, 0.05, 1) == pytest.approx(0.08)
    assert tiers.pipelined_time is pipelined_time


def test_link_efficiency_and_overlap_raise_the_threshold():
    """Mooncake's Transfer Engine: 87 GB/s of 100 (4 x 200 Gb/s) and 190 of 400 (8 x 400 Gb/s), Fig. 12.
    The Eq. 2 floor (5.86 GB/s at 8,192 tokens on 8 x A800, a = 4, b = 22) scaled by overlap 2 and efficiency
    0.475 needs 5.86 * 2 / 0.475 = 24.7 GB/s of line rate; the fetch time divides by the efficiency."""
    effs = [t.efficiency for t in papers.MOONCAKE_FIG12_TRANSFER_ENGINE]
    assert_allclose(effs, [0.87, 0.475])
    floor = reuse_bandwidth_threshold(
        "llama-3-70b", 8192, "a800", n_gpus=8, coefficients=(4.0, 22.0)
    )
    assert_allclose(floor / 1e9, 5.86, rtol=1e-3)
    needed = reuse_bandwidth_threshold(
        "llama-3-70b",
        8192,
        "a800",
        n_gpus=8,
        coefficients=(4.0, 22.0),
        overlap=2.0,
        efficiency=0.475,
    )
    assert_allclose(needed, floor * 2 / 0.475)
    line = transfer_time("llama-3-70b", 4096, "cx7") - get_link("cx7").latency
    real = (
        transfer_time("llama-3-70b", 4096, "cx7", efficiency=0.5)
        - get_link("cx7").latency
    )
    assert_allclose(real, 2 * line)
    with pytest.raises(ValueError, match="overlap"):
        reuse_bandwidth_threshold("llama-3-70b", 8192, "a800", overlap=0.5)
    with pytest.raises(ValueError, match="efficiency"):
        transfer_time("llama-3-70b", 10, "cx7", efficiency=0)


def test_hidden_size_rule_by_hand():
    """Llama-2-7B: d = 4,096, 32 layers, gated MLP of 11,008. Linear FLOP per token
    2 x 32 x (4 d^2 + 3 d d_ff) = 12,952,010,752; KV bytes per token 2 x 32 x 4,096 x 2 = 524,288;
    so c d = 24,704 FLOP/byte. An A100 at 220 TFLOP/s (the article's mu P) over 100 GbE
    (12.5 GB/s): mu P / W = 17,600 < 24,704, so fetch, 24,704 / 17,600 = 1.40x faster. The
    rule's break-even bandwidth is 220e12 / 24,704 = 8.905 GB/s; two links halve mu P / W."""
    mfu = 220e12 / get_accelerator("a100").flops("bf16")
    rule = kvcache.hidden_size_rule("llama-2-7b", "a100", "100gbe", mfu=mfu)
    assert rule.threshold == pytest.approx(24_704, rel=1e-12)
    assert rule.compute_per_byte == pytest.approx(17_600, rel=1e-12)
    assert rule.verdict == "transfer" and rule.speedup == pytest.approx(24_704 / 17_600)
    assert kvcache.rule_bandwidth("llama-2-7b", "a100", mfu=mfu) == pytest.approx(
        220e12 / 24_704, rel=1e-12
    )
    assert rule.threshold == llm.recompute_flops_per_kv_byte(
        "llama-2-7b"
    )  # one home of c d
    long = kvcache.hidden_size_rule(
        "llama-2-7b", "a100", "100gbe", mfu=mfu, tokens=4096
    )
    assert long.threshold == pytest.approx(
        hidden_size_constant("llama-2-7b", tokens=4096) * 4096, rel=1e-12
    )
    assert (
        long.compute_per_byte == rule.compute_per_byte
        and long.threshold > rule.threshold
    )
    two = kvcache.hidden_size_rule("llama-2-7b", "a100", "100gbe", mfu=mfu, n_links=2)
    assert two.compute_per_byte == pytest.approx(8_800, rel=1e-12)
    slow = kvcache.hidden_size_rule("llama-2-7b", "a100", "100gbe", n_gpus=4)
    assert slow.verdict == "recompute"  # 4 x 312e12 / 12.5e9 = 99,840 > 24,704
    with pytest.raises(ValueError, match="mfu"):
        kvcache.rule_bandwidth("llama-2-7b", "a100", mfu=0.0)
    with pytest.raises(ValueError, match="n_links"):
        kvcache.hidden_size_rule("llama-2-7b", "a100", "100gbe", n_links=0)


def test_congestion_factor_of_fig13_by_hand():
    """Mooncake Fig. 13's knee, 100 Gb/s = 12.5 GB/s, over Eq. 2 on 8 x A800 (8 x 312 TFLOP/s)
    at 8,192 tokens with a = 4, b = 22: Eq. 1 gives 80 x 26 x 8192^3 FLOP and the cache holds
    8192 x 327,680 bytes, so the floor is 5.859 GB/s and the factor 12.5 / 5.859 = 2.13."""
    n = 8192
    floor = n * 327_680 * 8 * 312e12 / (80 * 26 * n**3)
    assert_allclose(floor / 1e9, 5.859, rtol=1e-3)
    factor = kvcache.congestion_factor(
        papers.MOONCAKE_FIG13_TTFT_KNEE, "llama-3-70b", n, "a800", n_gpus=8
    )
    assert_allclose(factor, 12.5e9 / floor)
    assert_allclose(factor, 2.13, atol=0.005)
    # the H800 margin of the chapter: 18.58 x 2.13 / 0.475 = 83.5 GB/s of the 400 GB/s line rate
    h800 = reuse_bandwidth_threshold(
        "llama-3-70b",
        n,
        "h800",
        n_gpus=8,
        coefficients=(4.0, 22.0),
        overlap=factor,
        efficiency=0.475,
    )
    assert_allclose(h800 / 1e9, 83.5, rtol=2e-3)
    assert 4.7 < 400e9 / h800 < 4.9


def test_congestion_factor_rejects_bad_input():
    """A knee that is not a positive bandwidth names its parameter."""
    with pytest.raises(ValueError, match="knee_bandwidth"):
        kvcache.congestion_factor(0.0, "llama-3-70b", 8192, "a800", n_gpus=8)
    with pytest.raises(ValueError, match="prefix_tokens"):
        kvcache.congestion_factor(12.5e9, "llama-3-70b", 0, "a800", n_gpus=8)


def test_mooncake_node_types_pair_each_network_with_its_gpu():
    """Every Fig. 12 network belongs to one node type (A800: 4 x 200 Gb/s, H800: 8 x 400 Gb/s)."""
    setups = [t.setup for t in papers.MOONCAKE_FIG12_TRANSFER_ENGINE]
    assert list(papers.MOONCAKE_NODE_GPUS) == setups
    assert [get_accelerator(g).name for g in papers.MOONCAKE_NODE_GPUS.values()] == [
        get_accelerator("a800").name,
        get_accelerator("h800").name,
    ]
