"""Tests of :mod:`helpers.ops`: FLOP and byte counts, the Cost algebra,
critical batch size, and ResNet-50's layer table.

Conventions under test: 1 multiply-accumulate = 2 FLOP; bytes = each operand
read once and each result written once. ResNet-50 references: He et al.,
"Deep residual learning for image recognition", CVPR 2016 (he2016resnet),
Table 1, in torchvision's "v1.5" form (stride 2 on the 3x3 convolution), whose
``resnet50()`` has 25,557,032 parameters and 4.09 GMACs at 224x224.
"""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from helpers import ops, roofline
from helpers.hardware import dtype_bytes, get_accelerator
from helpers.ops import (
    OP_KINDS,
    Cost,
    conv2d_cost,
    conv_output_size,
    critical_batch_size,
    elementwise_cost,
    linear_cost,
    matmul_cost,
    mlp_cost,
    op_cost,
    reduction_cost,
    resnet50_layers,
)
from helpers.roofline import ridge_point


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


# zero or normal magnitudes: subnormal floats (5e-324) lose precision when scaled, which is float arithmetic, not the model
amounts = st.one_of(
    st.just(0.0),
    st.floats(min_value=1e-6, max_value=1e15, allow_nan=False, allow_infinity=False),
)
costs = st.builds(Cost, amounts, amounts)
factors = st.floats(
    min_value=1e-3, max_value=1e3, allow_nan=False, allow_infinity=False
)
DEVICES = ["T4", "A100", "H100 SXM", "L4", "V100 SXM2"]

RESNET50_PARAMS = (
    25_557_032  # torchvision.models.resnet50(): sum(p.numel() for p in m.parameters())
)
RESNET50_MACS = 4_089_184_256  # convolutions + fc at 224x224, v1.5


# --- hand-derived costs -------------------------------------------------------


def test_matmul_cost_hand_derived():
    """C[2,4] = A[2,3] @ B[3,4]: 2*2*3*4 = 48 FLOP; fp16 bytes 2*(6 + 12 + 8) = 52; fp32 104."""
    c = matmul_cost(2, 3, 4)
    assert (c.flops, c.bytes) == (48.0, 52.0)
    assert matmul_cost(2, 3, 4, dtype="fp32").bytes == 104.0
    big = matmul_cost(4096, 4096, 4096, dtype="bf16")
    assert big.flops == 2 * 4096**3
    assert_allclose(
        big.intensity, 2 * 4096**3 / (2 * 3 * 4096**2)
    )  # = 4096/3 FLOP/byte


def test_linear_cost_hand_derived():
    """linear(8 tokens, 4096 -> 4096) fp16: 2*8*4096^2 = 268,435,456 FLOP;
    bytes = 2*4096^2 (weights) + 2*8*(4096 + 4096) (in/out) = 33,685,504; int8 weights halve the weight term."""
    c = linear_cost(8, 4096, 4096)
    assert c.flops == 268_435_456
    assert c.bytes == 33_685_504
    q = linear_cost(8, 4096, 4096, dtype="fp16", weight_dtype="int8")
    assert q.flops == c.flops
    assert q.bytes == 4096**2 + 2 * 8 * 8192
    # small batch: intensity ~ 2B / w_w = 8 FLOP/byte for fp16 weights
    assert_allclose(c.intensity, 8.0, rtol=1e-2)


def test_mlp_cost_hand_derived():
    """MLP d_model 4 -> d_ff 16 -> 4, batch 1, fp16: each projection 2*4*16 = 128 FLOP and
    2*(64 weights + 4 + 16 activations) = 168 bytes. Plain: 256 FLOP, 336 bytes; gated (SwiGLU) adds a
    third projection: 384 FLOP, 504 bytes."""
    plain = mlp_cost(1, 4, 16)
    assert (plain.flops, plain.bytes) == (256.0, 336.0)
    gated = mlp_cost(1, 4, 16, gated=True)
    assert (gated.flops, gated.bytes) == (384.0, 504.0)
    with pytest.raises(TypeError, match="gated"):
        mlp_cost(1, 4, 16, gated=1)  # type: ignore[arg-type]


