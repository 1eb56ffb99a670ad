"""Tests of the helpers Part I's chapters (1 to 4) and labs 1 to 3 call instead of re-typing formulas.

Expected values are derived by hand from datasheet figures (T4: 65 TFLOP/s
fp16, 8.1 fp32, 320 GB/s; A100: 312 TFLOP/s bf16, 2,039 GB/s; H100 SXM:
989.4 TFLOP/s bf16/fp16, 3.35 TB/s; H200: the H100's compute, 4.8 TB/s).
"""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from numpy.testing import assert_allclose  # noqa: E402

from helpers import batching, convnets, hardware, ops, plots, roofline  # noqa: E402
from helpers.hardware import Accelerator  # noqa: E402
from helpers.ops import Cost  # noqa: E402


def _relu(dtype="fp16"):
    return lambda n: ops.op_cost("relu", n, dtype=dtype)


# --------------------------------------------------------------------------------------------------
# batching.DEFAULT_OVERHEAD_S and batching.overhead_crossover


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
    """1024 x 1024 fp16 layer on an H100, t0 = 5 µs (chapter 3, question 5): compute passes 5 µs at
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


# --------------------------------------------------------------------------------------------------
# ops.linear_weight_bytes and ops.speedup


@pytest.mark.parametrize(
    "d_in, d_out, dtype, expected",
    [
        (1024, 1024, "fp16", 2 * 1024**2),
        (4096, 4096, "int8", 4096**2),
        (8192, 8192, "fp32", 4 * 8192**2),
    ],
)
def test_linear_weight_bytes(d_in, d_out, dtype, expected):
    """w * d_in * d_out: 2 MiB for a 1024-wide fp16 layer, 16 MiB for a 4096-wide int8 one."""
    assert ops.linear_weight_bytes(d_in, d_out, dtype=dtype) == expected


def test_linear_weight_bytes_is_the_batch_independent_part_of_linear_cost():
    """linear_cost's bytes are weights + activations * batch: the intercept of bytes(b) is the weights."""
    one = ops.linear_cost(1, 2048, 1000, dtype="fp16", weight_dtype="int8")
    two = ops.linear_cost(2, 2048, 1000, dtype="fp16", weight_dtype="int8")
    assert (
        ops.linear_weight_bytes(2048, 1000, dtype="int8") == 2 * one.bytes - two.bytes
    )
    with pytest.raises(ValueError, match="d_in"):
        ops.linear_weight_bytes(0, 10)
    with pytest.raises(KeyError, match="dtype"):
        ops.linear_weight_bytes(10, 10, dtype="fp4")


def test_speedup_is_the_bandwidth_ratio_when_memory_bound_and_the_peak_ratio_when_compute_bound():
    """Chapter 2: a batch-1 4096 x 4096 bf16 layer gains 3.35 / 2.039 = 1.64x from A100 to H100
    (memory-bound on both); an 8192**3 bf16 matmul gains 989.4 / 312 = 3.17x (compute-bound on both);
    from H100 to H200 the matmul gains nothing and the layer 4.8 / 3.35 = 1.43x."""
    gemv = ops.linear_cost(1, 4096, 4096, dtype="bf16")
    big = ops.matmul_cost(8192, 8192, 8192, dtype="bf16")
    assert_allclose(
        ops.speedup(gemv, "A100", "H100", dtype="bf16"), 3.35e12 / 2.039e12, rtol=1e-12
    )
    assert_allclose(
        ops.speedup(big, "A100", "H100", dtype="bf16"), 989.4e12 / 312e12, rtol=1e-3
    )
    assert_allclose(ops.speedup(big, "H100", "H200", dtype="bf16"), 1.0)
    assert_allclose(
        ops.speedup(gemv, "H100", "H200", dtype="bf16"), 4.8 / 3.35, rtol=1e-12
    )
    assert ops.speedup(gemv, "H100", "A100", dtype="bf16") < 1


def test_speedup_with_overhead_moves_towards_one():
    """A fixed overhead on both sides dilutes every speed-up."""
    gemv = ops.linear_cost(1, 4096, 4096, dtype="bf16")
    plain = ops.speedup(gemv, "A100", "H100", dtype="bf16")
    diluted = ops.speedup(gemv, "A100", "H100", dtype="bf16", overhead=1e-3)
    assert 1 < diluted < plain
    with pytest.raises(TypeError, match="cost"):
        ops.speedup((1.0, 2.0), "A100", "H100")  # type: ignore[arg-type]
    with pytest.raises(KeyError):
        ops.speedup(gemv, "T4", "H100", dtype="bf16")  # the T4 has no bf16


