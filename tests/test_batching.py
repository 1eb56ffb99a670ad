"""Tests for helpers.batching: step time, regimes and knees of batched layers.

The time model is the roofline of Williams, Waterman and Patterson (2009) plus
a fixed overhead; the layer costs are helpers.ops.linear_cost / mlp_cost.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from helpers import batching, ops, roofline

ACCS = ["t4", "a100", "h100"]
RANK = {"overhead": 0, "memory": 1, "compute": 2}
dims = st.integers(min_value=16, max_value=16384)


def test_linear_sweep_matches_roofline_time_of_linear_cost():
    """Each step time is roofline_time of ops.linear_cost at that batch (no formula re-derived)."""
    batches = [1, 3, 64, 1000]
    sweep = batching.linear_sweep("a100", batches, 4096, 11008, overhead=5e-6)
    expected = [roofline.roofline_time(*vars(ops.linear_cost(b, 4096, 11008)).values(), "a100", "fp16", 5e-6) for b in batches]
    assert_allclose(sweep.time, expected, rtol=1e-12)
    assert_allclose(sweep.throughput, np.array(batches) / np.array(expected), rtol=1e-12)
    assert sweep.regime == tuple(
        roofline.bound(ops.linear_cost(b, 4096, 11008).flops, ops.linear_cost(b, 4096, 11008).bytes, "a100", "fp16", 5e-6)
        for b in batches
    )


def test_sweep_time_is_max_of_terms_plus_overhead():
    """time = max(compute_time, memory_time) + overhead, and achieved FLOP/s = flops / time."""
    sweep = batching.mlp_sweep("h100", [1, 16, 256, 4096], 4096, 14336, gated=True, overhead=20e-6)
    assert_allclose(sweep.time, np.maximum(sweep.compute_time, sweep.memory_time) + 20e-6, rtol=1e-12)
    assert_allclose(sweep.achieved_flops, sweep.flops / sweep.time, rtol=1e-12)
    assert sweep.accelerator == "H100 SXM"


@settings(max_examples=60, deadline=None)
@given(d_in=dims, d_out=dims, overhead=st.floats(0, 1e-3), acc=st.sampled_from(ACCS))
def test_regimes_go_overhead_then_memory_then_compute(d_in, d_out, overhead, acc):
    """As the batch grows the regime never moves back (overhead -> memory -> compute)."""
    sweep = batching.linear_sweep(acc, 2 ** np.arange(15), d_in, d_out, overhead=overhead)
    ranks = [RANK[r] for r in sweep.regime]
    assert ranks == sorted(ranks)


@settings(max_examples=60, deadline=None)
@given(d_in=dims, d_out=dims, overhead=st.floats(0, 1e-3), acc=st.sampled_from(ACCS))
def test_throughput_never_falls_and_step_time_never_shrinks(d_in, d_out, overhead, acc):
    """Batching never lowers predicted throughput, and a bigger batch never takes less time."""
    sweep = batching.linear_sweep(acc, 2 ** np.arange(15), d_in, d_out, overhead=overhead)
    assert np.all(np.diff(sweep.throughput) >= -1e-9 * sweep.throughput[1:])
    assert np.all(np.diff(sweep.time) >= 0)


@settings(max_examples=60, deadline=None)
@given(d_in=dims, d_out=dims, acc=st.sampled_from(ACCS), wdt=st.sampled_from([None, "int8"]))
def test_knee_batch_agrees_with_generic_crossing(d_in, d_out, acc, wdt):
    """knee_batch (ops.critical_batch_size) equals crossing_batch solved from the costs."""
    generic = batching.crossing_batch(acc, lambda b: ops.linear_cost(b, d_in, d_out, "fp16", wdt))
    exact = batching.knee_batch(acc, d_in, d_out, weight_dtype=wdt)
    if math.isinf(exact):
        assert math.isinf(generic)
    else:
        assert_allclose(generic, exact, rtol=1e-9)


@pytest.mark.parametrize("acc", ACCS)
def test_at_the_knee_compute_and_memory_times_swap(acc):
    """Just below the predicted knee the layer is memory-bound, just above it compute-bound."""
    knee = batching.knee_batch(acc, 8192, 8192)
    below, above = math.floor(knee), math.ceil(knee)
    sweep = batching.linear_sweep(acc, [below, above], 8192, 8192)
    assert sweep.regime == ("memory", "compute")
    mlp_knee = batching.mlp_knee_batch(acc, 4096, 14336, gated=True)
    mlp = batching.mlp_sweep(acc, [math.floor(mlp_knee), math.ceil(mlp_knee)], 4096, 14336, gated=True)
    assert mlp.regime == ("memory", "compute")


def test_wide_layer_knee_is_ridge_times_weight_bytes_over_two():
    """For B << width the knee tends to ridge * w_w / 2: the ridge itself for 16-bit weights, half for int8."""
    ridge = roofline.ridge_point("t4", "fp16")
    assert_allclose(batching.knee_batch("t4", 2**20, 2**20), ridge, rtol=1e-3)
    assert_allclose(batching.knee_batch("t4", 2**20, 2**20, weight_dtype="int8"), ridge / 2, rtol=1e-3)


def test_fp8_on_h100_keeps_the_fp16_critical_batch():
    """FP8 doubles the H100's peak (datasheet) and halves weight bytes: the two cancel."""
    fp16 = batching.knee_batch("h100", 2**20, 2**20, "fp16")
    fp8 = batching.knee_batch("h100", 2**20, 2**20, "fp8")
    assert_allclose(fp8, fp16, rtol=1e-2)


