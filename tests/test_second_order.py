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


# --- ops.gemm_time: the second-order model of one (batched) GEMM -------------


def test_gemm_time_hand_derived_compute_bound() -> None:
    """8192-cube bf16 on an H100 SXM, derived by hand.

    No tile is padded. Tiles of 128 x 128: 4096 tiles on 132 SMs in
    ceil(4096/132) = 32 waves keep 4096 / (32 * 132) = 0.9697 of the SMs
    busy; 128 x 64: 8192 / (63 * 132) = 0.9851; 64 x 64: 16384 / (125 * 132)
    = 0.9930, the best (the model does not charge small tiles for their
    lower data reuse). FLOP = 2 * 8192^3 = 1.0995e12, at 989.4e12 * 0.9930
    FLOP/s: 1.119 ms; bytes 3 * 8192^2 * 2 = 402.7 MB take 0.12 ms at
    3.35 TB/s, hidden (overlap 0).
    """
    flops = 2 * 8192**3
    e = 16384 / (125 * 132)
    expected = flops / (989.4e12 * e)
    assert_allclose(ops.gemm_time(8192, 8192, 8192, "H100 SXM"), expected, rtol=1e-12)


def test_gemm_time_hand_derived_memory_bound() -> None:
    """A decode-shaped fp8 GEMM (DeepGEMM's m = 64, n = 2112, k = 7168) on an H800 SXM.

    Bytes: A 64 * 7168 + B 7168 * 2112 one byte each, C 64 * 2112 in bf16:
    15,867,904 bytes, 4.737 us at 3.35 TB/s. FLOP 2 * 64 * 7168 * 2112 =
    1.938e9 take at most 1.938e9 / 1978.9e12 / e, under 2 us for any e >= 0.5,
    so the memory term sets the time.
    """
    nbytes = 64 * 7168 + 7168 * 2112 + 2 * 64 * 2112
    t = ops.gemm_time(64, 2112, 7168, "H800 SXM", dtype="fp8", out_dtype="bf16")
    assert_allclose(t, nbytes / 3.35e12, rtol=1e-12)


def test_gemm_time_overlap_and_overhead_add() -> None:
    """overlap = 1 adds the shorter term; the overhead adds as it is."""
    m, n, k = 4096, 4096, 512
    parts = roofline.breakdown(
        2.0 * m * n * k,
        2.0 * (m * k + k * n + m * n),
        "A100 SXM4 80GB",
        dtype="fp16",
        mfu=ops.gemm_efficiency(m, n, k, "A100 SXM4 80GB"),
    )
    t = ops.gemm_time(
        m, n, k, "A100 SXM4 80GB", dtype="fp16", overlap=1.0, overhead=3e-6
    )
    assert_allclose(t, parts.compute_s + parts.memory_s + 3e-6, rtol=1e-12)


@given(
    m=st.integers(1, 4096),
    n=st.integers(1, 4096),
    k=st.integers(1, 4096),
    batch=st.integers(1, 16),
    gpu=st.sampled_from(["T4", "A100 SXM4 80GB", "H100 SXM", "L4"]),
)
def test_gemm_time_never_beats_the_roofline(
    m: int, n: int, k: int, batch: int, gpu: str
) -> None:
    """Quantization only slows a GEMM: the second-order time >= the datasheet roofline's, within 2x of it... or it is padding."""
    cost = batch * ops.matmul_cost(m, k, n, dtype="fp16")
    bound = roofline.roofline_time(cost.flops, cost.bytes, gpu, dtype="fp16")
    t = ops.gemm_time(m, n, k, gpu, dtype="fp16", batch=batch)
    assert t >= bound * (1 - 1e-12)
    # the compute term is at most 1 / (tile_efficiency * wave share) slower
    assert t <= bound / ops.gemm_efficiency(m, n, k, gpu, batch=batch) * (1 + 1e-12)


def test_gemm_time_batch_shares_the_waves() -> None:
    """Eight 256-cubes in one launch beat eight launches.

    Alone, a 256-cube has 16 tiles of 64 x 64 and k = 256 allows no split-K:
    16 of 132 SMs work, and its 33.6 MFLOP take 0.28 us against 0.12 us for
    its 393 kB. Eight in one launch give 128 tiles, 128 / 132 busy: the
    compute term is the same 0.28 us, and the launch is now memory-bound,
    8 * 393 kB in 0.94 us, well under eight launches' 2.24 us.
    """
    one = ops.gemm_time(256, 256, 256, "H100 SXM")
    eight = ops.gemm_time(256, 256, 256, "H100 SXM", batch=8)
    assert_allclose(one, 2 * 256**3 / (989.4e12 * 16 / 132), rtol=1e-12)
    assert_allclose(eight, 8 * 3 * 2 * 256**2 / 3.35e12, rtol=1e-12)
    assert eight < 8 * one / 2


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"m": 0}, "m"),
        ({"batch": 0}, "batch"),
        ({"overlap": 1.5}, "overlap"),
        ({"overhead": -1.0}, "overhead"),
    ],
)
def test_gemm_time_rejects_bad_input(kwargs: dict, name: str) -> None:
    args = {"m": 64, "n": 64, "k": 64} | kwargs
    with pytest.raises(ValueError, match=name):
        ops.gemm_time(args.pop("m"), args.pop("n"), args.pop("k"), "A100", **args)


def test_gemm_time_needs_an_sm_count() -> None:
    with pytest.raises(KeyError, match="SM count"):
        ops.gemm_time(64, 64, 64, "H20")