def test_conv2d_cost_hand_derived():
    """ResNet-50 conv1 (3 -> 64, 7x7, stride 2, pad 3) at 224: output 112x112;
    FLOP = 2*112*112*64*3*7*7 = 236,027,904; fp16 bytes = 2*(3*224*224 + 64*3*49 + 64*112*112) = 1,925,504."""
    c = conv2d_cost(1, 3, 64, 224, 224, 7, stride=2)
    assert c.flops == 236_027_904
    assert c.bytes == 1_925_504
    assert conv2d_cost(4, 3, 64, 224, 224, 7, stride=2).flops == 4 * c.flops
    # a 1x1 convolution is a matmul of (N*P*Q, C) x (C, K)
    one = conv2d_cost(2, 64, 256, 56, 56, 1, dtype="fp32")
    mm = matmul_cost(2 * 56 * 56, 64, 256, dtype="fp32")
    assert one.flops == mm.flops and one.bytes == mm.bytes


def test_conv_output_size():
    """(size + 2 pad - kernel) // stride + 1: 224 -7x7/2-> 112 -3x3 pool/2-> 56; default pad = kernel // 2."""
    assert conv_output_size(224, 7, stride=2) == 112
    assert conv_output_size(112, 3, stride=2, padding=1) == 56
    assert conv_output_size(56, 3) == 56
    assert conv_output_size(5, 5, padding=0) == 1
    with pytest.raises(ValueError, match="kernel"):
        conv_output_size(3, 7, padding=0)
    with pytest.raises(TypeError):
        conv_output_size(224, 7, 2)  # type: ignore[misc]  # stride is an option: keyword-only


def test_elementwise_and_reduction_costs():
    """Elementwise add of 1000 fp32: 1000 FLOP, 3*4*1000 bytes (2 reads + 1 write) -> 1/12 FLOP/byte.
    Row-sum of 1000 into 10: 990 additions, (1000 + 10)*4 bytes."""
    add = elementwise_cost(1000, dtype="fp32", n_inputs=2)
    assert (add.flops, add.bytes) == (1000.0, 12000.0)
    assert_allclose(add.intensity, 1 / 12)
    red = reduction_cost(1000, dtype="fp32", outputs=10)
    assert (red.flops, red.bytes) == (990.0, 4040.0)
    with pytest.raises(ValueError, match="outputs"):
        reduction_cost(10, outputs=11)


# --- Cost algebra ---------------------------------------------------------------


@given(costs, costs)
def test_cost_addition_commutes(a, b):
    """Property: a + b == b + a (running two kernels in either order costs the same)."""
    assert a + b == b + a


@given(costs, costs, costs)
def test_cost_addition_associates(a, b, c):
    """Property: (a + b) + c == a + (b + c) up to float rounding."""
    left, right = (a + b) + c, a + (b + c)
    assert_allclose([left.flops, left.bytes], [right.flops, right.bytes], rtol=1e-12)


@given(costs, costs, factors)
def test_cost_scaling_distributes(a, b, k):
    """Property: k (a + b) == k a + k b, and k * a == a * k."""
    left, right = k * (a + b), k * a + k * b
    assert_allclose([left.flops, left.bytes], [right.flops, right.bytes], rtol=1e-12)
    assert k * a == a * k


@given(costs, factors)
def test_cost_intensity_invariant_under_scaling(a, k):
    """Property: running a kernel k times does not change its intensity."""
    if a.bytes == 0:
        assert (k * a).intensity == math.inf
    else:
        assert_allclose((k * a).intensity, a.intensity, rtol=1e-12)


@given(st.lists(costs, max_size=8))
def test_cost_sum(items):
    """Property: built-in sum() works on Costs (starts from 0) and equals the fold of +."""
    total = sum(items)
    if not items:
        assert total == 0
        return
    assert_allclose(total.flops, math.fsum(c.flops for c in items), rtol=1e-12)
    assert_allclose(total.bytes, math.fsum(c.bytes for c in items), rtol=1e-12)


