"""Tests of :mod:`helpers.roofline`: ridge point, attainable FLOP/s, the time breakdown, the crossing batch.

Reference for the model: Williams, Waterman and Patterson, "Roofline: an
insightful visual performance model for multicore architectures", CACM 2009
(williams2009roofline). Hardware figures: NVIDIA T4 and H100 datasheets.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from helpers import convnets, hardware, llm, ops, roofline
from helpers.hardware import MIB, Accelerator, get_accelerator
from helpers.ops import Cost
from helpers.roofline import (
    TimeBreakdown,
    attainable_flops,
    bound,
    breakdown,
    crossing_batch,
    ridge_point,
    roofline_time,
)


def test_relu_on_the_vector_roof():
    """An fp16 ReLU's compute term uses the 133.8 TFLOP/s CUDA-core rate on an H100, not 989.4."""
    cost = ops.elementwise_cost(4096 * 4096, dtype="fp16")
    tensor = roofline.breakdown(cost.flops, cost.bytes, "H100 SXM")
    vector = roofline.breakdown(cost.flops, cost.bytes, "H100 SXM", roof="vector")
    assert_allclose(vector.compute_s, 4096 * 4096 / 133.8e12, rtol=1e-12)
    assert_allclose(vector.compute_s / tensor.compute_s, 989.4 / 133.8, rtol=1e-12)
    assert vector.bound == "memory"  # the bound is unchanged
    with pytest.raises(ValueError, match="roof"):
        roofline.breakdown(1.0, 1.0, "T4", roof="cuda")


def test_achievable_scales_ceilings_and_keeps_the_rest():
    """80 % of an H100's 989.4 is 791.5 TFLOP/s; SMs, L2 and capacity are unchanged."""
    h = roofline.achievable("H100 SXM", compute_fraction=0.8, memory_fraction=0.9)
    assert_allclose(h.flops("bf16"), 0.8 * 989.4e12)
    assert_allclose(h.vector_flops("fp16"), 0.8 * 133.8e12)
    assert_allclose(h.memory_bandwidth, 0.9 * 3.35e12)
    assert (h.sm_count, h.l2_bytes) == (132, 50 * MIB)
    assert_allclose(
        roofline.ridge_point(h, dtype="bf16"),
        roofline.ridge_point("H100 SXM", dtype="bf16") * 0.8 / 0.9,
    )
    with pytest.raises(ValueError, match="compute_fraction"):
        roofline.achievable("T4", compute_fraction=1.2, memory_fraction=0.8)


@given(c=st.floats(0, 1e3, allow_nan=False), m=st.floats(0, 1e3, allow_nan=False))
def test_wiring_overlap_bounds_within_two_x(c, m):
    """Wiring (restates the code's return line): max(c, m) <= true time <= c + m <= 2 max(c, m)
    (scaling book, "All About Rooflines"). Its value partner is test_overlap_bounds_by_hand."""
    low, high = roofline.overlap_bounds(c, m)
    assert low == max(c, m) and high == c + m
    assert low <= high <= 2 * low + 1e-300


def test_overlap_bounds_by_hand():
    """3 ms of compute and 5 ms of memory traffic: perfectly overlapped 5 ms, serial 8 ms;
    equal terms (4 ms, 4 ms) are the worst case, exactly 2x apart (4 and 8 ms)."""
    assert roofline.overlap_bounds(3e-3, 5e-3) == pytest.approx((5e-3, 8e-3))
    low, high = roofline.overlap_bounds(4e-3, 4e-3)
    assert (low, high) == pytest.approx((4e-3, 8e-3)) and high == 2 * low


DEVICES = ["T4", "A100", "H100 SXM", "L4", "RTX 4090"]
positive_floats = st.floats(
    min_value=1e-3, max_value=1e18, allow_nan=False, allow_infinity=False
)
work = st.floats(min_value=0.0, max_value=1e18, allow_nan=False, allow_infinity=False)
factors = st.floats(
    min_value=1e-3, max_value=1e3, allow_nan=False, allow_infinity=False
)


def test_ridge_h100_bf16():
    """H100 SXM bf16 ridge = 989.4e12 / 3.35e12 ≈ 295 FLOP/byte (dense peak; NVIDIA H100 datasheet)."""
    assert_allclose(
        ridge_point("H100 SXM", dtype="bf16"), 989.4e12 / 3.35e12, rtol=1e-12
    )
    assert round(ridge_point("h100", dtype="bf16")) == 295


