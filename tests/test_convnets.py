"""Tests for helpers.convnets: ResNet-50 (He et al. 2016) on the roofline as the batch grows."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from helpers import convnets, hardware, ops, roofline
from helpers.hardware import Accelerator


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
    layer memory-bound (share 1); the T4 in fp16 at batch 1 lies between, mostly memory (chapter 5)."""
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


def test_resnet50_stream_time_between_bounds_and_fusion_helps():
    """The stream lies in the dispatch bounds; fused beats eager; derated ceilings are slower."""
    from helpers import convnets, dispatch

    gpu = convnets.resnet50_kernel_seconds(8, "T4")
    low, high = dispatch.sequence_bounds(gpu, 5e-6)
    t = convnets.resnet50_stream_time(8, "T4")
    assert low <= t <= high
    assert t < convnets.resnet50_stream_time(8, "T4", fused=False)
    slow = roofline.achievable("T4", compute_fraction=0.7, memory_fraction=0.8)
    assert convnets.resnet50_stream_time(8, slow) > t
    assert len(convnets.resnet50_kernel_seconds(1, "T4", fused=False)) == 174


@pytest.mark.parametrize("batch", [1, 7, 64])
@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
def test_layer_cost_rebuilds_resnet50_layers_at_any_batch(batch, dtype):
    """layer_cost(layer at batch 1, B) equals ops.resnet50_layers(B) layer by layer."""
    base = ops.resnet50_layers(1, dtype=dtype)
    target = ops.resnet50_layers(batch, dtype=dtype)
    for a, b in zip(base, target):
        cost = convnets.layer_cost(a, batch, dtype=dtype)
        assert_allclose(
            [cost.flops, cost.bytes], [b.cost.flops, b.cost.bytes], rtol=1e-12
        )


def test_resnet50_is_4_1_gmac_8_2_gflop():
    """torchvision's ResNet-50 (v1.5) "4.09 GFLOPS" are multiply-accumulates: 8.2 GFLOP per image."""
    rows = convnets.resnet50_roofline(1, "t4", dtype="fp16")
    assert_allclose(sum(r.flops for r in rows) / 2, 4.09e9, rtol=0.01)


@pytest.mark.parametrize(
    "acc, dtype", [("t4", "fp16"), ("t4", "fp32"), ("a100", "fp16"), ("a100", "fp32")]
)
def test_bound_follows_intensity_versus_ridge(acc, dtype):
    """A layer is memory-bound exactly when its intensity is below the ridge point; its time is the roofline max."""
    ridge = roofline.ridge_point(acc, dtype=dtype)
    device = hardware.get_accelerator(acc)
    for row in convnets.resnet50_roofline(1, acc, dtype=dtype):
        assert (row.bound == "memory") == (row.intensity < ridge)
        expected = max(
            row.flops / device.flops(dtype), row.bytes / device.memory_bandwidth
        )
        assert_allclose(row.seconds, expected, rtol=1e-12)
        assert_allclose(
            row.attainable,
            min(device.flops(dtype), row.intensity * device.memory_bandwidth),
            rtol=1e-12,
        )


def test_crossing_batch_separates_memory_and_compute_bound():
    """Each layer is memory-bound below its crossing batch and compute-bound from the next whole batch on."""
    ridge = roofline.ridge_point("a100", dtype="fp16")
    for row, layer in zip(
        convnets.resnet50_roofline(1, "a100", dtype="fp16"), ops.resnet50_layers(1)
    ):
        crossing = row.crossing_batch
        if math.isinf(crossing):
            big = convnets.layer_cost(layer, 4096)
            assert big.intensity < ridge
            continue
        above = convnets.layer_cost(layer, max(1, math.ceil(crossing)))
        assert above.intensity >= ridge * (1 - 1e-12)
        if crossing > 1:
            below = convnets.layer_cost(layer, math.floor(crossing))
            assert below.intensity < ridge