def test_cost_validation_and_intensity():
    """Negative/NaN/non-number work raises naming the field; no bytes -> infinite intensity; Cost is frozen."""
    assert Cost(10, 0).intensity == math.inf
    assert Cost(10, 5).intensity == 2
    with pytest.raises(ValueError, match="flops"):
        Cost(-1, 1)
    with pytest.raises(ValueError, match="bytes"):
        Cost(1, float("nan"))
    with pytest.raises(TypeError, match="flops"):
        Cost("1", 1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="factor"):
        Cost(1, 1) * -2
    with pytest.raises(TypeError):
        Cost(1, 1) + 1  # type: ignore[operator]
    with pytest.raises(dataclasses.FrozenInstanceError):
        Cost(1, 1).flops = 2  # type: ignore[misc]


# --- named operations (the chapters' calculators) -----------------------------------


def test_op_cost_matches_formulas():
    """Each named kind returns the FLOP and bytes of its formula, counted by hand for small sizes."""
    assert op_cost("relu", 10, dtype="fp32") == Cost(
        10.0, 80.0
    )  # 10 reads + 10 writes of 4 bytes
    assert op_cost("add", 10, dtype="fp16") == Cost(
        10.0, 60.0
    )  # 20 reads + 10 writes of 2 bytes
    assert op_cost("sum", 10, dtype="fp32") == Cost(
        9.0, 44.0
    )  # 9 additions, 10 reads + 1 write
    assert op_cost("matmul", 4, dtype="fp16") == Cost(2.0 * 4**3, 2.0 * 3 * 16)
    assert op_cost("linear", 3, dtype="fp16", d_model=8) == Cost(
        2.0 * 3 * 8 * 8, 2.0 * (64 + 3 * 16)
    )
    assert set(OP_KINDS) == {"relu", "add", "sum", "matmul", "linear"}
    for kind in OP_KINDS:
        assert isinstance(op_cost(kind, 16), Cost)


def test_op_cost_is_case_insensitive():
    """Kind names are looked up like accelerator names: stripped and case-insensitive."""
    assert op_cost(" MatMul ", 64) == op_cost("matmul", 64)


@given(st.integers(min_value=1, max_value=10**9))
def test_elementwise_intensity_does_not_grow_with_size(n):
    """ReLU's intensity is 1 FLOP per (2 x bytes per element), whatever the size: it stays memory-bound."""
    assert_allclose(op_cost("relu", n, dtype="fp16").intensity, 1 / 4)


@given(st.integers(min_value=1, max_value=100_000))
def test_matmul_intensity_is_n_over_three_bytes(n):
    """A square fp16 matmul does 2n^3 FLOP on 3n^2 elements of 2 bytes: intensity n/3 FLOP/byte."""
    assert_allclose(op_cost("matmul", n, dtype="fp16").intensity, n / 3, rtol=1e-12)


@pytest.mark.parametrize(
    "kwargs, param",
    [
        ({"kind": "conv", "size": 4}, "kind"),
        ({"kind": "relu", "size": 0}, "size"),
        ({"kind": "relu", "size": 2.5}, "size"),
        ({"kind": "linear", "size": 4, "d_model": -1}, "d_model"),
        ({"kind": "relu", "size": 4, "dtype": "fp64"}, "dtype"),
    ],
)
def test_op_cost_rejects_bad_input(kwargs, param):
    """Bad input raises an error whose message names the parameter (so a calculator can show it)."""
    with pytest.raises((ValueError, KeyError, TypeError)) as info:
        op_cost(**kwargs)
    assert param in str(info.value)


# --- critical batch size ----------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
def test_critical_batch_wide_layer_limit(device):
    """Wide-layer limit: intensity -> 2B / w_w, so B* = ridge for fp16 weights and ridge / 2 for int8 weights.

    T4 example: ridge 65e12 / 320e9 = 203.125 FLOP/byte -> critical batch 203 (fp16), ~102 (int8 weights).
    """
    ridge = ridge_point(device, dtype="fp16")
    assert_allclose(critical_batch_size(device, dtype="fp16"), ridge, rtol=1e-12)
    assert_allclose(
        critical_batch_size(device, dtype="fp16", weight_dtype="int8"),
        ridge / 2,
        rtol=1e-12,
    )
    # the exact formula tends to the limit for very wide layers
    assert_allclose(
        critical_batch_size(device, dtype="fp16", d_in=10**8, d_out=10**8),
        ridge,
        rtol=1e-4,
    )
    assert_allclose(critical_batch_size("T4"), 203.125, rtol=1e-12)


