"""Tests for helpers.batching: step time, bounds and knees of batched layers.

The time model is the roofline of Williams, Waterman and Patterson (2009) plus
a fixed overhead; the layer costs are helpers.ops.linear_cost / mlp_cost. The
critical batch itself is tested with its home, helpers.roofline.crossing_batch
(tests/test_roofline.py) and helpers.ops.critical_batch_size (tests/test_ops.py).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from helpers import batching, ops, roofline
from helpers.ops import Cost


def _relu(dtype="fp16"):
    return lambda n: ops.op_cost("relu", n, dtype=dtype)


def test_default_overhead_is_five_microseconds_and_says_why():
    """One home for the book's assumed t0 = 5 µs, with its justification (an assumption Lab 1 measures)."""
    assert batching.DEFAULT_OVERHEAD_S == 5e-6
    source = open(batching.__file__, encoding="utf-8").read()
    doc = source.split("DEFAULT_OVERHEAD_S = 5e-6", 1)[1].split('"""')[1]
    assert "assumed" in doc and "Lab 1" in doc and "measure_overhead" in doc


@pytest.mark.parametrize(
    "acc, expected",
    [
        ("H100", 5e-6 * 3.35e12 / 4),  # 4.19 M elements: chapter 1, question 3
        ("T4", 5e-6 * 320e9 / 4),  # 400,000
        ("H200", 5e-6 * 4.8e12 / 4),  # 6.0 M
    ],
)
def test_relu_overhead_crossover_is_t0_times_bandwidth_over_four_bytes(acc, expected):
    """An fp16 ReLU moves 4 bytes per element (2 read, 2 written) and is memory-bound at every size,
    so it stops being overhead-bound where 4 n / W = t0: n = t0 W / 4."""
    assert_allclose(batching.overhead_crossover(_relu(), acc), expected, rtol=1e-12)


def test_overhead_crossover_scales_with_the_overhead_and_the_bytes():
    """Half the overhead halves the size; fp32 (8 bytes per element) halves it too."""
    base = batching.overhead_crossover(_relu(), "H100")
    assert_allclose(
        batching.overhead_crossover(_relu(), "H100", overhead=2.5e-6), base / 2
    )
    assert_allclose(
        batching.overhead_crossover(_relu("fp32"), "H100", dtype="fp32"), base / 2
    )


def test_linear_layer_leaves_overhead_when_compute_reaches_t0():
    """1024 x 1024 fp16 layer on an H100, t0 = 5 µs (chapter 4, question 5): compute passes 5 µs at
    b = 5e-6 * 989.4e12 / (2 * 1024**2) = 2,358.9 rows; memory only at
    (5e-6 * 3.35e12 - 2 * 1024**2) / (2 * 2048) = 3,577 rows. The smaller one is the crossover."""
    found = batching.overhead_crossover(
        lambda b: ops.linear_cost(b, 1024, 1024), "H100"
    )
    assert_allclose(found, 5e-6 * 989.4e12 / (2 * 1024**2), rtol=1e-12)
    assert 3576 < (5e-6 * 3.35e12 - 2 * 1024**2) / (2 * 2048) < 3578


def test_overhead_crossover_edge_cases():
    """Fixed work that already outlasts t0: 0. Work that never grows and stays under t0: inf."""
    heavy = batching.overhead_crossover(
        lambda n: Cost(0.0, 1e9), "T4"
    )  # 3.1 ms of bytes
    assert heavy == 0.0
    light = batching.overhead_crossover(lambda n: Cost(0.0, 1.0), "T4")
    assert light == math.inf
    # a fixed part larger than t0 on the growing term too: clipped at 0
    assert batching.overhead_crossover(lambda n: Cost(0.0, 1e9 + n), "T4") == 0.0


@given(
    st.integers(min_value=1, max_value=4096), st.sampled_from(["T4", "A100", "H100"])
)
def test_overhead_crossover_agrees_with_the_bound_of_the_time_model(d, acc):
    """Below the crossover breakdown() says 'overhead', above it not (linear layers of any width)."""

    def cost(b):
        return ops.linear_cost(b, d, d)

    n = batching.overhead_crossover(cost, acc)
    below, above = math.floor(n * 0.999), math.ceil(n * 1.001) + 1
    if below >= 1:
        c = cost(below)
        assert roofline.bound(c.flops, c.bytes, acc, overhead=5e-6) == "overhead"
    c = cost(above)
    assert roofline.bound(c.flops, c.bytes, acc, overhead=5e-6) != "overhead"