def test_crossing_batch_edge_cases():
    """inf when activations alone are below the ridge, 0 when nothing is read once per step."""
    assert math.isinf(batching.crossing_batch("t4", lambda b: ops.conv2d_cost(b, 64, 64, 56, 56, 1)))
    assert batching.crossing_batch("t4", lambda b: ops.Cost(1e3 * b, 1.0 * b)) == 0.0


def test_crossing_batch_rejects_non_affine_cost():
    """Flops not proportional to the batch, or bytes not affine in it: ValueError."""
    with pytest.raises(ValueError, match="affine"):
        batching.crossing_batch("t4", lambda b: ops.Cost(float(b), float(b * b)))
    with pytest.raises(ValueError, match="proportional"):
        batching.crossing_batch("t4", lambda b: ops.Cost(1e15 + b, 1.0 + b))


def test_measured_knee_on_roofline_curve_is_about_ninety_percent_of_predicted():
    """On a wide layer's roofline curve (no overhead) the 90 % knee sits near 0.9 x the predicted knee."""
    batches = np.arange(1, 2049)
    sweep = batching.linear_sweep("t4", batches, 16384, 16384)
    knee = batching.measured_knee(sweep.batch, sweep.time, 0.9)
    predicted = batching.knee_batch("t4", 16384, 16384)
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
    knee = batching.measured_knee(b, times, fraction)
    tput = b / np.array(times)
    assert tput[knee - 1] >= fraction * tput.max()
    assert np.all(tput[: knee - 1] < fraction * tput.max())


@pytest.mark.parametrize(
    "call, param, exc",
    [
        (lambda: batching.linear_sweep("t4", 0, 64, 64), "batch", ValueError),
        (lambda: batching.linear_sweep("t4", [1, 2.5], 64, 64), "batch", TypeError),
        (lambda: batching.linear_sweep("t4", [], 64, 64), "batch", ValueError),
        (lambda: batching.linear_sweep("t4", 1, 0, 64), "d_in", ValueError),
        (lambda: batching.linear_sweep("t4", 1, 64, 64, overhead=-1.0), "overhead", ValueError),
        (lambda: batching.linear_sweep("t4", 1, 64, 64, dtype="bf16"), "dtype", KeyError),
        (lambda: batching.linear_sweep("nope", 1, 64, 64), "accelerator", KeyError),
        (lambda: batching.mlp_sweep("t4", 1, 64, 0), "d_ff", ValueError),
        (lambda: batching.mlp_sweep("t4", 1, 64, 64, gated="yes"), "gated", TypeError),
        (lambda: batching.mlp_knee_batch("t4", 64, 64, gated=1), "gated", TypeError),
        (lambda: batching.sweep("t4", 1, "not a function"), "cost_of_batch", TypeError),
        (lambda: batching.crossing_batch("t4", 3), "cost_of_batch", TypeError),
        (lambda: batching.measured_knee([1, 2], [1.0]), "seconds", ValueError),
        (lambda: batching.measured_knee([1, 2], [1.0, -1.0]), "seconds", ValueError),
        (lambda: batching.measured_knee([1, 1], [1.0, 2.0]), "batch", ValueError),
        (lambda: batching.measured_knee([1, 2], [1.0, 2.0], fraction=1.5), "fraction", ValueError),
    ],
)
def test_bad_input_names_the_parameter(call, param, exc):
    """Bad input raises ValueError/KeyError/TypeError whose message names the parameter."""
    with pytest.raises(exc, match=param):
        call()


def test_draw_sweep_redraws_without_piling_up_axes():
    """Drawing twice into the same axes leaves one time axes and one throughput twin, with the marked batch."""
    import matplotlib

    matplotlib.use("Agg")
    from helpers import plots

    sweep = batching.linear_sweep("t4", [1, 4, 16, 64, 256, 1024], 4096, 4096, overhead=5e-6)
    fig, ax = plots.new_figure()
    for _ in range(2):
        twin = batching.draw_sweep(ax, sweep, knee=batching.knee_batch("t4", 4096, 4096), mark=64)
    assert len(fig.axes) == 2 and twin in fig.axes
    assert_allclose(twin.lines[0].get_ydata(), sweep.throughput)
    with pytest.raises(ValueError, match="mark"):
        batching.draw_sweep(ax, sweep, mark=3)
    with pytest.raises(TypeError, match="sweep"):
        batching.draw_sweep(ax, "sweep")


def test_draw_sweep_axes_span_whole_decades():
    """Both log axes run between powers of ten that contain the data, so each shows labelled ticks.

    Regression: a nearly flat step time (Llama-2-7B's MLP on an A100, chapter 3) spanned 1.4e-4 to
    1.3e-2 s and the flat part had no labelled tick below it.
    """
    import matplotlib

    matplotlib.use("Agg")
    from helpers import plots

    sweep = batching.mlp_sweep("A100", [1, 16, 256, 4096], 4096, 11008, gated=True, overhead=5e-6)
    fig, ax = plots.new_figure()
    twin = batching.draw_sweep(ax, sweep)
    for axes, values in ((ax, sweep.time), (twin, sweep.throughput)):
        low, high = axes.get_ylim()
        assert low <= values.min() and values.max() <= high
        for limit in (low, high):
            assert math.isclose(math.log10(limit), round(math.log10(limit)), abs_tol=1e-9)
    assert batching._decade_limits(np.array([1e-3, 1e-3])) == (1e-3, 1e-2)  # a constant curve still gets a decade