@given(
    st.sampled_from(DEVICES),
    st.integers(min_value=2048, max_value=65536),
    st.integers(min_value=2048, max_value=65536),
    st.sampled_from([None, "int8"]),
)
def test_critical_batch_exact_matches_linear_intensity(
    device, d_in, d_out, weight_dtype
):
    """Property: at B*, the linear layer's intensity (linear_cost's own byte count) equals the ridge point.

    The continuous intensity 2B d_in d_out / (w_w d_in d_out + w_a B (d_in + d_out)) at B* is the ridge, and
    the integer batches on either side of B* straddle it.
    """
    ridge = ridge_point(device, dtype="fp16")
    b = critical_batch_size(
        device, dtype="fp16", weight_dtype=weight_dtype, d_in=d_in, d_out=d_out
    )
    assert math.isfinite(b) and b > 0
    w_w = dtype_bytes(weight_dtype or "fp16")
    intensity = 2 * b * d_in * d_out / (w_w * d_in * d_out + 2 * b * (d_in + d_out))
    assert_allclose(intensity, ridge, rtol=1e-9)
    below = linear_cost(
        max(1, math.floor(b)), d_in, d_out, dtype="fp16", weight_dtype=weight_dtype
    ).intensity
    above_batch = math.ceil(b) + (b == math.ceil(b))
    above = linear_cost(
        above_batch, d_in, d_out, dtype="fp16", weight_dtype=weight_dtype
    ).intensity
    assert below <= ridge * (1 + 1e-12) <= above * (1 + 1e-12)


@given(
    st.sampled_from(DEVICES),
    st.integers(min_value=1, max_value=65536),
    st.integers(min_value=1, max_value=65536),
    st.sampled_from([None, "int8"]),
)
def test_critical_batch_closed_form(device, d_in, d_out, weight_dtype):
    """Property: B* solves 2 B d_in d_out / P = (w_w d_in d_out + w_a B (d_in + d_out)) / W by hand.

    With the ridge r = P / W: B* = r w_w d_in d_out / (2 d_in d_out - r w_a (d_in + d_out)), and ``inf``
    when the denominator is <= 0 (activations alone keep the layer below the ridge).
    """
    r = ridge_point(device, dtype="fp16")
    w_w, w_a = dtype_bytes(weight_dtype or "fp16"), 2
    denominator = 2 * d_in * d_out - r * w_a * (d_in + d_out)
    got = critical_batch_size(
        device, dtype="fp16", weight_dtype=weight_dtype, d_in=d_in, d_out=d_out
    )
    assume(
        abs(denominator) > 1e-6 * 2 * d_in * d_out
    )  # away from a cancellation in float arithmetic
    if denominator < 0:
        assert got == math.inf
    else:
        assert_allclose(got, r * w_w * d_in * d_out / denominator, rtol=1e-6)