def test_overhead_crossover_rejects_bad_input():
    """Non-affine costs (a square matmul grows as n**3), a zero overhead and a non-function are refused."""
    with pytest.raises(ValueError, match="affine"):
        batching.overhead_crossover(lambda n: ops.matmul_cost(n, n, n), "H100")
    with pytest.raises(ValueError, match="overhead"):
        batching.overhead_crossover(_relu(), "H100", overhead=0.0)
    with pytest.raises(TypeError, match="cost_of_size"):
        batching.overhead_crossover("relu", "H100")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        batching.overhead_crossover(_relu(), "H100", "fp16")  # type: ignore[misc]
    with pytest.raises(KeyError, match="bf16"):
        batching.overhead_crossover(_relu("bf16"), "T4", dtype="bf16")


ACCS = ["t4", "a100", "h100"]
RANK = {"overhead": 0, "memory": 1, "compute": 2}
dims = st.integers(min_value=16, max_value=16384)


def test_linear_sweep_by_hand():
    """A 4096 -> 4096 fp16 layer on a T4 (65e12 FLOP/s, 320e9 B/s, T4 datasheet), 5 us overhead.

    Batch 1: 2 * 4096^2 = 33,554,432 FLOP (0.516 us) on 2 * 4096^2 + 2 * (4096 + 4096) = 33,570,816 bytes
    (104.9 us): memory-bound, 109.9 us, 9,099 samples/s. Batch 1024: 34,359,738,368 FLOP (528.6 us) on
    33,554,432 + 2 * 1024 * 8192 = 50,331,648 bytes (157.3 us): compute-bound, 533.6 us.
    """
    sweep = batching.linear_sweep([1, 1024], 4096, 4096, "t4", overhead=5e-6)
    assert_allclose(sweep.flops, [33_554_432, 34_359_738_368])
    assert_allclose(sweep.bytes, [33_570_816, 50_331_648])
    assert_allclose(
        sweep.compute_s, [33_554_432 / 65e12, 34_359_738_368 / 65e12], rtol=1e-12
    )
    assert_allclose(
        sweep.memory_s, [33_570_816 / 320e9, 50_331_648 / 320e9], rtol=1e-12
    )
    assert_allclose(
        sweep.seconds,
        [33_570_816 / 320e9 + 5e-6, 34_359_738_368 / 65e12 + 5e-6],
        rtol=1e-12,
    )
    assert_allclose(
        sweep.throughput, [1 / sweep.seconds[0], 1024 / sweep.seconds[1]], rtol=1e-12
    )
    assert sweep.bound == ("memory", "compute")
    assert (sweep.overhead_s, sweep.accelerator, sweep.dtype) == (5e-6, "T4", "fp16")


def test_sweep_time_is_max_of_terms_plus_overhead():
    """seconds = max(compute_s, memory_s) + overhead, and achieved FLOP/s = flops / seconds."""
    sweep = batching.mlp_sweep(
        [1, 16, 256, 4096], 4096, 14336, "h100", gated=True, overhead=20e-6
    )
    assert_allclose(
        sweep.seconds, np.maximum(sweep.compute_s, sweep.memory_s) + 20e-6, rtol=1e-12
    )
    assert_allclose(sweep.achieved_flops, sweep.flops / sweep.seconds, rtol=1e-12)
    assert sweep.accelerator == "H100 SXM"


def test_sweep_of_any_cost():
    """sweep takes any batch -> Cost (here a 3x3, 64 -> 64 convolution on 56 x 56) and evaluates it at each batch."""
    cost = lambda b: ops.conv2d_cost(b, 64, 64, 56, 56, 3)  # noqa: E731
    sweep = batching.sweep(cost, [1, 2, 32], "a100", dtype="bf16")
    assert_allclose(sweep.flops, [cost(b).flops for b in (1, 2, 32)])
    assert_allclose(
        sweep.flops[1], 2 * 2 * 56 * 56 * 64 * 64 * 9
    )  # 2 FLOP per MAC, 2 images
    assert list(sweep.batch) == [1, 2, 32]


@settings(max_examples=60, deadline=None)
@given(d_in=dims, d_out=dims, overhead=st.floats(0, 1e-3), acc=st.sampled_from(ACCS))
def test_regimes_go_overhead_then_memory_then_compute(d_in, d_out, overhead, acc):
    """As the batch grows the bound never moves back (overhead -> memory -> compute)."""
    sweep = batching.linear_sweep(
        2 ** np.arange(15), d_in, d_out, acc, overhead=overhead
    )
    ranks = [RANK[r] for r in sweep.bound]
    assert ranks == sorted(ranks)


@settings(max_examples=60, deadline=None)
@given(d_in=dims, d_out=dims, overhead=st.floats(0, 1e-3), acc=st.sampled_from(ACCS))
def test_throughput_never_falls_and_step_time_never_shrinks(d_in, d_out, overhead, acc):
    """Batching never lowers predicted throughput, and a bigger batch never takes less time."""
    sweep = batching.linear_sweep(
        2 ** np.arange(15), d_in, d_out, acc, overhead=overhead
    )
    assert np.all(np.diff(sweep.throughput) >= -1e-9 * sweep.throughput[1:])
    assert np.all(np.diff(sweep.seconds) >= 0)


