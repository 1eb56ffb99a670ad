"""Tests for helpers.offload: the attention / linear split of a decode step and its offload cost model.

Reference: Chen, Lin, Zhang, Wu (2024), "Efficient and Economic Large Language
Model Inference with Attention Offloading", arXiv:2405.01814 (Lamina).
"""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from helpers import hardware, offload, papers
from helpers.hardware import get_accelerator, get_link
from helpers.llm import decode_cost, get_model


def test_step_latency_is_two_crossings_per_layer():
    """80 layers x 2 crossings x 2 µs (ConnectX-7) = 0.32 ms; the 100 GbE NIC's 10 µs gives 1.6 ms."""
    assert offload.step_latency_s("llama-3-70b", "cx7") == pytest.approx(0.32e-3)
    assert offload.step_latency_s("llama-3-70b", "100gbe") == pytest.approx(1.6e-3)


def test_offload_transfer_time_is_latency_plus_traffic_over_links():
    """Batch 355, eight ConnectX-7 ports: 0.32 ms + 355 * 80 * 36,864 B / 400 GB/s = 2.94 ms."""
    step = offload.offload_step_time(
        "llama-3-70b", 4096, "H100", "H20", "cx7", batch=355, n_links=8
    )
    assert step.transfer_s == pytest.approx(0.32e-3 + 355 * 80 * 36_864 / 400e9)
    assert step.transfer_s == pytest.approx(2.94e-3, abs=0.005e-3)


MODELS = ["llama-2-7b", "llama-2-70b", "llama-3-8b", "llama-3-70b"]


def test_split_adds_up_to_decode_cost():
    """The two parts sum to helpers.llm.decode_cost exactly (the split re-derives nothing)."""
    total = decode_cost("llama-3-70b", 4096, batch=64)
    split = offload.decode_split("llama-3-70b", 4096, batch=64)
    assert_allclose(
        [split.total.flops, split.total.bytes], [total.flops, total.bytes], rtol=1e-12
    )


def test_attention_part_by_hand():
    """Llama-2-7B, context 99, batch 2: attention = 4 L q_dim (c+1) b FLOP and (c+1) b kv_bytes/token bytes."""
    m = get_model("llama-2-7b")
    split = offload.decode_split(m, 99, batch=2)
    assert_allclose(split.attention.flops, 4 * 32 * 4096 * 100 * 2, rtol=1e-9)
    assert_allclose(split.attention.bytes, 100 * 2 * (2 * 32 * 4096 * 2), rtol=1e-9)


def test_attention_intensity_by_hand():
    """2 * group / bytes: MHA Llama-2-7B in bf16 = 1 FLOP/byte, GQA-8 Llama-3-70B = 8, in fp32 = 4."""
    assert offload.attention_intensity("llama-2-7b") == 1.0
    assert offload.attention_intensity("llama-3-70b") == 8.0
    assert offload.attention_intensity("llama-3-70b", dtype="fp32") == 4.0


@settings(max_examples=50, deadline=None)
@given(st.sampled_from(MODELS), st.integers(0, 100_000), st.integers(1, 4096))
def test_attention_intensity_independent_of_batch_and_context(model, context, batch):
    """Whatever the batch and context, the split's attention intensity is the closed form."""
    split = offload.decode_split(model, context, batch=batch)
    assert_allclose(
        split.attention.intensity, offload.attention_intensity(model), rtol=1e-6
    )


@settings(max_examples=50, deadline=None)
@given(st.sampled_from(MODELS), st.integers(0, 32_768), st.integers(1, 2048))
def test_linear_intensity_grows_with_batch(model, context, batch):
    """Doubling the batch raises the linear part's intensity (weights are shared by the batch)."""
    one = offload.decode_split(model, context, batch=batch).linear.intensity
    two = offload.decode_split(model, context, batch=2 * batch).linear.intensity
    assert two > one


def test_linear_intensity_near_batch_in_bf16():
    """In bf16 the linear intensity is about the batch (2 FLOP per weight per sequence / 2 bytes per weight)."""
    split = offload.decode_split("llama-3-70b", 1000, batch=32)
    assert 0.9 * 32 < split.linear.intensity < 32