def test_ridge_t4_fp16():
    """T4 fp16 ridge = 65e12 / 320e9 = 203.125 FLOP/byte; fp32 = 8.1e12 / 320e9 = 25.3 (T4 datasheet)."""
    assert_allclose(ridge_point("T4", dtype="fp16"), 203.125, rtol=1e-12)
    assert_allclose(ridge_point("T4"), 203.1, rtol=1e-3)  # fp16 is the default dtype
    assert_allclose(ridge_point("T4", dtype="fp32"), 25.3125, rtol=1e-12)
    assert_allclose(
        ridge_point("A100", dtype="tf32"), 156e12 / 2039e9, rtol=1e-12
    )  # 76.5 (A100 80GB datasheet)


def test_ridge_on_the_vector_roof():
    """Elementwise work runs on the plain units: the H100 SXM's fp16 vector ridge is
    133.8e12 / 3.35e12 = 39.9 FLOP/byte, the T4's 16.2e12 / 320e9 = 50.6; an unknown roof is an error."""
    assert_allclose(
        ridge_point("H100 SXM", dtype="fp16", roof="vector"),
        133.8e12 / 3.35e12,
        rtol=1e-9,
    )
    assert_allclose(ridge_point("T4", dtype="fp16", roof="vector"), 50.625, rtol=1e-9)
    with pytest.raises(ValueError, match="roof"):
        ridge_point("T4", roof="matrix")  # type: ignore[arg-type]


def test_ridge_accepts_accelerator_object():
    """A hand-built (e.g. measured) Accelerator works wherever a name does."""
    toy = Accelerator("toy", {"fp32": 1e12}, 1e10, 1e9, "https://example.org", "toy")
    assert_allclose(ridge_point(toy, dtype="fp32"), 100.0)
    assert_allclose(attainable_flops(10.0, toy, dtype="fp32"), 1e11)


def test_attainable_flops_scalar_values():
    """Scalar in, float out: below the ridge the slope is the bandwidth, above it the peak.

    T4 fp16: at 10 FLOP/byte, 10 * 320e9 = 3.2e12; at 1000, the 65e12 peak; at the ridge both.
    """
    low = attainable_flops(10.0, "T4", dtype="fp16")
    assert isinstance(low, float)
    assert_allclose(low, 3.2e12)
    assert_allclose(attainable_flops(1000, "T4", dtype="fp16"), 65e12)
    assert_allclose(attainable_flops(203.125, "T4", dtype="fp16"), 65e12)
    assert isinstance(attainable_flops(np.float64(3.0), "T4"), float)


def test_attainable_flops_vectorised():
    """Array in, array of the same shape out, each element the scalar result."""
    x = np.array([[0.5, 10.0], [203.125, 1e4]])
    y = attainable_flops(x, "T4", dtype="fp16")
    assert isinstance(y, np.ndarray) and y.shape == x.shape
    expected = [
        [attainable_flops(float(v), "T4", dtype="fp16") for v in row] for row in x
    ]
    assert_allclose(y, expected)
    assert_allclose(
        attainable_flops([1.0, 2.0], "A100", dtype="bf16"), [2039e9, 2 * 2039e9]
    )


def test_roofline_time_hand_derived():
    """Hand-derived times on the T4 (fp16 65e12 FLOP/s, 320e9 B/s).

    * 1e12 FLOP, 1e9 bytes: compute 1/65 s = 15.38 ms > memory 3.125 ms -> 15.38 ms.
    * 1e9 FLOP, 1e9 bytes: memory 3.125 ms > compute 15.4 us -> 3.125 ms.
    * plus overhead 1e-3: added on top.
    """
    assert_allclose(roofline_time(1e12, 1e9, "T4"), 1 / 65, rtol=1e-12)
    assert_allclose(roofline_time(1e9, 1e9, "T4"), 1e9 / 320e9, rtol=1e-12)
    assert_allclose(
        roofline_time(1e9, 1e9, "T4", overhead=1e-3), 1e9 / 320e9 + 1e-3, rtol=1e-12
    )
    assert_allclose(roofline_time(0, 320e9, "T4"), 1.0)
    assert_allclose(roofline_time(65e12, 0, "T4"), 1.0)
    # fp32 peak is 8.1e12
    assert_allclose(roofline_time(8.1e12, 1.0, "T4", dtype="fp32"), 1.0)