@given(
    st.sampled_from(DEVICES),
    st.sampled_from([None, "int8"]),
    st.integers(min_value=1, max_value=2**24),
    st.integers(min_value=1, max_value=2**24),
)
def test_critical_batch_tends_to_the_wide_layer_limit(device, weight_dtype, k1, k2):
    """Property: for a square d x d layer B*(d) falls towards the wide-layer limit r w_w / 2 as d grows.

    From the closed form with d_in = d_out = d: B*(d) = r w_w d^2 / (2 d^2 - 2 r w_a d)
    = (r w_w / 2) * d / (d - r w_a) for d > r w_a (else inf): above the limit by the factor
    d / (d - r w_a), which falls to 1 as d grows. Checked for d = floor(r w_a) + k.
    """
    r = ridge_point(device, dtype="fp16")
    limit = critical_batch_size(device, dtype="fp16", weight_dtype=weight_dtype)
    assert_allclose(limit, r * dtype_bytes(weight_dtype or "fp16") / 2, rtol=1e-12)
    small, large = sorted(
        (math.floor(2 * r) + k1, math.floor(2 * r) + k2)
    )  # w_a = 2 bytes (fp16)
    b_small, b_large = (
        critical_batch_size(
            device, dtype="fp16", weight_dtype=weight_dtype, d_in=d, d_out=d
        )
        for d in (small, large)
    )
    assert_allclose(b_small, limit * small / (small - 2 * r), rtol=1e-9)
    assert limit < b_large <= b_small * (1 + 1e-12)
    # below the threshold d <= r w_a the square layer is never compute-bound
    assert (
        critical_batch_size(
            device, dtype="fp16", d_in=math.floor(2 * r), d_out=math.floor(2 * r)
        )
        == math.inf
    )


def test_critical_batch_inf_when_never_compute_bound():
    """A narrow layer (100 x 100 on an H100, ridge 295) never reaches the ridge: its intensity is capped at
    2 d_in d_out / (w_a (d_in + d_out)) = 50 FLOP/byte, so the critical batch is infinite."""
    assert critical_batch_size("H100", dtype="bf16", d_in=100, d_out=100) == math.inf
    assert critical_batch_size("H100", dtype="bf16", d_in=4096, d_out=4096) < math.inf


def test_fp8_on_h100_keeps_the_fp16_critical_batch():
    """FP8 doubles the H100's peak (1,978.9 vs 989.4 TFLOP/s dense, datasheet) and halves weight bytes: the two
    cancel, B* = ridge * w_w / 2 = (1978.9e12 / 3.35e12) * 1 / 2 = 295.4 vs (989.4e12 / 3.35e12) * 2 / 2 = 295.3."""
    fp16 = critical_batch_size("h100", dtype="fp16", d_in=2**20, d_out=2**20)
    fp8 = critical_batch_size("h100", dtype="fp8", d_in=2**20, d_out=2**20)
    assert_allclose([fp16, fp8], [295.3, 295.4], rtol=1e-3)


def test_critical_batch_bad_input():
    """Only one of d_in/d_out, bad dims/dtypes, or a positional option raise, naming the parameter."""
    with pytest.raises(ValueError, match="d_out"):
        critical_batch_size("T4", d_in=4096)
    with pytest.raises(ValueError, match="d_in"):
        critical_batch_size("T4", d_in=0, d_out=10)
    with pytest.raises(KeyError, match="dtype"):
        critical_batch_size("T4", dtype="bf16")
    with pytest.raises(KeyError, match="accelerator"):
        critical_batch_size("nope")
    with pytest.raises(TypeError):
        critical_batch_size("T4", "fp16")  # type: ignore[misc]


@pytest.mark.parametrize(
    "call, param",
    [
        (lambda: matmul_cost(0, 1, 1), "m"),
        (lambda: matmul_cost(1, -2, 1), "k"),
        (lambda: matmul_cost(1, 1, 1.5), "n"),
        (lambda: linear_cost(True, 1, 1), "batch"),
        (lambda: linear_cost(1, "8", 1), "d_in"),
        (lambda: linear_cost(1, 1, float("nan")), "d_out"),
        (lambda: conv2d_cost(1, 3, 64, 224, 224, 0), "kernel"),
        (lambda: conv2d_cost(1, 3, 64, 224, 224, 3, stride=0), "stride"),
        (lambda: conv2d_cost(1, 3, 64, 224, 224, 3, padding=-1), "padding"),
        (lambda: elementwise_cost(0), "n"),
        (lambda: resnet50_layers(batch=0), "batch"),
        (lambda: resnet50_layers(image_size=16), "image_size"),
    ],
)
def test_bad_dimensions_raise_naming_parameter(call, param):
    """Zero, negative, fractional, NaN, bool or string dimensions raise ValueError/TypeError naming the parameter."""
    with pytest.raises((ValueError, TypeError), match=param):
        call()


