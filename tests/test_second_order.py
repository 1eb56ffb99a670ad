"""Tests of the second-order terms of the time model: SMs, L2, vector roofs, tiles and waves, derates.

Published figures: NVIDIA Turing, Volta, Ampere (A100), Hopper and Ada
whitepapers (SM counts, L2 sizes, non-tensor rates, boost clocks); NVIDIA
*Matrix Multiplication Background User's Guide* (tile and wave quantization);
Austin et al., *How to Scale Your Model* (two-sided bound).
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from helpers import hardware, ops, roofline
from helpers.hardware import MIB, get_accelerator

PUBLISHED = {  # name: (SMs, L2 MiB), from each architecture's whitepaper
    "T4": (40, 4),
    "V100 SXM2": (80, 6),
    "A100 SXM4 40GB": (108, 40),
    "A100 SXM4 80GB": (108, 40),
    "H100 SXM": (132, 50),
    "H200 SXM": (132, 50),
    "L4": (58, 48),
    "RTX 4090": (128, 72),
}
FP32_LANES_AND_BOOST = {  # FP32 lanes per SM and boost clock (Hz), whitepapers
    "T4": (64, 1.59e9),
    "V100 SXM2": (64, 1.53e9),
    "A100 SXM4 80GB": (64, 1.41e9),
    "H100 SXM": (128, 1.98e9),
    "L4": (128, 2.04e9),
    "RTX 4090": (128, 2.52e9),
}
GPUS = [a.name for a in hardware.accelerators()]


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_sm_count_and_l2_match_whitepapers(name):
    """SM count and L2 size are the whitepapers' (H100 SXM5: 132 SMs, 50 MB L2; A100: 108, 40 MB ...)."""
    acc = get_accelerator(name)
    sms, l2 = PUBLISHED[name]
    assert acc.sm_count == sms
    assert acc.l2_bytes == l2 * MIB
    assert acc.whitepaper.startswith("https://")


@pytest.mark.parametrize("name", sorted(FP32_LANES_AND_BOOST))
def test_sm_count_reproduces_fp32_peak(name):
    """SMs x FP32 lanes x 2 FLOP x boost clock gives the datasheet's FP32 peak within 1 %."""
    acc = get_accelerator(name)
    lanes, clock = FP32_LANES_AND_BOOST[name]
    assert_allclose(acc.sm_count * lanes * 2 * clock, acc.flops("fp32"), rtol=0.01)


def test_every_gpu_has_sms_and_l2_or_says_why():
    """Every catalog GPU has an SM count and L2 size; the one without (H20) says why in its notes."""
    for acc in hardware.accelerators():
        if acc.sm_count is None or acc.l2_bytes is None:
            assert acc.name == "H20" and "None" in acc.notes
            with pytest.raises(KeyError, match="no published SM count"):
                acc.sms()
        else:
            assert acc.sms() == acc.sm_count and acc.l2_bytes > 0


def test_vector_roofs():
    """Non-tensor peaks: H100 fp16 133.8, A100 fp16 78 / bf16 39; fp32 equals the plain FP32 peak."""
    assert get_accelerator("H100 SXM").vector_flops("fp16") == pytest.approx(133.8e12)
    a100 = get_accelerator("A100")
    assert a100.vector_flops("fp16") == 78e12 and a100.vector_flops("bf16") == 39e12
    for acc in hardware.accelerators():
        for dtype, value in acc.vector_peak_flops.items():
            if dtype == "fp32":
                assert value == acc.flops("fp32")
            elif dtype in acc.peak_flops:
                assert value < acc.flops(dtype), (acc.name, dtype)
    with pytest.raises(KeyError, match="no vector"):
        get_accelerator("T4").vector_flops("bf16")


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


def test_bad_accelerator_fields_raise():
    """A negative SM count or L2 size is refused with the parameter named."""
    base = dict(
        name="x", peak_flops={"fp32": 1.0}, memory_bandwidth=1.0, memory_capacity=1.0
    )
    with pytest.raises(ValueError, match="sm_count"):
        hardware.Accelerator(**base, source="s", sm_count=0)
    with pytest.raises(ValueError, match="l2_bytes"):
        hardware.Accelerator(**base, source="s", l2_bytes=-1.0)


# --- tiles and waves ---------------------------------------------------------------