def test_layer_traffic_by_hand():
    """Llama-3-70B bf16: sent (8192 + 2*1024)*2 = 20,480 bytes, received 8192*2 = 16,384 bytes per sequence and layer."""
    assert offload.layer_traffic_bytes("llama-3-70b") == (20480.0, 16384.0)
    assert offload.step_traffic_bytes("llama-3-70b", batch=10) == 10 * 80 * (
        20480 + 16384
    )


def test_offload_step_by_hand():
    """Each part is the roofline time of its share; transfer = 2 L latency + traffic / (min(n_compute, n_memory) bandwidth)."""
    split = offload.decode_split("llama-3-70b", 2048, batch=128)
    step = offload.offload_step_time(
        "llama-3-70b", 2048, "h100", "h20", "cx7", batch=128, n_compute=2, n_memory=4
    )
    h100, h20, cx7 = get_accelerator("h100"), get_accelerator("h20"), get_link("cx7")
    linear = max(
        split.linear.flops / 2 / h100.flops("bf16"),
        split.linear.bytes / 2 / h100.memory_bandwidth,
    )
    attention = max(
        split.attention.flops / 4 / h20.flops("bf16"),
        split.attention.bytes / 4 / h20.memory_bandwidth,
    )
    traffic = offload.step_traffic_bytes("llama-3-70b", batch=128)
    transfer = 2 * 80 * cx7.latency + traffic / (2 * cx7.bandwidth)  # min(2, 4) links
    assert_allclose(
        [step.linear_s, step.attention_s, step.transfer_s],
        [linear, attention, transfer],
        rtol=1e-12,
    )
    assert_allclose(step.serial_s, linear + attention + transfer)
    # two micro-batches of 64: each re-reads the weights; the full-duplex link is
    # busy with the larger direction only: 128 * 80 * 20,480 B over two ports
    half = offload.decode_split("llama-3-70b", 2048, batch=64).linear
    linear_2 = 2 * max(
        half.flops / 2 / h100.flops("bf16"), half.bytes / 2 / h100.memory_bandwidth
    )
    busy = 128 * 80 * 20_480 / (2 * cx7.bandwidth)
    assert_allclose([step.linear_pipelined_s, step.link_busy_s], [linear_2, busy])
    assert step.overlapped_s == max(linear_2, attention, busy)


def test_duplex_link_time_by_hand():
    """Review D7: Llama-3-70B, batch 371, one ConnectX-7 port (50 GB/s per direction). Occupancy under
    pipelining is max(sent, received) * b * L / B = 20,480 * 371 * 80 / 50e9 = 12.2 ms; the critical path
    of an unpipelined step sends then receives: (20,480 + 16,384) * 371 * 80 / 50e9 + 160 * 2 us = 22.2 ms."""
    step = offload.offload_step_time(
        "llama-3-70b", 4096, "h100", "h20", "cx7", batch=371, n_links=1
    )
    assert_allclose(step.link_busy_s, 20_480 * 371 * 80 / 50e9)
    assert_allclose(step.link_busy_s, 12.16e-3, rtol=1e-3)
    assert_allclose(step.transfer_s, 36_864 * 371 * 80 / 50e9 + 160 * 2e-6)
    assert step.link_busy_s < step.transfer_s


def test_micro_batches_reread_weights():
    """Review D19: when the linear part is memory-bound, m micro-batches take about m times as long;
    one micro-batch is the unsplit step, and micro_batches is capped at the batch."""
    one = offload.offload_step_time(
        "llama-3-70b", 4096, "h100", "h20", "cx7", batch=8, micro_batches=1
    )
    assert one.linear_pipelined_s == one.linear_s
    four = offload.offload_step_time(
        "llama-3-70b", 4096, "h100", "h20", "cx7", batch=8, micro_batches=4
    )
    assert 3.9 < four.linear_pipelined_s / four.linear_s <= 4.0
    capped = offload.offload_step_time(
        "llama-3-70b", 4096, "h100", "h20", "cx7", batch=1, micro_batches=4
    )
    assert capped.micro_batches == 1