def test_fp32_on_t4_has_fewer_memory_bound_layers_than_fp16():
    """The T4's fp32 ridge (8.1 TFLOP/s / 320 GB/s) is 8x lower than fp16's: far fewer layers are memory-bound."""
    fp32 = convnets.count_memory_bound(1, "t4", dtype="fp32")
    fp16 = convnets.count_memory_bound(1, "t4", dtype="fp16")
    assert fp32 < fp16 / 2


@settings(max_examples=20, deadline=None)
@given(
    st.integers(1, 256), st.integers(1, 256), st.sampled_from(["t4", "a100", "h100"])
)
def test_batching_never_adds_memory_bound_layers(b1, b2, acc):
    """A larger batch never makes more ResNet-50 layers memory-bound (intensity grows with batch)."""
    small, large = sorted((b1, b2))
    assert convnets.count_memory_bound(large, acc) <= convnets.count_memory_bound(
        small, acc
    )


@pytest.mark.parametrize(
    "call, param, exc",
    [
        (lambda: convnets.layer_cost("conv1", 1), "layer", TypeError),
        (
            lambda: convnets.layer_cost(ops.resnet50_layers(1)[0], 0),
            "batch",
            ValueError,
        ),
        (lambda: convnets.resnet50_roofline(1, "t4", dtype="bf16"), "dtype", KeyError),
        (lambda: convnets.resnet50_roofline(0, "t4"), "batch", ValueError),
        (
            lambda: convnets.resnet50_roofline(1, "t4", image_size=16),
            "image_size",
            ValueError,
        ),
        (lambda: convnets.resnet50_roofline(1, "t4", "fp16"), "positional", TypeError),
        (lambda: convnets.count_memory_bound(1, "x"), "accelerator", KeyError),
    ],
)
def test_bad_input_names_the_parameter(call, param, exc):
    """Bad input raises an error whose message names the parameter."""
    with pytest.raises(exc, match=param):
        call()


@settings(max_examples=40)
@given(
    c=st.integers(1, 512), k=st.integers(1, 512), kernel=st.sampled_from([1, 3, 5, 7])
)
def test_activation_ceiling_bounds_conv_intensity_and_is_its_large_batch_limit(
    c, k, kernel
):
    """Hand-derived: 1/I = w/(2NHW) + w(C+K)/(2KCRS), so I < I_act at any batch and I -> I_act as N grows."""
    ceiling = convnets.activation_ceiling(c, k, kernel)
    assert ops.conv2d_cost(1, c, k, 14, 14, kernel).intensity < ceiling
    big = ops.conv2d_cost(4096, c, k, 14, 14, kernel).intensity
    assert_allclose(
        big, ceiling, rtol=0.01 + ceiling / convnets.filter_limit(4096, 14, 14)
    )


def test_filter_limit_is_the_many_channel_limit():
    """With C = K growing, a 14 x 14 fp16 convolution's intensity approaches 2 N H W / w = 196 at batch 1."""
    limit = convnets.filter_limit(1, 14, 14, dtype="fp16")
    assert limit == 2 * 14 * 14 / 2
    near = ops.conv2d_cost(1, 1 << 15, 1 << 15, 14, 14, 3).intensity
    assert near < limit
    assert_allclose(near, limit, rtol=0.02)


@pytest.mark.parametrize("bad", [0, -3, 1.5, "64"])
def test_ceiling_and_limit_reject_bad_sizes(bad):
    """Bad sizes raise an error that names the parameter."""
    with pytest.raises((ValueError, TypeError), match="c_in"):
        convnets.activation_ceiling(bad, 64, 3)
    with pytest.raises((ValueError, TypeError), match="height"):
        convnets.filter_limit(1, bad, 14)


def test_resnet50_published_reads_nvidias_t4_table_by_framework():
    """NVIDIA DeepLearningExamples, T4 mixed precision: batch 64 at 1,165 images/s in PyTorch and
    1,561 in MXNet; batch 1 at 79 in PyTorch (the README tables cited in resnet50.csv)."""
    at_64 = convnets.resnet50_published("T4", dtype="fp16", batch=64)
    assert at_64["PyTorch"] == 1165.0
    assert at_64["MXNet"] == 1561.0
    assert convnets.resnet50_published("T4", dtype="fp16", batch=1)["PyTorch"] == 79.0
    assert convnets.resnet50_published("T4", dtype="fp32", batch=64)["PyTorch"] == 428.0


