"""Tests for :mod:`helpers.inference`: prefill and decode step times, the batch that fits, batches under a TBT target.

The costs come from :mod:`helpers.llm` and the bound from :mod:`helpers.roofline`
(Williams et al. 2009). Expected values are derived by hand in each docstring:
on a tiny model and a toy accelerator (every number small enough to check), and
on the book's running example, Llama-3-70B on 8 x H100 SXM (989.4 TFLOP/s bf16
dense, 3.35 TB/s, 80 GB read as 80 GiB; NVIDIA H100 datasheet). Model shapes are
the published configs (Touvron et al. 2023; Grattafiori et al. 2024); the 10 %
memory reserve is vLLM's default ``gpu_memory_utilization=0.9`` (Kwon et al. 2023).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from toy_models import TINY

from helpers import inference, llm, roofline
from helpers.hardware import Accelerator, get_accelerator


def test_one_largest_batch_for_llama3_70b_on_8xh100():
    """8 x 80 GiB x 0.9 = 618.5 GB, less 141.1 GB of weights, leaves 477.4 GB; a 4,097-token
    sequence holds 1.3425 GB of KV, so 355 fit, however the quantity is reached."""
    free = inference.free_kv_bytes("llama-3-70b", "H100", n_gpus=8)
    assert free == pytest.approx(8 * 80 * 2**30 * 0.9 - llm.weight_bytes("llama-3-70b"))
    assert free / 1e9 == pytest.approx(477.4, abs=0.1)
    assert inference.max_decode_batch("llama-3-70b", 4096, "H100", n_gpus=8) == 355
    slo = inference.max_batch_under_slo(
        "llama-3-70b", 4096, "H100", tbt_s=0.05, n_gpus=8
    )
    assert slo.batch == 355 and slo.limited_by == "memory"


MODELS = [m.name for m in llm.models()]
SLOW_FLOPS = Accelerator(
    "toy A",
    {"bf16": 1e4},
    1e3,
    1e6,
    "https://example.org",
    "1e4 FLOP/s, 1e3 B/s, 1e6 bytes",
)
FAST_FLOPS = Accelerator(
    "toy B",
    {"bf16": 1e3},
    1e4,
    1e6,
    "https://example.org",
    "1e3 FLOP/s, 1e4 B/s, 1e6 bytes",
)


# --- step times ---------------------------------------------------------------------------


def test_decode_step_by_hand_on_a_toy():
    """Tiny model, context 5, batch 2: 5,696 FLOP and 2,880 bytes (tests/test_llm.py, test_tiny_decode_by_hand).

    On toy A (1e4 FLOP/s, 1e3 B/s): compute 0.5696 s, memory 2.88 s: memory-bound, 2.88 s.
    On 2 of them: both halve (0.2848 s, 1.44 s). At 50 % MFU only compute doubles (1.1392 s); still 2.88 s.
    """
    one = inference.decode_step(TINY, 5, SLOW_FLOPS, batch=2)
    assert_allclose(
        [one.compute_s, one.memory_s, one.seconds], [0.5696, 2.88, 2.88], rtol=1e-12
    )
    assert one.bound == "memory"
    two = inference.decode_step(TINY, 5, SLOW_FLOPS, batch=2, n_gpus=2, link=None)
    assert_allclose(
        [two.compute_s, two.memory_s, two.seconds], [0.2848, 1.44, 1.44], rtol=1e-12
    )
    half = inference.decode_step(TINY, 5, SLOW_FLOPS, batch=2, mfu=0.5)
    assert_allclose([half.compute_s, half.seconds], [1.1392, 2.88], rtol=1e-12)
    assert (
        inference.decode_step_time(TINY, 5, SLOW_FLOPS, batch=2, n_gpus=2, link=None)
        == 1.44
    )


def test_prefill_step_by_hand_on_a_toy():
    """Tiny model, 3 tokens: 7,456 FLOP and 2,608 bytes (tests/test_llm.py, test_tiny_prefill_by_hand).

    On toy B (1e3 FLOP/s, 1e4 B/s): compute 7.456 s, memory 0.2608 s: compute-bound, 7.456 s;
    on 4 of them 1.864 s; at 50 % MFU 14.912 s.
    """
    step = inference.prefill_step(TINY, 3, FAST_FLOPS)
    assert_allclose(
        [step.compute_s, step.memory_s, step.seconds],
        [7.456, 0.2608, 7.456],
        rtol=1e-12,
    )
    assert step.bound == "compute"
    assert_allclose(
        inference.prefill_time(TINY, 3, FAST_FLOPS, n_gpus=4, link=None),
        1.864,
        rtol=1e-12,
    )
    assert_allclose(
        inference.prefill_time(TINY, 3, FAST_FLOPS, mfu=0.5), 14.912, rtol=1e-12
    )


def test_decode_step_llama3_70b_on_8_h100_by_hand():
    """Llama-3-70B, 64 sequences of 4,096 cached tokens, bf16, on 8 x H100 SXM.

    Bytes: block weights 80 * 855,638,016 * 2 = 136,902,082,560; lm_head 128,256 * 8192 * 2 = 2,101,346,304;
    embedding rows 64 * 8192 * 2 = 1,048,576; KV read and written 64 * 4,097 * 327,680 = 85,920,317,440;
    total 224,924,794,880 -> / (8 * 3.35e12) = 8.393 ms.
    FLOP per sequence: 136,902,082,560 (weights) + 4 * 80 * 8192 * 4,097 = 10,740,039,680 (attention)
    + 2,101,346,304 (lm_head) = 149,743,468,544; x 64 = 9.584e12 -> / (8 * 989.4e12) = 1.211 ms. Memory-bound.
    """
    step = inference.decode_step(
        "llama-3-70b", 4096, "H100", batch=64, n_gpus=8, link=None
    )
    assert_allclose(step.memory_s, 224_924_794_880 / (8 * 3.35e12), rtol=1e-12)
    assert_allclose(step.compute_s, 64 * 149_743_468_544 / (8 * 989.4e12), rtol=1e-12)
    assert (step.bound, round(step.seconds * 1e3, 3)) == ("memory", 8.393)


def test_prefill_llama3_70b_on_8_h100_by_hand():
    """Llama-3-70B prefill of 4,096 tokens on 8 x H100 SXM (the example in prefill_time's docstring).

    FLOP: 4,096 * 136,902,082,560 (weights) = 560,750,930,165,760; attention over 4096 * 4097 / 2 = 8,390,656
    pairs at 2,621,440 each = 21,995,601,264,640; lm_head 2,101,346,304; total 582,748,632,776,704
    -> / (8 * 989.4e12) = 73.6 ms, compute-bound (the bytes, ~0.15 TB, take ~5 ms).
    """
    step = inference.prefill_step("llama-3-70b", 4096, "H100", n_gpus=8, link=None)
    assert_allclose(step.compute_s, 582_748_632_776_704 / (8 * 989.4e12), rtol=1e-12)
    assert step.bound == "compute" and step.memory_s < 0.006
    assert (
        round(
            inference.prefill_time("llama-3-70b", 4096, "H100", n_gpus=8, link=None)
            * 1e3,
            1,
        )
        == 73.6
    )


def test_tp_allreduces_of_a_decode_step_by_hand():
    """Llama-3-70B decode, 64 sequences, 8 x H100 over NVLink 4 (450 GB/s, 1 us per step), ring.

    Megatron TP: 2 all-reduces per layer x 80 layers = 160, each of 64 * 8192 * 2 = 1,048,576 bytes:
    2*7/8 * 1,048,576 / 450e9 = 4.0777e-6 s + 14 * 1e-6 s = 18.0777e-6 s; x 160 = 2.8924 ms,
    added to the 8.393 ms memory bound: 11.285 ms. One GPU pays none.
    """
    step = inference.decode_step("llama-3-70b", 4096, "H100", batch=64, n_gpus=8)
    comm = 160 * (1.75 * 1_048_576 / 450e9 + 14e-6)
    assert_allclose(step.comm_s, comm, rtol=1e-12)
    assert_allclose(step.seconds, 224_924_794_880 / (8 * 3.35e12) + comm, rtol=1e-12)
    assert inference.decode_step("llama-3-70b", 4096, "H100", batch=64).comm_s == 0


def test_tp_allreduces_of_a_prefill_by_hand():
    """Llama-3-70B prefill of 4,096 tokens on 8 x H100: 160 all-reduces of 4096 * 8192 * 2 = 67,108,864 bytes:
    1.75 * 67,108,864 / 450e9 + 14e-6 = 275.0e-6 s each, 44.0 ms in all: 60 % of the 73.6 ms compute
    bound (the 34-59 % of part2.md H16 is the same ratio at NVLS and ring per-token costs).
    """
    comm = inference.tp_allreduce_time("llama-3-70b", 4096, "H100", n_gpus=8)
    assert_allclose(comm, 160 * (1.75 * 67_108_864 / 450e9 + 14e-6), rtol=1e-12)
    assert_allclose(
        inference.prefill_time("llama-3-70b", 4096, "H100", n_gpus=8),
        582_748_632_776_704 / (8 * 989.4e12) + comm,
        rtol=1e-12,
    )


def test_tp_link_choice_and_fp8_activations():
    """A100s talk over NVLink 3 (300 GB/s); fp8 weights still all-reduce 16-bit activations."""
    a100 = inference.tp_allreduce_time("llama-3-70b", 1, "A100 SXM4 80GB", n_gpus=2)
    assert_allclose(a100, 160 * (2 * 1e-6 + 1.0 * 8192 * 2 / 300e9), rtol=1e-12)
    fp8 = inference.tp_allreduce_time("llama-3-70b", 1, "H100", n_gpus=2, dtype="fp8")
    bf16 = inference.tp_allreduce_time("llama-3-70b", 1, "H100", n_gpus=2)
    assert fp8 == bf16
    assert (
        inference.tp_allreduce_time("llama-3-70b", 9, "H100", n_gpus=8, link=None) == 0
    )


def test_mean_decode_context_and_suffix_prefill():
    """Mean context: prompt + g // 2 (the steps run at prompt + 1 .. prompt + g - 1, mean prompt + g / 2).
    A prompt of 1,000 and 128 generated gives 1,064, not 1,128 (prompt + generated, K16's mutant).
    A suffix prefill is R(stop) - R(start); R(0) = 0.
    """
    assert inference.mean_decode_context(1000, 128) == 1064
    assert inference.mean_decode_context(1000, 1) == 1000
    whole = inference.prefill_time(M, 3000, "h100", n_gpus=8)
    part = inference.prefill_time(M, 1000, "h100", n_gpus=8)
    assert_allclose(
        inference.suffix_prefill_time(M, 1000, 3000, "h100", n_gpus=8), whole - part
    )
    assert inference.suffix_prefill_time(M, 0, 3000, "h100", n_gpus=8) == whole
    with pytest.raises(ValueError, match="stop"):
        inference.suffix_prefill_time(M, 10, 5, "h100")


def test_single_sequence_decode_is_weight_read_bound():
    """At batch 1 a decode step is memory-bound and cannot beat reading the weights once.

    Every weight except the embedding table (of which only one row per token is read) is read.
    """
    acc = get_accelerator("h100")
    for model in MODELS:
        m = llm.get_model(model)
        step = inference.decode_step(model, 1024, acc)
        assert step.bound == "memory"
        read = llm.weight_bytes(model) - m.vocab_size * m.d_model * 2
        if m.moe is not None:  # one token reads its own experts only
            read = llm.weights_read_bytes(model, 1)
        assert step.seconds >= read / acc.memory_bandwidth


@settings(max_examples=30)
@given(
    st.sampled_from(MODELS),
    st.integers(0, 32_768),
    st.integers(1, 1024),
    st.sampled_from(["a100", "h100", "l4"]),
)
def test_decode_throughput_grows_with_batch(model, context, batch, acc):
    """Property: doubling the batch never lowers tokens/s (batch / step time), and raises it while memory-bound.

    FLOP grow as f B and bytes as W + k B with W > 0 (the weights), so t(2B) <= 2 t(B), strictly while the
    memory term binds: more sequences share one read of the weights.
    """
    one = inference.decode_step(model, context, acc, batch=batch)
    two = inference.decode_step(model, context, acc, batch=2 * batch)
    assert 2 * batch / two.seconds >= batch / one.seconds * (1 - 1e-12)
    if two.bound == "memory":
        assert 2 * batch / two.seconds > batch / one.seconds


def test_prefill_of_a_long_prompt_is_compute_bound():
    """A 4k-token prefill reuses every weight 4,096 times: intensity ~4,000 FLOP/byte, past the A100's 153 ridge."""
    assert inference.prefill_step("llama-2-7b", 4096, "a100").bound == "compute"


# --- memory: what fits ----------------------------------------------------------------------


def test_free_kv_bytes_by_hand():
    """Tiny model on toy A (1e6 bytes): 0.9 * 1e6 - 2,704 bytes of bf16 weights = 897,296 bytes left;
    with no reserve 997,296; on 3 devices 3 * 0.9e6 - 2,704 = 2,697,296; a device without weights 900,000."""
    assert_allclose(inference.free_kv_bytes(TINY, SLOW_FLOPS), 897_296)
    assert_allclose(inference.free_kv_bytes(TINY, SLOW_FLOPS, reserve=0.0), 997_296)
    assert_allclose(inference.free_kv_bytes(TINY, SLOW_FLOPS, n_gpus=3), 2_697_296)
    assert_allclose(
        inference.free_kv_bytes(TINY, SLOW_FLOPS, holds_weights=False), 900_000
    )
    assert inference.RESERVE == 0.1


def test_max_decode_batch_by_hand_on_a_toy():
    """Each sequence of context 5 holds 6 tokens of KV (its context and the new token): 6 * 32 = 192 bytes.

    floor(897,296 / 192) = floor(4,673.4) = 4,673 sequences; without weights floor(900,000 / 192) = 4,687.
    """
    assert inference.max_decode_batch(TINY, 5, SLOW_FLOPS) == 4673
    assert inference.max_decode_batch(TINY, 5, SLOW_FLOPS, holds_weights=False) == 4687


def test_max_decode_batch_llama3_70b_on_8_h100():
    """The book's running example: Llama-3-70B in bf16 on 8 x H100 at a 4,096-token context, 10 % reserve.

    free = 8 * 80 * 2**30 * 0.9 - 2 * 70,553,706,496 = 618,475,290,624 - 141,107,412,992 = 477,367,877,632 bytes;
    per sequence 4,097 * 327,680 = 1,342,504,960 bytes; 477,367,877,632 / 1,342,504,960 = 355.6 -> 355.
    (Chapters 6 and 10 once said 323 and 371: 80e9-byte capacities, with and without the reserve.)
    """
    free = 8 * 80 * 2**30 * 0.9 - 2 * 70_553_706_496
    assert_allclose(
        inference.free_kv_bytes("llama-3-70b", "H100", n_gpus=8), free, rtol=1e-12
    )
    assert_allclose(free, 477_367_877_632, rtol=1e-12)
    assert inference.max_decode_batch("llama-3-70b", 4096, "H100", n_gpus=8) == 355


def test_max_decode_batch_llama2_7b_on_a100():
    """Llama-2-7B in bf16 on one 80 GB A100 at a 4,096-token context, 10 % reserve.

    free = 0.9 * 80 * 2**30 - 2 * 6,738,415,616 = 77,309,411,328 - 13,476,831,232 = 63,832,580,096 bytes;
    per sequence 4,097 * 524,288 = 2,148,007,936 bytes (MHA: 32 KV heads); 63,832,580,096 / 2,148,007,936
    = 29.7 -> 29.
    """
    assert inference.max_decode_batch("llama-2-7b", 4096, "a100") == 29


def test_memory_devices_hold_only_kv():
    """Attention offload's memory devices hold no weights: 2 x H20 (96 GB read as GiB) at 4,096 tokens.

    2 * 96 * 2**30 * 0.9 = 185,542,587,187 bytes / 1,342,504,960 per Llama-3-70B sequence = 138.2 -> 138.
    Holding the 141,107,412,992 bytes of weights as well leaves 44,435,174,195 bytes: 33.1 -> 33.
    """
    assert (
        inference.max_decode_batch(
            "llama-3-70b", 4096, "h20", n_gpus=2, holds_weights=False
        )
        == 138
    )
    assert inference.max_decode_batch("llama-3-70b", 4096, "h20", n_gpus=2) == 33


def test_weights_fit_by_hand():
    """Llama-3-70B's 141,107,412,992 bf16 bytes: one H100 offers 0.9 * 80 * 2**30 = 77,309,411,328 (no fit,
    even with no reserve: 85,899,345,920), two offer 154,618,822,656 (fit); in fp8 (70.6 GB) one H100 suffices."""
    assert not inference.weights_fit("llama-3-70b", "h100")
    assert not inference.weights_fit("llama-3-70b", "h100", reserve=0.0)
    assert inference.weights_fit("llama-3-70b", "h100", n_gpus=2)
    assert inference.weights_fit("llama-3-70b", "h100", dtype="fp8")


def test_gqa_fits_more_sequences_than_mha():
    """Llama-3-8B (8 KV heads) fits several times more 4k sequences than Llama-2-7B (32 KV heads) on the same GPU."""
    mha = inference.max_decode_batch("llama-2-7b", 4096, "h100")
    gqa = inference.max_decode_batch("llama-3-8b", 4096, "h100")
    assert gqa > 3 * mha


def test_max_decode_batch_zero_when_weights_do_not_fit():
    """Llama-3-70B (141 GB in bf16) fits on no single 80 GB GPU, so the largest batch is 0; on 8 it is large."""
    assert inference.max_decode_batch("llama-3-70b", 4096, "a100") == 0
    assert inference.max_decode_batch("llama-3-70b", 4096, "h100", n_gpus=8) > 100


@given(
    model=st.sampled_from(MODELS),
    acc=st.sampled_from(["a100", "h100", "h200", "l4", "a10g", "h20"]),
    context=st.integers(0, 131_072),
    n_gpus=st.integers(1, 8),
    reserve=st.floats(0, 0.5),
    holds_weights=st.booleans(),
)
def test_max_decode_batch_is_the_largest_that_fits(
    model, acc, context, n_gpus, reserve, holds_weights
):
    """Property: the returned batch's KV caches (llm.kv_cache_bytes of context + 1 tokens each) fit in
    free_kv_bytes, and one more sequence's would not."""
    options = {"n_gpus": n_gpus, "reserve": reserve, "holds_weights": holds_weights}
    free = inference.free_kv_bytes(model, acc, **options)
    batch = inference.max_decode_batch(model, context, acc, **options)
    per_sequence = llm.kv_cache_bytes(model, context + 1)
    assert batch >= 0
    if batch > 0:
        assert llm.kv_cache_bytes(model, context + 1, batch=batch) <= free * (1 + 1e-12)
    assert (batch + 1) * per_sequence > free * (1 - 1e-12)


@given(model=st.sampled_from(MODELS), context=st.integers(0, 65_536))
def test_max_decode_batch_falls_with_context(model, context):
    """A longer context never lets more sequences fit."""
    assert inference.max_decode_batch(
        model, context + 1, "h200"
    ) <= inference.max_decode_batch(model, context, "h200")


# --- the critical decode batch ------------------------------------------------------------------


@settings(max_examples=30)
@given(
    model=st.sampled_from(MODELS),
    context=st.integers(0, 65_536),
    acc=st.sampled_from(["a100", "h100", "h20", "l4", "t4"]),
    mfu=st.floats(0.1, 1.0),
)
def test_critical_decode_batch_is_the_crossing_batch_of_decode_cost(
    model, context, acc, mfu
):
    """Property: critical_decode_batch is roofline.crossing_batch of llm.decode_cost (one critical batch)."""
    assume(
        llm.get_model(model).moe is None
    )  # MoE: bytes not affine in the batch (tested below)
    dtype = get_accelerator(acc).half_dtype
    expected = roofline.crossing_batch(
        lambda b: llm.decode_cost(model, context, batch=b, dtype=dtype),
        acc,
        dtype=dtype,
        mfu=mfu,
    )
    got = inference.critical_decode_batch(model, context, acc, dtype=dtype, mfu=mfu)
    assert got == expected or (math.isinf(got) and math.isinf(expected))


@pytest.mark.parametrize("model", MODELS)
def test_critical_decode_batch_flips_the_bound(model):
    """At a short context, the step is memory-bound just below the critical batch and compute-bound at or above it."""
    critical = inference.critical_decode_batch(model, 16, "h100")
    assert math.isfinite(critical)
    below, above = math.floor(critical), math.ceil(critical)
    if below == above:
        above += 1
    assert (
        inference.decode_step(model, 16, "h100", batch=max(below, 1)).bound == "memory"
    )
    assert inference.decode_step(model, 16, "h100", batch=above).bound == "compute"


def test_critical_decode_batch_near_ridge_point_at_zero_context():
    """With no cached tokens decode intensity is about the batch, so the critical batch is close to the ridge
    point: 989.4e12 / 3.35e12 = 295 on an H100."""
    critical = inference.critical_decode_batch("llama-3-8b", 0, "h100")
    assert_allclose(critical, 295.3, rtol=0.05)


def test_critical_decode_batch_infinite_for_long_mha_context():
    """Llama-2-7B (MHA), 4,096 cached tokens, H100: per sequence a step does ~15.4e9 FLOP (12.95e9 weights,
    4 * 32 * 4096 * 4097 = 2.15e9 attention, 0.26e9 lm_head) but reads 4,097 * 524,288 = 2.15e9 bytes of KV,
    which at the 295 ridge is worth 634e9 FLOP: compute never catches up, at any batch."""
    assert inference.critical_decode_batch("llama-2-7b", 4096, "h100") == math.inf
    assert (
        inference.decode_step("llama-2-7b", 4096, "h100", batch=10_000).bound
        == "memory"
    )


# --- the largest batch under a time-between-tokens target ------------------------------------------

M = "llama-3-70b"


def test_slo_batch_is_largest_meeting_target():
    """The chosen batch meets the 20 ms TBT target and one more sequence would not (8 x H100, Llama-3-70B, 4k)."""
    choice = inference.max_batch_under_slo(M, 4096, "h100", tbt_s=0.02, n_gpus=8)
    assert choice.limited_by == "slo" and choice.batch > 1
    assert (
        inference.decode_step_time(M, 4096, "h100", batch=choice.batch, n_gpus=8)
        <= 0.02
    )
    assert (
        inference.decode_step_time(M, 4096, "h100", batch=choice.batch + 1, n_gpus=8)
        > 0.02
    )
    assert_allclose(choice.tokens_per_s, choice.batch / choice.step_s)


def test_slo_batch_by_hand():
    """Memory-bound steps on 8 x H100 take (W + B k) / (8 * 3.35e12): W = 139,003,428,864 bytes of weights read
    per step, k = 16,384 (embedding row) + 4,097 * 327,680 = 1,342,521,344 bytes per sequence. A 20 ms target
    allows B <= (0.02 * 26.8e12 - W) / k = (536e9 - 139.0e9) / 1.3425e9 = 295.7 -> 295 sequences; but only 355
    fit, so the target binds. With a 1 ms overhead per step: (0.019 * 26.8e12 - W) / k = 275.7 -> 275.
    """
    assert (
        inference.max_batch_under_slo(
            M, 4096, "h100", tbt_s=0.02, n_gpus=8, link=None
        ).batch
        == 295
    )
    assert (
        inference.max_batch_under_slo(
            M, 4096, "h100", tbt_s=0.02, n_gpus=8, overhead=1e-3, link=None
        ).batch
        == 275
    )


def test_slo_batch_with_tp_allreduces_by_hand():
    """As test_slo_batch_by_hand, plus 160 ring all-reduces over NVLink 4: 160 * 14e-6 = 2.24 ms fixed and
    160 * 1.75 * 16,384 / 450e9 = 10.19e-6 s per sequence. B <= (0.02 - 139.0e9/26.8e12 - 2.24e-3)
    / (1.3425e9/26.8e12 + 10.19e-6) = (0.02 - 7.4267e-3) / 60.289e-6 = 208.6 -> 208.
    """
    assert (
        inference.max_batch_under_slo(M, 4096, "h100", tbt_s=0.02, n_gpus=8).batch
        == 208
    )


def test_slo_batch_capped_by_memory_and_by_user():
    """A loose target stops at the memory cap (355); max_batch caps it further; a too-tight target gives batch 0."""
    loose = inference.max_batch_under_slo(M, 4096, "h100", tbt_s=10.0, n_gpus=8)
    assert (loose.batch, loose.limited_by) == (355, "memory")
    capped = inference.max_batch_under_slo(
        M, 4096, "h100", tbt_s=10.0, n_gpus=8, max_batch=16
    )
    assert (capped.batch, capped.limited_by) == (16, "max_batch")
    tight = inference.max_batch_under_slo(M, 4096, "h100", tbt_s=1e-4, n_gpus=8)
    assert (tight.batch, tight.tokens_per_s, tight.limited_by) == (0, 0.0, "slo")
    no_room = inference.max_batch_under_slo(M, 4096, "h100", tbt_s=1.0, n_gpus=1)
    assert (no_room.batch, no_room.limited_by) == (0, "memory")


@settings(max_examples=30, deadline=None)
@given(st.floats(0.005, 0.2), st.integers(0, 32_768))
def test_looser_target_never_smaller_batch(tbt, context):
    """Relaxing the TBT target never shrinks the batch."""
    a = inference.max_batch_under_slo("llama-3-8b", context, "h100", tbt_s=tbt)
    b = inference.max_batch_under_slo("llama-3-8b", context, "h100", tbt_s=tbt * 1.5)
    assert b.batch >= a.batch


# --- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, param",
    [
        (
            lambda: inference.max_decode_batch("llama-2-7b", 1024, "a100", reserve=1.0),
            "reserve",
        ),
        (
            lambda: inference.max_decode_batch(
                "llama-2-7b", 1024, "a100", reserve=-0.1
            ),
            "reserve",
        ),
        (lambda: inference.max_decode_batch("llama-2-7b", -1, "a100"), "context"),
        (
            lambda: inference.max_decode_batch("llama-2-7b", 1024, "a100", n_gpus=0),
            "n_gpus",
        ),
        (
            lambda: inference.max_decode_batch(
                "llama-2-7b", 1024, "a100", holds_weights="no"
            ),
            "holds_weights",
        ),
        (
            lambda: inference.free_kv_bytes("llama-2-7b", "a100", holds_weights=0),
            "holds_weights",
        ),
        (lambda: inference.weights_fit("llama-2-7b", "a100", reserve=2), "reserve"),
        (
            lambda: inference.decode_step_time("llama-2-7b", 1024, "a100", batch=0),
            "batch",
        ),
        (
            lambda: inference.decode_step_time("llama-2-7b", 1024, "a100", mfu=1.5),
            "mfu",
        ),
        (
            lambda: inference.decode_step_time("llama-2-7b", 1024, "a100", n_gpus=0),
            "n_gpus",
        ),
        (lambda: inference.prefill_time("llama-2-7b", 0, "a100"), "tokens"),
        (lambda: inference.prefill_time("gpt-5", 16, "a100"), "model"),
        (lambda: inference.prefill_time("llama-2-7b", 16, "b9000"), "accelerator"),
        (lambda: inference.prefill_time("llama-2-7b", 16, "t4", dtype="bf16"), "dtype"),
        (lambda: inference.prefill_time("llama-2-7b", 16, "t4", 2), "positional"),
        (
            lambda: inference.critical_decode_batch("llama-2-7b", 16, "a100", mfu=0),
            "mfu",
        ),
        (
            lambda: inference.max_batch_under_slo(M, 100, "h100", tbt_s=0, n_gpus=8),
            "tbt_s",
        ),
        (
            lambda: inference.max_batch_under_slo(
                M, 100, "h100", tbt_s=0.1, n_gpus=8, max_batch=0
            ),
            "max_batch",
        ),
        (
            lambda: inference.max_batch_under_slo(
                M, 100, "h100", tbt_s=0.1, n_gpus=8, overhead=-1
            ),
            "overhead",
        ),
        (lambda: inference.max_batch_under_slo(M, 100, "h100", 0.1), "positional"),
    ],
)
def test_bad_input_names_the_parameter(call, param):
    """Bad input raises ValueError, KeyError or TypeError whose message names the parameter."""
    with pytest.raises((ValueError, KeyError, TypeError)) as info:
        call()
    assert param in str(info.value)


def test_step_time_refuses_a_fractional_batch():
    """A non-integer batch is refused (TypeError naming batch) rather than rounded."""
    with pytest.raises(TypeError, match="batch"):
        inference.decode_step_time("llama-2-7b", 1024, "a100", batch=np.float64(2.5))


def test_llama2_7b_on_a_t4_fits_one_conversation():
    """Q2 of Chapter 6: Llama-2-7B fp16 on a T4 (15 GiB reported with ECC on) fits 1 conversation of 1,024 tokens.

    By hand: 0.9 x 15 x 2**30 = 14.50e9 B; weights 2 x 6.738e9 = 13.48e9 B; 1.02e9 B left;
    one sequence holds 1,025 x 524,288 B = 0.537e9 B, so floor(1.89) = 1. With the datasheet's
    16 GiB the same sum gave 3 (the H2 error). With int8 weights and an int8 cache 28 fit.
    """
    free = inference.free_kv_bytes("llama-2-7b", "T4", dtype="fp16")
    assert_allclose(free, 0.9 * 15 * 2**30 - 2 * llm.param_count("llama-2-7b"))
    assert inference.max_decode_batch("llama-2-7b", 1024, "T4", dtype="fp16") == 1
    sheet = Accelerator(
        name="T4 as on its datasheet",
        peak_flops={"fp16": 65e12},
        memory_bandwidth=320e9,
        memory_capacity=16 * 2**30,
        source="test",
    )
    assert inference.max_decode_batch("llama-2-7b", 1024, sheet, dtype="fp16") == 3
    assert inference.max_decode_batch("llama-2-7b", 1024, "T4", dtype="int8") == 28


def test_kv_copies_divides_the_batch_that_fits():
    """An MLA latent replicated on all 8 GPUs (head-sharded TP) fits 8x fewer sequences than sharded (DP attention).

    floor(floor(x) / 8) == floor(x / 8), so the replicated batch is exactly the sharded one // 8.
    """
    args = ("deepseek-v3", 32768, "H200")
    dp = inference.max_decode_batch(*args, n_gpus=8, dtype="fp8")
    tp = inference.max_decode_batch(*args, n_gpus=8, dtype="fp8", kv_copies=8)
    assert dp > 8 and tp == dp // 8
    assert inference.max_decode_batch(*args, n_gpus=8, dtype="fp8", kv_copies=1) == dp
    with pytest.raises(ValueError, match="kv_copies"):
        inference.max_decode_batch(*args, n_gpus=8, kv_copies=9)
    with pytest.raises(ValueError, match="kv_copies"):
        inference.max_decode_batch(*args, n_gpus=8, kv_copies=0)


def test_published_decode_steps_match_lmdeploy_table():
    """LMDeploy's A100 fp16 table (lmdeploy_a100_fp16): Llama-2-7B, 128 -> 2,048 tokens, p50 step 10/15/21/30 ms at batch 1/16/32/64."""
    steps = inference.published_decode_steps("llama-2-7b", "A100", dtype="fp16")
    long = {
        int(p.setting["batch"]): p.value
        for p in steps
        if (p.setting["input_len"], p.setting["output_len"]) == ("128", "2048")
    }
    assert long == {1: 0.010, 16: 0.015, 32: 0.021, 64: 0.030}
    assert all(p.quantity == "step_latency" and p.unit == "s" for p in steps)
    assert "lmdeploy" in steps[0].source.lower()
    nim = inference.published_decode_steps("llama-3-70b", "H100", n_gpus=2, dtype="fp8")
    assert nim and all(p.setting["num_gpus"] == "2" for p in nim)
    assert inference.published_decode_steps("llama-2-7b", "A100", dtype="bf16") == ()
    assert (
        inference.published_decode_steps("llama-2-7b", "A100", n_gpus=3, dtype="fp16")
        == ()
    )
    with pytest.raises(ValueError, match="n_gpus"):
        inference.published_decode_steps("llama-2-7b", "A100", n_gpus=0)
    with pytest.raises(KeyError, match="dtype"):
        inference.published_decode_steps("llama-2-7b", "A100", dtype="fp5")