def test_unknown_dtype_raises():
    """An unknown dtype raises KeyError naming ``dtype``."""
    with pytest.raises(KeyError, match="dtype"):
        matmul_cost(1, 1, 1, dtype="fp64")


# --- ResNet-50 --------------------------------------------------------------------


def test_resnet50_structure():
    """53 convolutions (1 stem + 16 bottlenecks x 3 + 4 projections) then one fc 2048 -> 1000 (He et al. 2016, Table 1)."""
    layers = resnet50_layers()
    convs = [l for l in layers if l.kind == "conv"]
    assert len(convs) == 1 + 3 * (3 + 4 + 6 + 3) + 4 == 53
    assert layers[-1].kind == "fc" and (layers[-1].c_in, layers[-1].c_out) == (
        2048,
        1000,
    )
    assert len(layers) == 54
    assert convs[-1].out_size == 7  # 224 / 32
    # v1.5: the stride sits on the 3x3 conv of each downsampling block
    strided = [l.name for l in convs if l.stride == 2]
    assert strided == [
        "conv1",
        "layer2.0.conv2",
        "layer2.0.downsample",
        "layer3.0.conv2",
        "layer3.0.downsample",
        "layer4.0.conv2",
        "layer4.0.downsample",
    ]


def test_resnet50_params_match_torchvision():
    """Weights plus batch-norm (2 per conv output channel: gamma, beta) = 25,557,032, torchvision's count."""
    layers = resnet50_layers()
    weights = sum(l.params for l in layers)
    batch_norm = sum(2 * l.c_out for l in layers if l.kind == "conv")
    assert weights + batch_norm == RESNET50_PARAMS


def test_resnet50_macs():
    """MACs at 224 (convs + fc) = 4,089,184,256 ≈ 4.09e9, the figure usually quoted as "4.1 GFLOPs"; FLOP is twice that."""
    layers = resnet50_layers()
    macs = sum(l.macs for l in layers)
    assert macs == RESNET50_MACS
    assert sum(l.cost.flops for l in layers) == 2 * RESNET50_MACS


@pytest.mark.parametrize("batch", [2, 8, 64])
def test_resnet50_flops_scale_with_batch(batch):
    """FLOP scale linearly with the batch; bytes grow less than linearly (weights are read once per batch)."""
    one = sum((l.cost for l in resnet50_layers(1)), Cost(0, 0))
    many = sum((l.cost for l in resnet50_layers(batch)), Cost(0, 0))
    assert many.flops == batch * one.flops
    assert one.bytes < many.bytes < batch * one.bytes
    assert many.intensity > one.intensity


def _plain_torch_resnet50():
    """ResNet-50 v1.5 written with torch.nn only (no torchvision), after He et al. 2016 Table 1."""
    import torch.nn as nn

    class Bottleneck(nn.Module):
        def __init__(self, c_in: int, width: int, stride: int) -> None:
            super().__init__()
            out = 4 * width
            self.body = nn.Sequential(
                nn.Conv2d(c_in, width, 1, bias=False),
                nn.BatchNorm2d(width),
                nn.ReLU(inplace=True),
                nn.Conv2d(
                    width, width, 3, stride=stride, padding=1, bias=False
                ),  # v1.5: stride here
                nn.BatchNorm2d(width),
                nn.ReLU(inplace=True),
                nn.Conv2d(width, out, 1, bias=False),
                nn.BatchNorm2d(out),
            )
            self.shortcut = (
                nn.Sequential(
                    nn.Conv2d(c_in, out, 1, stride=stride, bias=False),
                    nn.BatchNorm2d(out),
                )
                if stride != 1 or c_in != out
                else nn.Identity()
            )
            self.relu = nn.ReLU(inplace=True)

        def forward(self, x):
            return self.relu(self.body(x) + self.shortcut(x))

    blocks = []
    c_in = 64
    for stage, (count, width) in enumerate(zip((3, 4, 6, 3), (64, 128, 256, 512))):
        for i in range(count):
            blocks.append(Bottleneck(c_in, width, 2 if (i == 0 and stage > 0) else 1))
            c_in = 4 * width
    return nn.Sequential(
        nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False),
        nn.BatchNorm2d(64),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(3, stride=2, padding=1),
        *blocks,
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(2048, 1000),
    )