def test_bound_regimes():
    """``bound`` names the dominating term: memory below the ridge, compute above, overhead when it exceeds both."""
    assert bound(1e9, 1e9, "T4") == "memory"  # intensity 1 < 203
    assert bound(1e12, 1e9, "T4") == "compute"  # intensity 1000 > 203
    assert (
        bound(1e6, 1e6, "T4", overhead=10e-6) == "overhead"
    )  # 3 ns of memory, 10 us launch
    assert bound(1e12, 1e9, "T4", overhead=1e-6) == "compute"
    # exactly at the ridge the two times tie; the function calls it compute-bound
    assert bound(203.125e9, 1e9, "T4") == "compute"


def test_overhead_regime_time():
    """In the overhead regime, the time is nearly the overhead alone (tiny kernels are launch-bound)."""
    t = roofline_time(1e3, 1e3, "H100", dtype="bf16", overhead=5e-6)
    assert 5e-6 <= t < 5e-6 * 1.001


@given(st.lists(positive_floats, min_size=2, max_size=20), st.sampled_from(DEVICES))
def test_attainable_monotone_and_capped(values, device):
    """Property: attainable FLOP/s is non-decreasing in intensity and never above the peak."""
    x = np.sort(np.array(values))
    y = attainable_flops(x, device, dtype="fp16")
    assert np.all(np.diff(y) >= 0)
    assert np.all(y <= get_accelerator(device).flops("fp16"))
    assert np.all(y > 0)


@given(work, work, st.sampled_from(DEVICES), st.floats(0, 1e-3))
def test_time_at_least_both_bounds(flops, bytes_, device, overhead):
    """Property: roofline_time >= compute time and >= memory time (+ overhead)."""
    assume(flops > 0 or bytes_ > 0)
    acc = get_accelerator(device)
    t = roofline_time(flops, bytes_, device, dtype="fp16", overhead=overhead)
    assert t >= flops / acc.flops("fp16") + overhead - 1e-300
    assert t >= bytes_ / acc.memory_bandwidth + overhead - 1e-300
    assert t >= overhead


@given(positive_floats, positive_floats, factors, st.sampled_from(DEVICES))
def test_time_monotone_in_flops_and_bytes(flops, bytes_, factor, device):
    """Property: more FLOP or more bytes never makes the bound smaller."""
    grow = 1 + factor
    t = roofline_time(flops, bytes_, device)
    assert roofline_time(flops * grow, bytes_, device) >= t
    assert roofline_time(flops, bytes_ * grow, device) >= t


@given(positive_floats, positive_floats, factors, st.sampled_from(DEVICES))
def test_time_scales_linearly(flops, bytes_, factor, device):
    """Property: scaling FLOP and bytes together by k scales the (overhead-free) time by k."""
    t = roofline_time(flops, bytes_, device)
    assert_allclose(
        roofline_time(flops * factor, bytes_ * factor, device), factor * t, rtol=1e-9
    )


@given(positive_floats, positive_floats, st.sampled_from(DEVICES))
def test_bound_agrees_with_ridge(flops, bytes_, device):
    """Property: without overhead, the kernel is compute-bound iff its intensity >= ridge point."""
    intensity = flops / bytes_
    ridge = ridge_point(device)
    assume(abs(intensity / ridge - 1) > 1e-9)
    assert bound(flops, bytes_, device) == (
        "compute" if intensity > ridge else "memory"
    )


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf")])
def test_roofline_time_rejects_bad_numbers(bad):
    """Negative, NaN or infinite FLOP/bytes/overhead raise ValueError naming the parameter."""
    with pytest.raises(ValueError, match="flops"):
        roofline_time(bad, 1e6, "T4")
    with pytest.raises(ValueError, match="bytes"):
        roofline_time(1e6, bad, "T4")
    with pytest.raises(ValueError, match="overhead"):
        roofline_time(1e6, 1e6, "T4", overhead=bad)
    with pytest.raises(ValueError, match="flops"):
        bound(bad, 1e6, "T4")