@pytest.mark.parametrize("acc", ACCS)
def test_at_the_critical_batch_the_bound_flips(acc):
    """Just below the critical batch the layer (or MLP) is memory-bound, just above it compute-bound."""
    knee = ops.critical_batch_size(acc, d_in=8192, d_out=8192)
    sweep = batching.linear_sweep([math.floor(knee), math.ceil(knee)], 8192, 8192, acc)
    assert sweep.bound == ("memory", "compute")
    mlp_knee = roofline.crossing_batch(
        lambda b: ops.mlp_cost(b, 4096, 14336, gated=True), acc
    )
    mlp = batching.mlp_sweep(
        [math.floor(mlp_knee), math.ceil(mlp_knee)], 4096, 14336, acc, gated=True
    )
    assert mlp.bound == ("memory", "compute")


def test_measured_knee_on_roofline_curve_is_about_ninety_percent_of_predicted():
    """On a wide layer's roofline curve (no overhead) the 90 % knee sits near 0.9 x the predicted knee."""
    batches = np.arange(1, 2049)
    sweep = batching.linear_sweep(batches, 16384, 16384, "t4")
    knee = batching.measured_knee(sweep.batch, sweep.seconds, fraction=0.9)
    predicted = ops.critical_batch_size("t4", d_in=16384, d_out=16384)
    assert 0.85 * predicted <= knee <= 0.95 * predicted


def test_measured_knee_on_synthetic_shapes():
    """Flat time -> largest batch; time proportional to batch -> smallest; order of input is irrelevant."""
    b = np.array([1, 2, 4, 8, 16, 32, 64])
    assert batching.measured_knee(b, np.full(b.shape, 1e-3)) == 64
    assert batching.measured_knee(b, b * 1e-3) == 1
    hockey = np.maximum(1e-3, b * 1e-4)  # flat to batch 10, then linear
    assert batching.measured_knee(b, hockey) == 16
    assert batching.measured_knee(b[::-1], hockey[::-1]) == 16
    assert batching.measured_knee(b, hockey, fraction=0.5) == 8


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(1e-6, 1.0), min_size=2, max_size=12), st.floats(0.05, 1.0))
def test_measured_knee_reaches_the_fraction_and_nothing_smaller_does(times, fraction):
    """The knee's throughput is >= fraction x best, and every smaller batch's is below it."""
    b = np.arange(1, len(times) + 1)
    knee = batching.measured_knee(b, times, fraction=fraction)
    tput = b / np.array(times)
    assert tput[knee - 1] >= fraction * tput.max()
    assert np.all(tput[: knee - 1] < fraction * tput.max())


@pytest.mark.parametrize(
    "call, param, exc",
    [
        (lambda: batching.linear_sweep(0, 64, 64, "t4"), "batch", ValueError),
        (lambda: batching.linear_sweep([1, 2.5], 64, 64, "t4"), "batch", TypeError),
        (lambda: batching.linear_sweep([], 64, 64, "t4"), "batch", ValueError),
        (lambda: batching.linear_sweep(1, 0, 64, "t4"), "d_in", ValueError),
        (
            lambda: batching.linear_sweep(1, 64, 64, "t4", overhead=-1.0),
            "overhead",
            ValueError,
        ),
        (
            lambda: batching.linear_sweep(1, 64, 64, "t4", dtype="bf16"),
            "dtype",
            KeyError,
        ),
        (lambda: batching.linear_sweep(1, 64, 64, "nope"), "accelerator", KeyError),
        (lambda: batching.mlp_sweep(1, 64, 0, "t4"), "d_ff", ValueError),
        (lambda: batching.mlp_sweep(1, 64, 64, "t4", gated="yes"), "gated", TypeError),
        (lambda: batching.sweep("not a function", 1, "t4"), "cost_of_batch", TypeError),
        (lambda: batching.sweep(lambda b: (1.0, 2.0), 1, "t4"), "Cost", TypeError),
        (lambda: batching.measured_knee([1, 2], [1.0]), "seconds", ValueError),
        (lambda: batching.measured_knee([1, 2], [1.0, -1.0]), "seconds", ValueError),
        (lambda: batching.measured_knee([1, 1], [1.0, 2.0]), "batch", ValueError),
        (
            lambda: batching.measured_knee([1, 2], [1.0, 2.0], fraction=1.5),
            "fraction",
            ValueError,
        ),
        (
            lambda: batching.measured_knee([1, 2], [1.0, 2.0], 0.5),
            "positional",
            TypeError,
        ),
    ],
)
def test_bad_input_names_the_parameter(call, param, exc):
    """Bad input raises ValueError/KeyError/TypeError whose message names the parameter."""
    with pytest.raises(exc, match=param):
        call()