# --------------------------------------------------------------------------------------------------
# convnets.resnet50_step_time and convnets.memory_time_share


def _layer_seconds(batch, acc, dtype):
    """Each layer's max(F/P, B/W), from ops.resnet50_layers directly (not through resnet50_roofline)."""
    device = hardware.get_accelerator(acc)
    return [
        max(
            layer.cost.flops / device.flops(dtype),
            layer.cost.bytes / device.memory_bandwidth,
        )
        for layer in ops.resnet50_layers(batch, dtype=dtype)
    ]


@pytest.mark.parametrize(
    "acc, dtype, batch", [("T4", "fp32", 1), ("T4", "fp16", 8), ("A100", "fp16", 64)]
)
def test_resnet50_step_time_is_the_sum_of_layer_times_plus_overhead_per_layer(
    acc, dtype, batch
):
    """54 layers run one after the other: the step is the sum of their roofline times, plus 54 t0."""
    layers = _layer_seconds(batch, acc, dtype)
    assert len(layers) == 54
    assert_allclose(
        convnets.resnet50_step_time(batch, acc, dtype=dtype), sum(layers), rtol=1e-12
    )
    with_t0 = convnets.resnet50_step_time(batch, acc, dtype=dtype, overhead=5e-6)
    assert_allclose(with_t0, sum(layers) + 54 * 5e-6, rtol=1e-12)


def test_resnet50_fp32_on_a_t4_is_about_its_flop_over_the_fp32_peak():
    """8.2 GFLOP per image at 8.1 TFLOP/s is 1.01 ms; mostly compute-bound in fp32, so the step
    lies between that and F/P + B/W."""
    layers = ops.resnet50_layers(1, dtype="fp32")
    flops = sum(layer.cost.flops for layer in layers)
    bytes_ = sum(layer.cost.bytes for layer in layers)
    step = convnets.resnet50_step_time(1, "T4", dtype="fp32")
    assert_allclose(flops / 8.1e12, 1.01e-3, rtol=0.01)
    assert flops / 8.1e12 <= step <= flops / 8.1e12 + bytes_ / 320e9


def test_memory_time_share_extremes_and_range():
    """A device with a tiny ridge makes every layer compute-bound (share 0); a huge ridge makes every
    layer memory-bound (share 1); the T4 in fp16 at batch 1 lies between, mostly memory (chapter 4)."""
    slow_compute = Accelerator("ridge 1e-6", {"fp16": 1e6}, 1e12, 1e9, "test")
    fast_compute = Accelerator("ridge 1e6", {"fp16": 1e18}, 1e12, 1e9, "test")
    assert convnets.memory_time_share(1, slow_compute) == 0.0
    assert convnets.memory_time_share(1, fast_compute) == 1.0
    share = convnets.memory_time_share(1, "T4", dtype="fp16")
    seconds = _layer_seconds(1, "T4", "fp16")
    ridge = roofline.ridge_point("T4", dtype="fp16")
    memory = [
        t
        for t, layer in zip(seconds, ops.resnet50_layers(1))
        if layer.cost.intensity < ridge
    ]
    assert_allclose(share, sum(memory) / sum(seconds), rtol=1e-12)
    assert 0.5 < share < 1


def test_network_helpers_reject_bad_input():
    """Keyword-only options; a negative overhead and a missing dtype are refused."""
    with pytest.raises(TypeError):
        convnets.resnet50_step_time(1, "T4", "fp16")  # type: ignore[misc]
    with pytest.raises(ValueError, match="overhead"):
        convnets.resnet50_step_time(1, "T4", overhead=-1.0)
    with pytest.raises(KeyError, match="bf16"):
        convnets.memory_time_share(1, "T4", dtype="bf16")
    with pytest.raises(ValueError, match="batch"):
        convnets.memory_time_share(0, "T4")


# --------------------------------------------------------------------------------------------------
# plots.label_ridges and plots.draw_resnet50


def test_label_ridges_writes_each_ridge_at_its_bend():
    """T4: fp16 ridge 65e12 / 320e9 = 203, fp32 8.1e12 / 320e9 = 25; its missing bf16 is skipped."""
    _, ax = plots.roofline_plot("T4", ["fp16", "fp32"])
    plots.label_ridges(ax, "T4", dtypes=["fp16", "fp32", "bf16"])
    texts = {t.get_text(): t.xy for t in ax.texts}
    assert set(texts) == {"203", "25"}
    assert_allclose(texts["203"], (65e12 / 320e9, 65e12))
    assert_allclose(texts["25"], (8.1e12 / 320e9, 8.1e12))


