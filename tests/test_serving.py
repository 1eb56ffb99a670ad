"""Tests for :mod:`helpers.serving`: co-located steps, goodput, the prefill-to-decode ratio.

References: goodput under TTFT and TBT targets is DistServe's (Zhong et al., OSDI'24,
zhong2024distserve); "effective request capacity" and the P/D ratio are Mooncake's
(Qin et al., FAST'25, qin2025mooncake, §5.2.2 and §5.5).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import hardware, inference, llm, papers, serving

MODEL, ACC = "llama-3-70b", "H100"


def test_chunk_zero_is_a_decode_step():
    """No chunk: the co-located step is exactly inference.decode_step_time."""
    for b, n in ((1, 0), (64, 4096), (300, 12_000)):
        assert serving.colocated_step_time(
            MODEL, n, ACC, batch=b, chunk=0, n_gpus=8
        ) == inference.decode_step_time(MODEL, n, ACC, batch=b, n_gpus=8)


def test_colocated_step_by_hand():
    """FLOP add; bytes add less one read of the weights (dense model: the whole weight read)."""
    b, n, k = 32, 4096, 1024
    dec = llm.decode_cost(MODEL, n, batch=b)
    pre = llm.prefill_cost(MODEL, k)
    weights = llm.weights_read_bytes(MODEL, 1)  # dense: independent of the tokens
    step = serving.colocated_step(MODEL, n, ACC, batch=b, chunk=k, n_gpus=8)
    h100 = hardware.get_accelerator(ACC)
    assert step.compute_s == pytest.approx(
        (dec.flops + pre.flops) / (8 * h100.flops("bf16"))
    )
    assert step.memory_s == pytest.approx(
        (dec.bytes + pre.bytes - weights) / (8 * h100.memory_bandwidth)
    )


@given(
    st.integers(1, 256),
    st.integers(0, 16_384),
    st.integers(1, 8192),
)
def test_colocated_step_bounds(batch, context, chunk):
    """A chunk never shortens the step, and the step is no longer than decode and prefill run one after the other."""
    alone = inference.decode_step_time(MODEL, context, ACC, batch=batch, n_gpus=8)
    both = serving.colocated_step_time(
        MODEL, context, ACC, batch=batch, chunk=chunk, n_gpus=8
    )
    separate = alone + inference.prefill_time(MODEL, chunk, ACC, n_gpus=8)
    assert alone <= both <= separate * (1 + 1e-12)


def test_colocated_long_prompt_breaks_a_100ms_tbt():
    """A whole 12,035-token prompt (Mooncake's mean) in a decode step of 8 x A800 exceeds 100 ms; a 512 chunk does not."""
    whole = serving.colocated_step_time(
        MODEL, 12_035, "a800", batch=64, chunk=12_035, n_gpus=8
    )
    small = serving.colocated_step_time(
        MODEL, 12_035, "a800", batch=64, chunk=512, n_gpus=8
    )
    assert whole > 0.1 > small


def test_goodput_by_hand():
    g = serving.goodput(
        [1, 5, 31, 2], [0.05, 0.3, 0.05, 0.1], 2.0, ttft_slo_s=30, tbt_slo_s=0.1
    )
    assert g.attained == 0.5  # requests 0 and 3 (TBT exactly at target counts)
    assert g.per_s == 1.0


def test_goodput_bad_input():
    with pytest.raises(ValueError, match="same length"):
        serving.goodput([1, 2], [0.1], 1.0, ttft_slo_s=1, tbt_slo_s=1)
    with pytest.raises(ValueError, match="duration_s"):
        serving.goodput([1], [0.1], 0.0, ttft_slo_s=1, tbt_slo_s=1)
    with pytest.raises(ValueError, match="tbt_slo_s"):
        serving.goodput([1], [0.1], 1.0, ttft_slo_s=1, tbt_slo_s=-1)


def test_pd_ratio_by_hand():
    """ratio = R(n) / (n_out * t_step(b, n + n_out/2) / b), from the inference helpers."""
    n, out, b = 12_035, 343, 100
    got = serving.pd_ratio(MODEL, n, out, "a800", batch=b, n_gpus=8)
    prefill = inference.prefill_time(MODEL, n, "a800", n_gpus=8)
    step = inference.decode_step_time(MODEL, n + out // 2, "a800", batch=b, n_gpus=8)
    assert got.prefill_s == pytest.approx(prefill)
    assert got.decode_s == pytest.approx(out * step / b)
    assert got.ratio == pytest.approx(prefill / (out * step / b))


def test_pd_ratio_cache_hits_shift_work_to_decode():
    """A cached prefix removes prefill work only: the ratio falls as the hit grows."""
    ratios = [
        serving.pd_ratio(
            MODEL, 16_000, 200, ACC, batch=64, hit_tokens=h, n_gpus=8
        ).ratio
        for h in (0, 4000, 8000, 15_000)
    ]
    assert ratios == sorted(ratios, reverse=True)
    with pytest.raises(ValueError, match="hit_tokens"):
        serving.pd_ratio(MODEL, 100, 10, ACC, batch=1, hit_tokens=100)


def test_chunk_attends_to_earlier_chunks_by_hand():
    """H6 (part2.md): the last 512-token chunk of Mooncake's 12,035-token mean prompt, on 8 x A800, attends to
    11,520 earlier tokens: 512 * 11,520 = 5,898,240 more pairs at 4 * 80 * 8192 = 2,621,440 FLOP each
    (Llama-3-70B) = 1.5462e13 FLOP / (8 * 312e12) = 6.19 ms more compute, and reads 11,520 * 327,680 bytes
    of their KV (3.77 GB / (8 * 2.039e12) = 0.23 ms, hidden while compute-bound).
    """
    opts = dict(batch=64, chunk=512, n_gpus=8, link=None)
    first = serving.colocated_step(MODEL, 12_035, "a800", **opts)
    last = serving.colocated_step(MODEL, 12_035, "a800", prefix=11_520, **opts)
    assert last.compute_s - first.compute_s == pytest.approx(
        512 * 11_520 * 2_621_440 / (8 * 312e12), rel=1e-9
    )
    assert last.memory_s - first.memory_s == pytest.approx(
        11_520 * 327_680 / (8 * 2.039e12), rel=1e-9
    )
    with pytest.raises(ValueError, match="prefix"):
        serving.colocated_step(MODEL, 100, "a800", batch=1, chunk=0, prefix=5)


def test_colocated_step_pays_tp_allreduces_of_its_tokens():
    """On 8 GPUs a co-located step all-reduces its batch + chunk tokens: the same as inference's rule."""
    from helpers import inference

    step = serving.colocated_step(MODEL, 4096, "h100", batch=64, chunk=512, n_gpus=8)
    assert step.comm_s == inference.tp_allreduce_time(MODEL, 576, "h100", n_gpus=8)


def test_speculative_tokens_per_step_by_hand():
    """Leviathan et al. Eq. 1, by hand: a = 0.5 gives 1.5 tokens for one draft, 1.75 for two;
    nothing accepted gives 1; everything accepted gives k + 1; no draft is plain decoding."""
    assert serving.speculative_tokens_per_step(0.5, 1) == pytest.approx(1.5)
    assert serving.speculative_tokens_per_step(0.5, 2) == pytest.approx(1.75)
    assert serving.speculative_tokens_per_step(0.0, 4) == 1.0
    assert serving.speculative_tokens_per_step(1.0, 3) == 4.0
    assert serving.speculative_tokens_per_step(0.8, 0) == pytest.approx(1.0)


@given(st.floats(min_value=0.0, max_value=0.99), st.integers(min_value=0, max_value=50))
def test_speculative_tokens_grow_with_the_draft_and_stay_below_the_limit(a, k):
    """Property: one more drafted token never lowers the mean, and the mean stays below 1 / (1 - a)."""
    now = serving.speculative_tokens_per_step(a, k)
    assert serving.speculative_tokens_per_step(a, k + 1) >= now >= 1
    assert now <= 1 / (1 - a) + 1e-9


@pytest.mark.parametrize(
    "acceptance, drafted, name",
    [(-0.1, 2, "acceptance"), (1.5, 2, "acceptance"), (0.5, -1, "drafted")],
)
def test_speculative_bad_input_names_the_parameter(acceptance, drafted, name):
    """An acceptance outside [0, 1] or a negative draft raises ValueError naming it."""
    with pytest.raises(ValueError, match=name):
        serving.speculative_tokens_per_step(acceptance, drafted)


def test_speculative_step_with_no_draft_is_a_decode_step():
    """drafted = 0 is inference.decode_step_time, all-reduces included on 8 GPUs."""
    assert serving.speculative_step(
        MODEL, 4096, ACC, batch=64, drafted=0, n_gpus=8
    ).seconds == pytest.approx(
        inference.decode_step_time(MODEL, 4096, ACC, batch=64, n_gpus=8)
    )


def test_speculative_step_reads_the_weights_once():
    """Verifying k + 1 query tokens multiplies the FLOP about (k + 1)-fold, the bytes hardly at all."""
    one = serving.speculative_step(
        MODEL, 4096, ACC, batch=64, drafted=0, n_gpus=8, link=None
    )
    five = serving.speculative_step(
        MODEL, 4096, ACC, batch=64, drafted=4, n_gpus=8, link=None
    )
    assert five.compute_s / one.compute_s == pytest.approx(5, rel=0.02)
    assert five.memory_s / one.memory_s == pytest.approx(1, abs=0.01)
    with pytest.raises(ValueError, match="drafted"):
        serving.speculative_step(MODEL, 4096, ACC, batch=64, drafted=-1, n_gpus=8)


# --- expert-parallel steps: two-batch overlap, the MLA core's precision, prompts per rank


@given(
    c=st.floats(0.0, 1.0),
    m=st.floats(0.0, 1.0),
    tokens=st.integers(0, 4096),
    decode=st.booleans(),
)
def test_two_batch_overlap_lies_between_the_longer_term_and_the_sum(
    c, m, tokens, decode
):
    t = serving.two_batch_overlap(c, m, tokens=tokens, decode=decode)
    assert max(c, m) - 1e-15 <= t <= c + m + 1e-15


def test_two_batch_overlap_by_hand():
    """The measured speedups (LMSYS, May 2025): decode 1.255 from 128 tokens per GPU, none below; prefill 1.27."""
    assert serving.two_batch_overlap(0.03, 0.03, tokens=127, decode=True) == 0.06
    assert serving.two_batch_overlap(
        0.03, 0.03, tokens=128, decode=True
    ) == pytest.approx(0.06 / 1.255)
    assert serving.two_batch_overlap(
        0.03, 0.03, tokens=8, decode=False
    ) == pytest.approx(0.06 / 1.27)
    # overlap never beats the longer of the two
    assert serving.two_batch_overlap(0.05, 0.001, tokens=256, decode=True) == 0.05
    with pytest.raises(ValueError, match="comm_s"):
        serving.two_batch_overlap(0.01, -1.0, tokens=1, decode=True)


def test_ep_step_is_slower_than_perfect_overlap():
    """A DeepSeek-V3 decode rank at 256 tokens: longer than max(compute, comm), shorter than their sum."""
    kw = dict(batch=256, dtype="fp8", ep=72)
    step = serving.measured_step_time("deepseek-v3", 2000, "H100", **kw)
    compute = serving.measured_step_time(
        "deepseek-v3",
        2000,
        "H100",
        terms=("achievable_compute", "achievable_bandwidth"),
        **kw,
    )
    from helpers.hardware import get_link

    comm = serving._ep_comm(
        llm.get_model("deepseek-v3"), 256, 72, get_link("cx7"), decode=True
    )
    # the per-kernel floors are inside the compute stream: no step floor on top
    assert max(compute, comm) < step < compute + comm


def test_moe_rank_compute_is_the_engines_kernel_by_kernel_price():
    """One home: without its all-to-alls, a rank's step is helpers.steps' price of the replica's step."""
    from helpers import steps

    alone = serving.measured_step_time(
        "deepseek-v3",
        8000,
        "H100",
        batch=256,
        dtype="fp8",
        ep=72,
        terms=("achievable_compute",),
    )
    st = steps.mixed_step(
        "deepseek-v3",
        "H100",
        decode_batch=256 * 72,
        decode_context=8000,
        tp=72,
        ep=72,
        dp_attention=True,
        weight_dtype="fp8",
        kv_dtype="fp8",
        link=None,
    )
    assert alone == pytest.approx(st.seconds)
    # the MLA core is priced on the 16-bit peak, as DeepSeek runs it (MLA_CORE_DTYPE)
    assert serving.MLA_CORE_DTYPE == "bf16"
    assert st.parts["attention"] > 0


def test_prompts_per_rank_split_the_attention_not_the_linear_work():
    """One chunk of 8 x 2,000 tokens: fewer attention pairs than one 16,000-token prompt, same tokens."""
    kw = dict(batch=0, chunk=16_000, dtype="fp8", ep=32, terms=("achievable_compute",))
    one = serving.measured_step_time("deepseek-v3", 0, "H100", **kw)
    eight = serving.measured_step_time("deepseek-v3", 0, "H100", prompts=8, **kw)
    assert eight < one
    two_k = serving.measured_step_time(
        "deepseek-v3",
        0,
        "H100",
        batch=0,
        chunk=2000,
        dtype="fp8",
        ep=32,
        terms=("achievable_compute",),
    )
    assert (
        eight > 7 * two_k
    )  # the linear work is 8 prompts' worth, the weights read once
    with pytest.raises(ValueError, match="prompts"):
        serving.measured_step_time(
            "llama-3-70b", 0, "H100", batch=0, chunk=4000, prompts=2
        )
    with pytest.raises(ValueError, match="prompts"):
        serving.measured_step_time(
            "deepseek-v3", 0, "H100", batch=0, chunk=4, ep=32, prompts=8
        )


def test_overlap_streams_bound_the_two_streams() -> None:
    total, low, high = serving.overlap_streams(2.0, 1.5)
    assert (total, low, high) == pytest.approx((3.0, 1.0, 2.0))
    # no speedup: one stream is the whole step, the other nothing
    assert serving.overlap_streams(2.0, 1.0) == pytest.approx((2.0, 0.0, 2.0))
    for bad in (0.9, 2.1):
        with pytest.raises(ValueError, match="speedup"):
            serving.overlap_streams(2.0, bad)
    with pytest.raises(ValueError, match="step_s"):
        serving.overlap_streams(0.0, 1.2)


def test_moe_streams_add_up_to_the_priced_step() -> None:
    """Decode: the step is two-batch overlap of the two streams; prefill: the per-server all-to-all is the smaller."""
    dec = serving.moe_streams("deepseek-v3", 2000, "H100", batch=256, ep=72)
    assert dec.step_s == pytest.approx(
        serving.measured_step_time(
            "deepseek-v3", 2000, "H100", batch=256, dtype="fp8", ep=72
        )
    )
    assert dec.step_s == pytest.approx(
        serving.two_batch_overlap(
            dec.compute_s, dec.alltoall_s, tokens=256, decode=True
        )
    )
    assert dec.alltoall_per_expert_s == dec.alltoall_s
    pre = serving.moe_streams(
        "deepseek-v3", 0, "H800", batch=0, chunk=16384, prompts=4, ep=32
    )
    # DeepEP's prefill kernels: one copy per server reached, far fewer bytes
    assert pre.alltoall_s < pre.alltoall_per_expert_s / 3
    assert pre.step_s == pytest.approx(
        serving.measured_step_time(
            "deepseek-v3",
            0,
            "H800",
            batch=0,
            chunk=16384,
            prompts=4,
            dtype="fp8",
            ep=32,
        )
    )
    # its compute runs on the SMs the all-to-alls leave: slower than alone
    alone = serving.moe_compute_parts(
        "deepseek-v3", 0, "H800", batch=0, chunk=16384, prompts=4, ep=32
    ).seconds
    assert alone < pre.compute_s < alone * 132 / 108 * 1.001
    # a step that also decodes keeps one copy per expert and every SM
    mixed = serving.moe_streams(
        "deepseek-v3", 2000, "H800", batch=64, chunk=2048, ep=32
    )
    assert mixed.alltoall_s == mixed.alltoall_per_expert_s
    assert mixed.compute_s == pytest.approx(
        serving.moe_compute_parts(
            "deepseek-v3", 2000, "H800", batch=64, chunk=2048, ep=32
        ).seconds
    )
    with pytest.raises(ValueError, match="ep"):
        serving.moe_streams("deepseek-v3", 0, "H800", batch=8, ep=8)
    with pytest.raises(ValueError, match="model"):
        serving.moe_streams("llama-3-70b", 0, "H800", batch=8, ep=16)


def test_prefill_compute_device_leaves_the_sms_the_all_to_alls_hold() -> None:
    """DeepSeek's profile: 24 of an H800's 132 SMs run the all-to-alls, so the compute keeps 108."""
    h800 = hardware.get_accelerator("H800")
    left = serving.prefill_compute_device("H800")
    assert left.sm_count == papers.DEEPSEEK_PREFILL_SMS["computation"] == 108
    for dtype, peak in h800.peak_flops.items():
        assert left.peak_flops[dtype] == pytest.approx(peak * 108 / 132)
    assert left.memory_bandwidth == h800.memory_bandwidth
    with pytest.raises(KeyError, match="acc"):
        serving.prefill_compute_device("no-such-gpu")
    # a GPU the catalog gives no SM count loses the share the all-to-alls take of an H800
    bare = hardware.get_accelerator("B300")
    assert bare.sm_count is None
    cut = serving.prefill_compute_device("B300")
    for dtype, peak in bare.peak_flops.items():
        assert cut.peak_flops[dtype] == pytest.approx(peak * 108 / 132)


def test_single_server_prefill_keeps_every_sm() -> None:
    """DeepSeek's 24 SMs are its internode kernels' figure: an EP8 prefill keeps the whole GPU."""
    step = serving.measured_step_time(
        "deepseek-v3", 0, "H200", batch=0, chunk=8192, prompts=2, dtype="fp8", ep=8
    )
    parts = serving.moe_compute_parts(
        "deepseek-v3", 0, "H200", batch=0, chunk=8192, prompts=2, ep=8
    )
    streams = serving._moe_step(
        llm.get_model("deepseek-v3"), 0, "H200", batch=0, chunk=8192, prefix=0,
        prompts=2, dtype="fp8", ep=8, ep_link="cx7", collectives=True,
    )  # fmt: skip
    assert streams.compute_s == pytest.approx(parts.seconds)  # no SMs held
    assert (
        streams.alltoall_s == streams.alltoall_per_expert_s > 0
    )  # one server: per expert
    assert step == pytest.approx(streams.step_s)