def test_resnet50_against_torch_flop_counter():
    """Independent check: a plain-torch ResNet-50 counted by ``torch.utils.flop_counter.FlopCounterMode``
    at batch 1 on a 1x3x224x224 input has exactly the helpers' conv + fc FLOP, and 25,557,032 parameters.

    FlopCounterMode's convention is checked first on one convolution and one linear layer: it counts
    2 FLOP per MAC for convolutions and matmuls, and ignores biases, batch norm, pooling and ReLU,
    which is the helpers' convention too (the fc bias is counted as a weight, not as FLOP).
    The network runs on PyTorch's meta device (shapes only), which FlopCounterMode counts identically.
    """
    torch = pytest.importorskip("torch")
    from torch.utils.flop_counter import FlopCounterMode

    with torch.no_grad():
        conv = torch.nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        with FlopCounterMode(display=False) as counter:
            conv(torch.zeros(1, 3, 224, 224))
        assert counter.get_total_flops() == 2 * 112 * 112 * 64 * 3 * 7 * 7

        # on the meta device shapes propagate without arithmetic: the count is the same, and instant
        with torch.device("meta"):
            model = _plain_torch_resnet50().eval()
            image = torch.zeros(1, 3, 224, 224)
        assert sum(p.numel() for p in model.parameters()) == RESNET50_PARAMS
        with FlopCounterMode(display=False) as counter:
            out = model(image)
    assert tuple(out.shape) == (1, 1000)
    helpers_flops = sum(l.cost.flops for l in resnet50_layers(batch=1, image_size=224))
    assert counter.get_total_flops() == helpers_flops


def test_layer_properties():
    """Layer.params counts conv weights (c_out c_in k^2) and the fc bias; Layer.macs is flops / 2."""
    layers = resnet50_layers()
    first, fc = layers[0], layers[-1]
    assert first.params == 64 * 3 * 49
    assert fc.params == 2048 * 1000 + 1000
    assert first.macs == first.cost.flops / 2
    assert isinstance(ops.Layer, type)


def test_op_roof_puts_elementwise_work_on_the_vector_units():
    """Tensor cores only multiply matrices: ReLU, add and sum run on the vector units."""
    assert [ops.op_roof(k) for k in ("relu", "add", "sum")] == ["vector"] * 3
    assert [ops.op_roof(k) for k in ("matmul", "linear")] == ["tensor"] * 2
    assert set(ops.OP_ROOFS) == set(ops.OP_KINDS)
    with pytest.raises(KeyError, match="kind"):
        ops.op_roof("softmax")


def test_op_breakdown_hand_values():
    """An fp16 ReLU of 2**24 elements on an H100 SXM: compute on the 133.8 TFLOP/s vector peak,
    2**24 / 133.8e12 = 125 ns (not 17 ns on the 989 TFLOP/s tensor cores); memory
    4 * 2**24 / 3.35e12 = 20.0 µs. A 4096**3 fp16 matmul: 2 * 4096**3 / 989.4e12 = 139 µs."""
    relu = ops.op_breakdown("relu", 2**24, "H100 SXM", dtype="fp16", overhead=5e-6)
    assert relu.compute_s == pytest.approx(2**24 / 133.8e12, rel=1e-3)
    assert relu.memory_s == pytest.approx(4 * 2**24 / 3.35e12, rel=1e-3)
    assert relu.seconds == pytest.approx(relu.memory_s + 5e-6)
    matmul = ops.op_breakdown("matmul", 4096, "H100 SXM", dtype="fp16")
    assert matmul.compute_s == pytest.approx(2 * 4096**3 / 989.4e12, rel=1e-3)
    assert matmul.bound == "compute"


def test_op_breakdown_needs_a_vector_peak_for_elementwise_work():
    """The catalog lists no 8-bit vector peak: an fp8 ReLU is an input error naming the dtype."""
    with pytest.raises(KeyError, match="dtype"):
        ops.op_breakdown("relu", 1024, "H100 SXM", dtype="fp8")