def test_mla_attention_is_compute_dense():
    """Review D2 / FlashMLA: DeepSeek-V3 decode attention (absorbed) does 2 * 128 * (576 + 512) FLOP per cached
    token and layer on 576 * 2 bytes: 241.8 FLOP/byte in bf16, above an H20's ridge (148e12 / 4.0e12 = 37);
    GQA-8 gives 8, and s_q query tokens per step multiply either."""
    assert_allclose(offload.attention_intensity("deepseek-v3"), 2 * 128 * 1088 / 1152)
    assert_allclose(offload.attention_intensity("deepseek-v3"), 241.78, rtol=1e-4)
    assert offload.attention_intensity("llama-3-70b") == 8.0
    assert offload.attention_intensity("llama-3-70b", query_tokens=4) == 32.0
    h20 = get_accelerator("h20")
    assert (
        offload.attention_intensity("deepseek-v3")
        > h20.flops("bf16") / h20.memory_bandwidth
    )
    # the split of decode_cost agrees at a long context
    split = offload.decode_split("deepseek-v3", 100_000, batch=4)
    assert_allclose(split.attention.intensity, 241.78, rtol=0.01)


def test_attention_is_memory_bound_on_every_catalog_device():
    """Decode attention (intensity <= 8) sits left of every catalog device's bf16/fp16 ridge."""
    split = offload.decode_split("llama-3-70b", 4096, batch=64)
    for device in hardware.accelerators():
        dtype = device.half_dtype
        assert (
            split.attention.intensity < device.flops(dtype) / device.memory_bandwidth
        ), device.name


@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, 16_384), st.integers(1, 1024), st.integers(1, 8), st.integers(1, 8)
)
def test_more_devices_never_slower(context, batch, n_compute, n_memory):
    """Adding compute or memory devices never lengthens any part of the step."""
    base = offload.offload_step_time(
        "llama-3-8b",
        context,
        "h100",
        "l4",
        "cx7",
        batch=batch,
        n_compute=n_compute,
        n_memory=n_memory,
    )
    more = offload.offload_step_time(
        "llama-3-8b",
        context,
        "h100",
        "l4",
        "cx7",
        batch=batch,
        n_compute=n_compute + 1,
        n_memory=n_memory + 1,
    )
    assert (
        more.linear_s <= base.linear_s
        and more.attention_s <= base.attention_s
        and more.transfer_s <= base.transfer_s
        and more.link_busy_s <= base.link_busy_s
    )
    # with the weights read once, overlapping never loses; micro-batches that re-read them can (D19)
    assert max(base.linear_s, base.attention_s, base.link_busy_s) <= base.serial_s
    assert base.linear_pipelined_s >= base.linear_s * (1 - 1e-12)


def test_mfu_slows_only_the_linear_part():
    """MFU scales the compute GPUs' peak (the linear part); attention runs on the memory devices, memory-bound.

    Llama-3-70B, batch 256 at 1,024 tokens on one H100: the linear part does 256 * (136.9e9 + 2.1e9) FLOP =
    35.6e12 (36 ms at 989.4 TFLOP/s) on 139.0e9 + 4.2e6 bytes (41.5 ms at 3.35 TB/s): memory-bound at full
    peak, compute-bound (72 ms) at 50 % MFU. Attention and transfer do not change.
    """
    full = offload.offload_step_time(
        "llama-3-70b", 1024, "h100", "h20", "cx7", batch=256
    )
    half = offload.offload_step_time(
        "llama-3-70b", 1024, "h100", "h20", "cx7", batch=256, mfu=0.5
    )
    assert_allclose(
        full.linear_s, (139_003_428_864 + 256 * 8192 * 2) / 3.35e12, rtol=1e-9
    )
    assert_allclose(
        half.linear_s,
        2 * 256 * (136_902_082_560 + 2_101_346_304) / 989.4e12,
        rtol=1e-12,
    )
    assert (half.attention_s, half.transfer_s) == (full.attention_s, full.transfer_s)


def test_tokens_per_dollar_by_hand():
    """1000 tokens/s for $3.6 an hour = 1,000,000 tokens per dollar."""
    assert_allclose(offload.tokens_per_dollar(1000, 3.6), 1e6)