def test_label_ridges_over_several_devices():
    """A100, H100 and H200 in bf16: ridges 153, 295 and 206 FLOP/byte."""
    _, ax = plots.roofline_plot(["A100", "H100", "H200"], "bf16")
    plots.label_ridges(ax, ["A100", "H100", "H200"], dtypes="bf16")
    assert [t.get_text() for t in ax.texts] == ["153", "295", "206"]
    with pytest.raises(KeyError):
        plots.label_ridges(ax, ["no such GPU"])


def test_draw_resnet50_places_every_layer():
    """54 layers, one point each, red (C3) when memory-bound, green (C2) when compute-bound."""
    _, ax = plots.new_figure()
    rows = plots.draw_resnet50(ax, 1, "T4", dtype="fp16")
    assert len(rows) == 54 and rows[-1].kind == "fc"
    points = [
        line
        for line in ax.get_lines()
        if line.get_linestyle() == "None" and not line.get_label().startswith("_")
    ]
    assert sum(len(line.get_xdata()) for line in points) == 54
    memory = sum(len(line.get_xdata()) for line in points if line.get_color() == "C3")
    assert memory == convnets.count_memory_bound(1, "T4", dtype="fp16")
    assert "batch 1" in ax.get_title() and "T4" in ax.get_title()
    with pytest.raises(KeyError, match="bf16"):
        plots.draw_resnet50(ax, 1, "T4", dtype="bf16")


# --------------------------------------------------------------------------------------------------
# labtools.measure_sweep (Lab 1's matmul and copy sweeps)


def test_measure_sweep_keeps_every_result_in_order():
    """Each value's measurement is kept under its value; the sweep reads like a dict."""
    from helpers import labtools

    sweep = labtools.measure_sweep([4, 1, 2], lambda v: 10 * v, progress=False)
    assert list(sweep.items()) == [(4, 40), (1, 10), (2, 20)]
    assert (
        sweep[2] == 20
        and sorted(sweep) == [1, 2, 4]
        and max(sweep) == 4
        and len(sweep) == 3
    )
    assert sweep.stopped_at is None


def test_measure_sweep_stops_at_out_of_memory():
    """A value that raises torch.cuda.OutOfMemoryError ends the sweep: earlier results stay, later
    values are not tried, stopped_at names the value that did not fit."""
    torch = pytest.importorskip("torch")
    from helpers import labtools

    tried = []

    def measure(n):
        tried.append(n)
        if n >= 3:
            raise torch.cuda.OutOfMemoryError("simulated")
        return n

    sweep = labtools.measure_sweep([1, 2, 3, 4], measure, progress=False)
    assert dict(sweep) == {1: 1, 2: 2} and sweep.stopped_at == 3 and tried == [1, 2, 3]
    with pytest.raises(RuntimeError, match="first sweep value"):
        labtools.measure_sweep([3, 4], measure, progress=False)


def test_measure_sweep_other_errors_propagate_and_bad_input():
    """Only out-of-memory is a stop; a bug is not hidden. Empty values, a non-callable, a positional
    option and a non-boolean progress are refused."""
    from helpers import labtools

    def buggy(n):
        raise ZeroDivisionError("bug")

    with pytest.raises(ZeroDivisionError):
        labtools.measure_sweep([1], buggy, progress=False)
    with pytest.raises(ValueError, match="values"):
        labtools.measure_sweep([], abs)
    with pytest.raises(TypeError, match="measure"):
        labtools.measure_sweep([1], 3)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        labtools.measure_sweep([1], abs, "desc")  # type: ignore[misc]
    with pytest.raises(TypeError, match="progress"):
        labtools.measure_sweep([1], abs, progress=1)  # type: ignore[arg-type]


def test_measure_sweep_with_a_real_bench_measurement():
    """On this machine: a copy sweep of 1 and 4 MiB keeps bench.Measurement objects with
    2 * nbytes of work each (read + write)."""
    pytest.importorskip("torch")
    from helpers import bench, labtools

    sweep = labtools.measure_sweep(
        [1 << 20, 4 << 20],
        lambda nbytes: bench.measure_memory_bandwidth(nbytes, repeats=3, dev="cpu"),
        progress=False,
    )
    assert [m.work for m in sweep.values()] == [2.0 * (1 << 20), 2.0 * (4 << 20)]
    assert all(m.value > 0 and m.unit == "bytes/s" for m in sweep.values())