def test_gemm_utilization_hand_values():
    """1024 x 1024 output: 64 tiles of 128 x 128 -> 64/132 of an H100, 64/80 of a T4 (two waves)."""
    assert ops.gemm_tiles(1024, 1024) == 64
    assert_allclose(ops.gemm_utilization(1024, 1024, "H100 SXM"), 64 / 132)
    assert ops.gemm_utilization(1024, 1024, "T4") == 0.8
    assert_allclose(ops.gemm_utilization(256, 256, "H100 SXM"), 4 / 132)
    assert ops.gemm_utilization(128 * 132, 128, "H100 SXM") == 1.0
    assert_allclose(ops.gemm_utilization(128 * 133, 128, "H100 SXM"), 133 / 264)
    assert_allclose(ops.gemm_utilization(1024, 1024, "A100", tile=(256, 128)), 32 / 108)


def test_tile_efficiency_hand_values():
    """A batch of 16 on 128-row tiles does 1/8 useful work; 129 rows use 129/256 of two tiles."""
    assert ops.tile_efficiency(16, 4096) == 0.125
    assert ops.tile_efficiency(128, 128) == 1.0
    assert_allclose(ops.tile_efficiency(129, 128), 129 / 256)
    assert ops.tile_efficiency(16, 4096, tile=(16, 1)) == 1.0


@given(
    m=st.integers(1, 20_000),
    n=st.integers(1, 20_000),
    name=st.sampled_from(["T4", "A100", "H100 SXM", "L4"]),
)
def test_utilization_is_a_fraction_and_full_on_whole_waves(m, n, name):
    """0 < utilization <= 1, and exactly 1 when the tiles fill whole waves."""
    u = ops.gemm_utilization(m, n, name)
    assert 0 < u <= 1
    tiles = ops.gemm_tiles(m, n)
    assert (u == 1) == (tiles % get_accelerator(name).sm_count == 0)


@given(m=st.integers(1, 5000), k=st.integers(1, 5000), n=st.integers(1, 5000))
def test_matmul_breakdown_never_beats_the_roofline(m, k, n):
    """Quantization only slows the compute term: it equals whole waves of full tiles."""
    tiled = ops.matmul_breakdown(m, k, n, "H100 SXM")
    cost = ops.matmul_cost(m, k, n)
    first = roofline.breakdown(cost.flops, cost.bytes, "H100 SXM")
    assert tiled.compute_s >= first.compute_s * (1 - 1e-12)
    assert tiled.memory_s == first.memory_s
    waves = math.ceil(ops.gemm_tiles(m, n) / 132)
    assert_allclose(tiled.compute_s, waves * 132 * 2 * k * 128 * 128 / 989.4e12)


def test_gemm_bad_input():
    """Tiles must be a pair of whole numbers; a device without SMs says so."""
    with pytest.raises(TypeError, match="tile"):
        ops.gemm_utilization(128, 128, "T4", tile=128)
    with pytest.raises(ValueError, match="tile"):
        ops.tile_efficiency(128, 128, tile=(0, 128))
    with pytest.raises(KeyError, match="H20"):
        ops.gemm_utilization(128, 128, "H20")


# --- achievable ceilings and the two-sided bound ---------------------------------------


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
def test_overlap_bounds_within_two_x(c, m):
    """max(c, m) <= true time <= c + m <= 2 max(c, m) (scaling book, "All About Rooflines")."""
    low, high = roofline.overlap_bounds(c, m)
    assert low == max(c, m) and high == c + m
    assert low <= high <= 2 * low + 1e-300


def test_gemm_efficiency_split_k_hand_value():
    """m=49, n=512, k=4608 on an A100: 64x64 tiles give 8 tiles, split-K 13 -> 104/108 busy x 49/64."""
    assert_allclose(ops.gemm_efficiency(49, 512, 4608, "A100"), (104 / 108) * (49 / 64))
    # one fixed tile, no split: the worst case the library avoids
    assert ops.gemm_efficiency(49, 512, 4608, "A100") > 50 * ops.gemm_utilization(
        49, 512, "A100"
    ) * ops.tile_efficiency(49, 512)


@given(
    m=st.integers(1, 5000),
    n=st.integers(1, 5000),
    k=st.integers(1, 5000),
    name=st.sampled_from(["T4", "A100", "H100 SXM"]),
)
def test_gemm_efficiency_at_least_the_fixed_tile(m, n, k, name):
    """Choosing among tiles and splitting k never does worse than the 128 x 128 tile alone, and never above 1."""
    fixed = ops.gemm_utilization(m, n, name) * ops.tile_efficiency(m, n)
    best = ops.gemm_efficiency(m, n, k, name)
    assert fixed * (1 - 1e-12) <= best <= 1


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