@pytest.mark.parametrize("bad", ["1e6", True, None, [1.0]])
def test_roofline_time_rejects_non_numbers(bad):
    """Strings, bools, None and lists are not FLOP counts: TypeError naming the parameter."""
    with pytest.raises(TypeError, match="flops"):
        roofline_time(bad, 1e6, "T4")
    with pytest.raises(TypeError, match="bytes"):
        roofline_time(1e6, bad, "T4")
    with pytest.raises(TypeError, match="overhead"):
        roofline_time(1e6, 1e6, "T4", overhead=bad)


def test_roofline_time_rejects_zero_work():
    """Zero FLOP and zero bytes is no kernel at all: ValueError naming both."""
    with pytest.raises(ValueError, match="flops and bytes"):
        roofline_time(0, 0, "T4")


@pytest.mark.parametrize(
    "bad", [0.0, -1.0, float("nan"), float("inf"), [1.0, 0.0], [], [1.0, float("nan")]]
)
def test_attainable_rejects_bad_intensity(bad):
    """Intensity must be finite and > 0 (zero FLOP/byte is meaningless on a log-log roofline)."""
    with pytest.raises(ValueError, match="intensity"):
        attainable_flops(bad, "T4")


@pytest.mark.parametrize(
    "bad", ["abc", "10", True, np.array([True, False]), None, {"a": 1}]
)
def test_attainable_rejects_non_numbers(bad):
    """Strings (even numeric ones), bools and other non-numbers raise TypeError naming ``intensity``."""
    with pytest.raises(TypeError, match="intensity"):
        attainable_flops(bad, "T4")


def test_unknown_device_and_dtype():
    """Unknown device -> KeyError naming ``accelerator``; dtype missing on the device -> KeyError naming ``dtype``."""
    with pytest.raises(KeyError, match="accelerator"):
        ridge_point("TPU v9")
    with pytest.raises(KeyError, match="dtype"):
        ridge_point("T4", dtype="bf16")
    with pytest.raises(KeyError, match="dtype"):
        roofline_time(1.0, 1.0, "T4", dtype="bf16")


def test_positional_options_are_refused():
    """Options are keyword-only (the calling convention of :mod:`helpers`): a positional dtype is a TypeError."""
    with pytest.raises(TypeError):
        ridge_point("T4", "fp32")  # type: ignore[misc]
    with pytest.raises(TypeError):
        roofline_time(1e9, 1e9, "T4", "fp32")  # type: ignore[misc]
    with pytest.raises(TypeError):
        breakdown(1e9, 1e9, "T4", "fp32")  # type: ignore[misc]


# --- the time breakdown ---------------------------------------------------------------


def test_breakdown_by_hand():
    """Hand-derived terms on the T4 (65e12 FLOP/s fp16, 320e9 B/s, T4 datasheet).

    * 1e12 FLOP, 1e9 bytes: compute 1e12 / 65e12 = 15.38 ms, memory 1e9 / 320e9 = 3.125 ms: compute-bound.
    * on 2 GPUs at 50 % MFU: compute 1e12 / (2 * 0.5 * 65e12) = 15.38 ms again, memory halves to 1.5625 ms.
    * a 2^24-element fp16 ReLU moves 2^24 * (2 + 2) bytes = 64 MiB: 67,108,864 / 320e9 = 209.7 us, memory-bound;
      with a 1 ms overhead the overhead dominates.
    """
    one = breakdown(1e12, 1e9, "T4")
    assert isinstance(one, TimeBreakdown)
    assert_allclose(
        [one.compute_s, one.memory_s, one.overhead_s, one.seconds],
        [1 / 65, 3.125e-3, 0.0, 1 / 65],
    )
    assert one.bound == "compute"
    two = breakdown(1e12, 1e9, "T4", n_gpus=2, mfu=0.5)
    assert_allclose(
        [two.compute_s, two.memory_s, two.seconds], [1 / 65, 1.5625e-3, 1 / 65]
    )
    relu = ops.op_cost("relu", 2**24, dtype="fp16")
    b = breakdown(relu.flops, relu.bytes, "T4", dtype="fp16")
    assert_allclose(b.memory_s, 67_108_864 / 320e9)
    assert b.bound == "memory"
    slow = breakdown(relu.flops, relu.bytes, "T4", overhead=1e-3)
    assert (slow.bound, slow.seconds) == (
        "overhead",
        pytest.approx(1e-3 + 67_108_864 / 320e9),
    )