def test_breakeven_price_ratio_by_hand():
    """8 GPUs make 1000 tok/s; 4 GPUs + 8 memory devices make 1500: tie when 8p/1000 = (4p + 8q)/1500, q = p."""
    assert_allclose(offload.breakeven_price_ratio(1500, 4, 8, 1000, 8), 1.0)
    assert (
        offload.breakeven_price_ratio(400, 4, 8, 1000, 8) < 0
    )  # loses even with free memory devices


@settings(max_examples=50, deadline=None)
@given(
    st.floats(1, 1e6),
    st.floats(1, 1e6),
    st.integers(1, 16),
    st.integers(1, 64),
    st.integers(1, 16),
    st.floats(0.1, 10),
)
def test_breakeven_price_ratio_ties_tokens_per_dollar(
    t_off, t_base, n_c, n_m, n_b, price
):
    """At the break-even ratio (when positive) both deployments give the same tokens per dollar."""
    ratio = offload.breakeven_price_ratio(t_off, n_c, n_m, t_base, n_b)
    if ratio > 1e-6:
        off = offload.tokens_per_dollar(t_off, n_c * price + n_m * ratio * price)
        base = offload.tokens_per_dollar(t_base, n_b * price)
        assert_allclose(off, base, rtol=1e-9)


@pytest.mark.parametrize(
    "call, param",
    [
        (lambda: offload.decode_split("llama-3-70b", -1), "context"),
        (lambda: offload.decode_split("llama-3-70b", 10, batch=0), "batch"),
        (lambda: offload.decode_split("llama-3-70b", 10, batch=1.5), "batch"),
        (lambda: offload.decode_split("llama-3-70b", 10, 2), "positional"),
        (lambda: offload.decode_split("gpt-5", 10), "model"),
        (lambda: offload.attention_intensity("llama-3-70b", dtype="fp12"), "dtype"),
        (
            lambda: offload.offload_step_time(
                "llama-3-70b", 10, "h100", "h20", "cx7", n_compute=0
            ),
            "n_compute",
        ),
        (
            lambda: offload.offload_step_time(
                "llama-3-70b", 10, "h100", "h20", "cx7", n_memory=-2
            ),
            "n_memory",
        ),
        (
            lambda: offload.offload_step_time(
                "llama-3-70b", 10, "h100", "h20", "cx7", n_links=0
            ),
            "n_links",
        ),
        (
            lambda: offload.offload_step_time(
                "llama-3-70b", 10, "h100", "h20", "cx7", mfu=2
            ),
            "mfu",
        ),
        (
            lambda: offload.offload_step_time("llama-3-70b", 10, "h100", "tpu", "cx7"),
            "accelerator",
        ),
        (
            lambda: offload.offload_step_time(
                "llama-3-70b", 10, "h100", "h20", "carrier pigeon"
            ),
            "link",
        ),
        (
            lambda: offload.offload_step_time(
                "llama-3-70b", 10, "h100", "h20", "cx7", 4
            ),
            "positional",
        ),
        (lambda: offload.tokens_per_dollar(10, 0), "price_per_hour"),
        (lambda: offload.tokens_per_dollar(-1, 1), "tokens_per_second"),
        (lambda: offload.tokens_per_dollar(10, math.inf), "price_per_hour"),
        (lambda: offload.step_traffic_bytes("llama-3-70b", batch=0), "batch"),
        (
            lambda: offload.breakeven_price_ratio(10, 1, 1, 0, 1),
            "baseline_tokens_per_s",
        ),
        (lambda: offload.breakeven_price_ratio(10, 1, 0, 5, 1), "n_memory"),
    ],
)
def test_bad_input_names_the_parameter(call, param):
    """Bad input raises ValueError/KeyError/TypeError whose message names the parameter."""
    with pytest.raises((ValueError, KeyError, TypeError), match=param):
        call()