def test_resnet50_published_is_empty_where_no_run_matches():
    """No published run at batch 3 or at 299-pixel images: an empty dict, not an error."""
    assert convnets.resnet50_published("T4", dtype="fp16", batch=3) == {}
    assert convnets.resnet50_published("T4", batch=64, image_size=299) == {}


def test_resnet50_published_rejects_bad_input_by_name():
    """A zero batch names ``batch``; an unknown GPU is a KeyError."""
    with pytest.raises(ValueError, match="batch"):
        convnets.resnet50_published("T4", batch=0)
    with pytest.raises(ValueError, match="image_size"):
        convnets.resnet50_published("T4", image_size=-1)
    with pytest.raises(KeyError):
        convnets.resnet50_published("no such GPU")


def test_t4_second_order_on_measured_fractions_meets_the_published_batch_64_run():
    """The T4's achievable fractions come from matmul and copy benchmarks (38 % of the fp16 peak,
    75 % of bandwidth), not from ResNet-50; with them the eager kernels in one stream give
    within 2 % of NVIDIA's 1,165 images/s at batch 64, while the first-order bound is over 4x it."""
    from helpers import validation

    compute, memory = validation.fractions("T4", "fp16")
    assert_allclose((compute, memory), (25 / 65, 0.75), rtol=1e-9)
    device = validation.achievable_device("T4", "fp16")
    seconds = convnets.resnet50_stream_time(64, device, dtype="fp16", fused=False)
    published = convnets.resnet50_published("T4", dtype="fp16", batch=64)["PyTorch"]
    assert_allclose(64 / seconds, published, rtol=0.02)
    assert 64 / convnets.resnet50_step_time(64, "T4", dtype="fp16") > 4 * published


def test_calculator_shows_first_order_second_order_and_published_rows():
    """Chapter 5's calculator at its default (T4, fp16, batch 8) labels three kinds of row: the
    first-order bound, the second-order model (between published and first-order here) and
    NVIDIA's published PyTorch run (652 images/s)."""
    import matplotlib.pyplot as plt

    from helpers import calculators

    fig, ax = plt.subplots()
    text = calculators.render_resnet50(ax, "T4", "fp16", 8, 5.0)
    plt.close(fig)
    rows = {
        line.split(" | ")[0].lstrip("| "): line.split(" | ")[1].rstrip(" |")
        for line in text.splitlines()
        if line.startswith("| ") and not line.startswith("| model")
    }
    first = float(rows["first-order + t0 per layer: datasheet peaks"].replace(",", ""))
    second = float(
        rows["second-order: measured fractions, eager kernels"].replace(",", "")
    )
    assert rows["published: NVIDIA, PyTorch"] == "652"
    assert 652 < second < first


def test_calculator_says_when_a_setting_has_no_published_run_or_no_second_order():
    """fp8 on an H100 has a first-order bound but no vector peak for the second-order model's
    elementwise kernels, and NVIDIA published no such run: both rows say so."""
    import matplotlib.pyplot as plt

    from helpers import calculators

    fig, ax = plt.subplots()
    text = calculators.render_resnet50(ax, "H100", "fp8", 8, 5.0)
    plt.close(fig)
    assert "| second-order (measured fractions) | not modelled: " in text
    assert "| published: NVIDIA | no run at this setting |" in text


def test_input_bytes_by_hand_and_bad_input():
    assert convnets.input_bytes(64) == 64 * 3 * 224 * 224 * 4
    assert convnets.input_bytes(2, dtype="fp16", image_size=32) == 2 * 3 * 32 * 32 * 2
    with pytest.raises(ValueError, match="batch"):
        convnets.input_bytes(0)