@given(
    work,
    work,
    st.floats(min_value=0.0, max_value=1e-3),
    st.sampled_from(DEVICES),
    st.sampled_from(["fp16", "fp32"]),
)
def test_roofline_time_and_bound_are_the_breakdown(
    flops, bytes_, overhead, device, dtype
):
    """Property: roofline_time and bound are exactly breakdown's seconds and bound; its terms are F/P and B/W."""
    assume(flops > 0 or bytes_ > 0)
    parts = breakdown(flops, bytes_, device, dtype=dtype, overhead=overhead)
    assert (
        roofline_time(flops, bytes_, device, dtype=dtype, overhead=overhead)
        == parts.seconds
    )
    assert bound(flops, bytes_, device, dtype=dtype, overhead=overhead) == parts.bound
    acc = get_accelerator(device)
    assert_allclose(parts.compute_s, flops / acc.flops(dtype), rtol=1e-12)
    assert_allclose(parts.memory_s, bytes_ / acc.memory_bandwidth, rtol=1e-12)
    assert parts.seconds == max(parts.compute_s, parts.memory_s) + overhead
    if parts.bound != "overhead":
        assert getattr(parts, f"{parts.bound}_s") == max(
            parts.compute_s, parts.memory_s
        )


@given(
    positive_floats,
    positive_floats,
    st.integers(1, 64),
    st.floats(0.01, 1.0),
    st.sampled_from(DEVICES),
)
def test_breakdown_splits_over_gpus_and_mfu_slows_compute(
    flops, bytes_, n_gpus, mfu, device
):
    """Property: n GPUs divide both terms by n; an MFU below 1 divides only the compute term by it."""
    one = breakdown(flops, bytes_, device)
    many = breakdown(flops, bytes_, device, n_gpus=n_gpus, mfu=mfu)
    assert_allclose(many.compute_s, one.compute_s / (n_gpus * mfu), rtol=1e-12)
    assert_allclose(many.memory_s, one.memory_s / n_gpus, rtol=1e-12)


def test_breakdown_rejects_bad_input():
    """Negative overhead, no GPUs, an MFU outside (0, 1], a non-number or a dtype the device lacks: named."""
    with pytest.raises(ValueError, match="overhead"):
        breakdown(1.0, 1.0, "T4", overhead=-1.0)
    with pytest.raises(ValueError, match="n_gpus"):
        breakdown(1.0, 1.0, "T4", n_gpus=0)
    with pytest.raises(ValueError, match="mfu"):
        breakdown(1.0, 1.0, "T4", mfu=1.5)
    with pytest.raises(ValueError, match="mfu"):
        breakdown(1.0, 1.0, "T4", mfu=0.0)
    with pytest.raises(TypeError, match="flops"):
        breakdown(Cost(1.0, 2.0), 2.0, "T4")  # type: ignore[arg-type]  # a Cost is two numbers, not one
    with pytest.raises(KeyError, match="dtype"):
        breakdown(1.0, 1.0, "T4", dtype="bf16")


# --- the crossing (critical) batch ---------------------------------------------------------


def _affine_at(cost_of_batch, batch: float) -> tuple[float, float]:
    """FLOP and bytes at a real-valued batch: FLOP proportional to it, bytes affine (read off batches 1 and 2)."""
    c1, c2 = cost_of_batch(1), cost_of_batch(2)
    return c1.flops * batch, c1.bytes + (batch - 1) * (c2.bytes - c1.bytes)


_RESNET = ops.resnet50_layers(1)
_ACCS = [a.name for a in hardware.accelerators()]