def test_mla_intensity_under_tensor_parallelism_by_hand():
    """Review H4: DeepSeek-V3 (128 heads, latent 512 + rope 64) reads the whole 576-element entry per token on every
    device; absorbed, each head spends 2 * (576 + 512) = 2,176 FLOP on it. DP attention (128 heads on one GPU):
    128 * 2176 / 1152 = 241.8 FLOP/byte; TP-8 (16 heads per GPU): 16 * 2176 / 1152 = 30.2; TP-128: 1.9."""
    assert_allclose(
        offload.attention_intensity("deepseek-v3", heads_per_device=16),
        16 * 2176 / 1152,
    )
    assert_allclose(
        offload.attention_intensity("deepseek-v3", heads_per_device=16), 30.2, rtol=2e-3
    )
    assert_allclose(
        offload.attention_intensity("deepseek-v3", heads_per_device=128),
        241.78,
        rtol=1e-4,
    )
    assert_allclose(
        offload.attention_intensity("deepseek-v3", heads_per_device=1), 2176 / 1152
    )
    # fp8 KV halves the bytes and doubles the intensity
    assert_allclose(
        offload.attention_intensity("deepseek-v3", dtype="fp8", heads_per_device=16),
        16 * 2176 / 576,
    )


def test_gqa_intensity_under_tensor_parallelism_by_hand():
    """Llama-3-70B: 64 query heads in 8 groups of 8, head width 128. TP-8 gives each GPU 8 query heads and its one
    KV head: 2 * 8 / 2 = 8 FLOP/byte, as on one GPU. 4 heads per GPU (TP-16) still read a whole KV head:
    4 * 4 * 128 / (2 * 128 * 2) = 4. 12 heads straddle two KV heads: 2 * 12 / (2 * 2) = 6."""
    assert offload.attention_intensity("llama-3-70b", heads_per_device=8) == 8.0
    assert offload.attention_intensity("llama-3-70b", heads_per_device=4) == 4.0
    assert offload.attention_intensity("llama-3-70b", heads_per_device=12) == 6.0


def test_kv_bytes_per_device_by_hand():
    """Llama-3-70B bf16: 2 * 80 layers * 8 KV heads * 128 * 2 B = 327,680 B per token, split 8 ways under TP-8
    (40,960 B) and replicated beyond: TP-16 still stores one KV head, 40,960 B. DeepSeek-V3's latent,
    61 * 576 * 2 = 70,272 B, is stored whole on every GPU under any TP."""
    assert offload.kv_bytes_per_token_per_device("llama-3-70b") == 327_680
    assert (
        offload.kv_bytes_per_token_per_device("llama-3-70b", tensor_parallel=8)
        == 40_960
    )
    assert (
        offload.kv_bytes_per_token_per_device("llama-3-70b", tensor_parallel=16)
        == 40_960
    )
    for tp in (1, 8, 16):
        assert (
            offload.kv_bytes_per_token_per_device("deepseek-v3", tensor_parallel=tp)
            == 61 * 576 * 2
        )


def test_heads_per_device_bad_input_named():
    """Zero, too many or non-integer heads, and TP beyond the heads, name their parameter."""
    for bad in (0, 129, 2.5):
        with pytest.raises((ValueError, TypeError), match="heads_per_device"):
            offload.attention_intensity("deepseek-v3", heads_per_device=bad)
    for bad in (0, 65):
        with pytest.raises(ValueError, match="tensor_parallel"):
            offload.kv_bytes_per_token_per_device("llama-3-70b", tensor_parallel=bad)


def test_turnover_time_is_capacity_over_bandwidth():
    """H100 SXM: 80 GiB / 3.35 TB/s = 25.6 ms; the L4 (23,034 MiB with ECC, what its driver
    reports, at 300 GB/s) takes (23034 MiB / 300e9) / (80 GiB / 3.35e12) = 3.14 times as long,
    and the A10G (23,028 MiB at 600 GB/s) 1.57 times: not "two to three times" (review H14.1,
    whose 3.4 and 1.7 read the datasheets' 24 GB)."""
    h100 = offload.turnover_time_s("H100")
    assert h100 == pytest.approx(80 * 2**30 / 3.35e12)
    l4 = (23034 * 2**20 / 300e9) / h100
    a10g = (23028 * 2**20 / 600e9) / h100
    assert l4 == pytest.approx(3.14, abs=0.005) and a10g == pytest.approx(
        1.57, abs=0.005
    )
    assert offload.turnover_time_s("L4") / h100 == pytest.approx(l4)
    assert offload.turnover_time_s("A10G") / h100 == pytest.approx(a10g)
    with pytest.raises(KeyError):
        offload.turnover_time_s("no-such-gpu")