def _cost_of_batch(kind: str, index: int, dtype: str):
    """One of the book's batched computations: a linear layer, a SwiGLU MLP, a ResNet-50 layer, a decode step."""
    if kind == "linear":
        d = (1024, 4096, 8192, 16384)[index % 4]
        return lambda b: ops.linear_cost(b, d, d, dtype=dtype)
    if kind == "mlp":
        d_model, d_ff = ((4096, 11008), (4096, 14336), (8192, 28672))[index % 3]
        return lambda b: ops.mlp_cost(b, d_model, d_ff, dtype=dtype, gated=True)
    if kind == "resnet":
        layer = _RESNET[index % len(_RESNET)]
        return lambda b: convnets.layer_cost(layer, b, dtype=dtype)
    # Dense models only: a mixture of experts reads more weights as its batch touches more
    # experts, so its bytes are not affine in the batch (see test_llm for its crossing).
    dense = [m for m in llm.models() if m.moe is None]
    model = dense[index % len(dense)]
    return lambda b: llm.decode_cost(model, 16 * index, batch=b, dtype=dtype)


@given(
    st.sampled_from(["linear", "mlp", "resnet", "decode"]),
    st.integers(0, 200),
    st.sampled_from(_ACCS),
    st.floats(0.05, 1.0),
)
def test_at_the_crossing_batch_compute_time_equals_memory_time(kind, index, acc, mfu):
    """Property: at B* the breakdown's compute_s equals its memory_s, for every kind of batched work the book has.

    Evaluated at the real-valued B* by extending the cost affinely (FLOP f1 B, bytes b0 + b1 B, as
    crossing_batch assumes and checks); the whole batches either side of B* are memory- then compute-bound.
    """
    dtype = get_accelerator(acc).half_dtype
    cost_of_batch = _cost_of_batch(kind, index, dtype)
    b_star = crossing_batch(cost_of_batch, acc, dtype=dtype, mfu=mfu)
    assume(math.isfinite(b_star) and 1 < b_star < 1e7)
    parts = breakdown(*_affine_at(cost_of_batch, b_star), acc, dtype=dtype, mfu=mfu)
    assert_allclose(parts.compute_s, parts.memory_s, rtol=1e-9)
    below, above = (
        cost_of_batch(math.floor(b_star)),
        cost_of_batch(math.floor(b_star) + 1),
    )
    assert breakdown(
        below.flops, below.bytes, acc, dtype=dtype, mfu=mfu
    ).bound == "memory" or b_star == int(b_star)
    assert (
        breakdown(above.flops, above.bytes, acc, dtype=dtype, mfu=mfu).bound
        == "compute"
    )


def test_crossing_batch_by_hand():
    """FLOP 1,000 B and bytes 1e6 + B on a T4 (ridge r = 65e12 / 320e9 = 203.125):
    B* = r b0 / (f1 - r b1) = 203.125e6 / 796.875 = 254,901.96...; at 50 % MFU r halves:
    101.5625e6 / 898.4375 = 113,043.47...
    """
    cost = lambda b: Cost(1e3 * b, 1e6 + b)  # noqa: E731
    assert_allclose(crossing_batch(cost, "T4"), 203.125e6 / 796.875, rtol=1e-12)
    assert_allclose(
        crossing_batch(cost, "T4", mfu=0.5), 101.5625e6 / 898.4375, rtol=1e-12
    )


def test_crossing_batch_edge_cases():
    """inf when activations alone are below the ridge, 0 when nothing is read once per step.

    A 1x1, 64 -> 64 convolution: per image 2 * 56^2 * 64 * 64 FLOP on 2 * 56^2 * (64 + 64) bytes,
    64 / 2 = 32 FLOP/byte at most, below the T4's 203: inf.
    """
    assert math.isinf(
        crossing_batch(lambda b: ops.conv2d_cost(b, 64, 64, 56, 56, 1), "t4")
    )
    assert crossing_batch(lambda b: Cost(1e3 * b, 1.0 * b), "t4") == 0.0


def test_crossing_batch_rejects_bad_input():
    """Not a function, FLOP not proportional to the batch, or bytes not affine in it: named in the error."""
    with pytest.raises(TypeError, match="cost_of_batch"):
        crossing_batch(3, "t4")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="affine"):
        crossing_batch(lambda b: Cost(float(b), float(b * b)), "t4")
    with pytest.raises(ValueError, match="proportional"):
        crossing_batch(lambda b: Cost(1e15 + b, 1.0 + b), "t4")
    with pytest.raises(ValueError, match="mfu"):
        crossing_batch(lambda b: Cost(1e3 * b, 1.0 + b), "t4", mfu=0)