def test_flashmla_measurements_sit_below_the_models_bounds():
    """Chapter 10, Question 5: with all 128 heads DeepSeek-V3's decode attention does 241.8 FLOP/byte,
    just under the H800's throttled ridge (865 / 3.35 = 258), so the roofline bound is
    241.8 * 3.35e12 = 810 TFLOP/s, and FlashMLA's measured 660 TFLOP/s is 81 % of it; with 16 heads
    (TP-8) the bound is 101 TFLOP/s, bytes limit the kernel, and its measured 3,000 GB/s is 90 % of
    the datasheet's 3.35 TB/s. A measurement above a bound would mean the model is wrong."""
    bandwidth = 3.35e12
    peak = papers.FLASHMLA_H800_THROTTLED_PEAK_FLOPS
    dp = offload.attention_intensity("deepseek-v3")
    tp8 = offload.attention_intensity("deepseek-v3", heads_per_device=16)
    assert dp == pytest.approx(241.8, abs=0.05) and tp8 == pytest.approx(30.2, abs=0.05)
    assert dp < peak / bandwidth < 2 * dp
    bound = min(peak, dp * bandwidth)
    assert papers.FLASHMLA_H800_COMPUTE_BOUND_FLOPS / bound == pytest.approx(
        0.81, abs=0.01
    )
    assert tp8 * bandwidth < 0.15 * peak
    assert papers.FLASHMLA_H800_MEMORY_BOUND_BANDWIDTH < bandwidth


# --- decode context parallelism (DCP): the latent split by tokens (II-1) ---


def test_dcp_stripes_the_mla_latent_over_the_tp_group():
    full = offload.kv_bytes_per_token_per_device("deepseek-v3")
    assert (
        offload.kv_bytes_per_token_per_device("deepseek-v3", tensor_parallel=8) == full
    )
    striped = offload.kv_bytes_per_token_per_device(
        "deepseek-v3", tensor_parallel=8, decode_context_parallel=8
    )
    assert striped == pytest.approx(61 * 576 * 2 / 8)
    half = offload.kv_bytes_per_token_per_device(
        "deepseek-v3", tensor_parallel=8, decode_context_parallel=2
    )
    assert half == pytest.approx(full / 2)


def test_dcp_only_removes_replicated_gqa_heads():
    # Llama-3-70B has 8 KV heads: TP-8 replicates none, so DCP has nothing to stripe.
    with pytest.raises(ValueError, match="decode_context_parallel"):
        offload.kv_bytes_per_token_per_device(
            "llama-3-70b", tensor_parallel=8, decode_context_parallel=2
        )
    # TP-16 keeps each KV head on two GPUs; DCP-2 stripes the copies away.
    assert offload.kv_bytes_per_token_per_device(
        "llama-3-70b", tensor_parallel=16, decode_context_parallel=2
    ) == pytest.approx(
        offload.kv_bytes_per_token_per_device("llama-3-70b", tensor_parallel=8) / 2
    )


@pytest.mark.parametrize("bad", [3, 0])
def test_dcp_must_divide_tp(bad):
    with pytest.raises(ValueError, match="decode_context_parallel"):
        offload.kv_bytes_per_token_per_device(
            "deepseek-v3", tensor_parallel=8, decode_context_parallel=bad
        )


def test_dcp_exchange_bytes_by_hand():
    q, out = offload.dcp_exchange_bytes(
        "deepseek-v3", batch=10, decode_context_parallel=8
    )
    assert q == 10 * 128 * (512 + 64) * 2
    assert out == 10 * 128 * (512 * 2 + 4)
    q70, _ = offload.dcp_exchange_bytes(
        "llama-3-70b", batch=1, decode_context_parallel=2
    )
    assert q70 == 64 * 128 * 2
    with pytest.raises(ValueError, match="decode_context_parallel"):
        offload.dcp_exchange_bytes("deepseek-v3", batch=1, decode_context_parallel=1)
    with pytest.raises(ValueError, match="batch"):
        offload.dcp_exchange_bytes("deepseek-v3", batch=0, decode_context_parallel=8)
