"""Tests for :mod:`helpers.ceilings` (named operations, time breakdown, SI formatting).

The roofline model is Williams, Waterman and Patterson, CACM 52(4), 2009; the
T4 figures are NVIDIA's T4 datasheet (65 TFLOP/s FP16 tensor-core, 320 GB/s).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from helpers import ceilings, hardware, ops, roofline


def test_op_cost_matches_formulas():
    """Each named kind returns the FLOP and bytes of its formula, counted by hand for small sizes."""
    assert ceilings.op_cost("relu", 10, "fp32") == ops.Cost(10.0, 80.0)  # 10 reads + 10 writes of 4 bytes
    assert ceilings.op_cost("add", 10, "fp16") == ops.Cost(10.0, 60.0)  # 20 reads + 10 writes of 2 bytes
    assert ceilings.op_cost("sum", 10, "fp32") == ops.Cost(9.0, 44.0)  # 9 additions, 10 reads + 1 write
    assert ceilings.op_cost("matmul", 4, "fp16") == ops.Cost(2.0 * 4**3, 2.0 * 3 * 16)
    assert ceilings.op_cost("linear", 3, "fp16", d_model=8) == ops.Cost(2.0 * 3 * 8 * 8, 2.0 * (64 + 3 * 16))


def test_op_cost_is_case_insensitive():
    """Kind names are looked up like accelerator names: stripped and case-insensitive."""
    assert ceilings.op_cost(" MatMul ", 64) == ceilings.op_cost("matmul", 64)


@given(st.integers(min_value=1, max_value=10**9))
def test_elementwise_intensity_does_not_grow_with_size(n):
    """ReLU's intensity is 1 FLOP per (2 x bytes per element), whatever the size: it stays memory-bound."""
    assert_allclose(ceilings.op_cost("relu", n, "fp16").intensity, 1 / 4)


@given(st.integers(min_value=1, max_value=100_000))
def test_matmul_intensity_is_n_over_three_bytes(n):
    """A square fp16 matmul does 2n^3 FLOP on 3n^2 elements of 2 bytes: intensity n/3 FLOP/byte."""
    assert_allclose(ceilings.op_cost("matmul", n, "fp16").intensity, n / 3, rtol=1e-12)


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
        ceilings.op_cost(**kwargs)
    assert param in str(info.value)


@given(
    st.floats(min_value=1.0, max_value=1e18),
    st.floats(min_value=1.0, max_value=1e12),
    st.floats(min_value=0.0, max_value=1e-3),
    st.sampled_from(["T4", "A100", "H100", "H200", "L4"]),
)
def test_breakdown_agrees_with_roofline(flops, bytes_, overhead, acc):
    """The breakdown's total and bound are exactly roofline_time and bound; its terms are F/P and B/W."""
    cost = ops.Cost(flops, bytes_)
    b = ceilings.time_breakdown(cost, acc, "fp16", overhead)
    device = hardware.get_accelerator(acc)
    assert b.total == roofline.roofline_time(flops, bytes_, acc, "fp16", overhead)
    assert b.bound == roofline.bound(flops, bytes_, acc, "fp16", overhead)
    assert_allclose(b.compute, flops / device.flops("fp16"))
    assert_allclose(b.memory, bytes_ / device.memory_bandwidth)
    assert_allclose(b.total, max(b.compute, b.memory) + overhead)


def test_breakdown_t4_relu_is_memory_bound():
    """A 2^24-element fp16 ReLU on a T4 moves 64 MiB at 320 GB/s (T4 datasheet): 210 µs, memory-bound."""
    b = ceilings.time_breakdown(ceilings.op_cost("relu", 2**24, "fp16"), "T4", "fp16")
    assert_allclose(b.memory, 2**24 * 4 / 320e9)
    assert b.bound == "memory"


def test_breakdown_rejects_bad_input():
    """A non-Cost, a negative overhead and a dtype the device lacks are refused, naming the parameter."""
    with pytest.raises(TypeError, match="cost"):
        ceilings.time_breakdown((1.0, 2.0), "T4")
    with pytest.raises(ValueError, match="overhead"):
        ceilings.time_breakdown(ops.Cost(1.0, 1.0), "T4", overhead=-1.0)
    with pytest.raises(KeyError, match="dtype"):
        ceilings.time_breakdown(ops.Cost(1.0, 1.0), "T4", dtype="bf16")


@pytest.mark.parametrize(
    "value, unit, expected",
    [
        (3.2e-6, "s", "3.2 µs"),
        (989.4e12, "FLOP/s", "989 TFLOP/s"),
        (999.96, "B", "1 kB"),
        (65e12 / 320e9, "FLOP/byte", "203 FLOP/byte"),
        (0.0, "s", "0 s"),
        (1.0, "", "1"),
        (2.5e-12, "s", "0.0025 ns"),
    ],
)
def test_format_si(value, unit, expected):
    """Values print with the right prefix and three significant figures, rounding into the next prefix."""
    assert ceilings.format_si(value, unit) == expected


def test_format_si_rejects_bad_input():
    """Negative values, a non-string unit and zero digits are refused, naming the parameter."""
    with pytest.raises(ValueError, match="value"):
        ceilings.format_si(-1.0)
    with pytest.raises(TypeError, match="unit"):
        ceilings.format_si(1.0, unit=3)
    with pytest.raises(ValueError, match="digits"):
        ceilings.format_si(1.0, digits=0)


def test_mark_ops_places_points_on_the_roof():
    """Each operation is drawn at (intensity, attainable FLOP/s) with its label; neighbours alternate sides."""
    from helpers import plots

    points = {"a": 1.0, "b": 1000.0, "c": 2.0}
    fig, ax = plots.roofline_plot("H100", "bf16")
    ceilings.mark_ops(ax, points, "H100", "bf16")
    texts = {t.get_text(): t for t in ax.texts}
    assert set(texts) == set(points)
    for label, intensity in points.items():
        assert_allclose(texts[label].xy, (intensity, roofline.attainable_flops(intensity, "H100", "bf16")))
    assert texts["a"].xyann[1] > 0 > texts["c"].xyann[1]  # sorted a, c, b: a above, c below


def test_mark_ops_rejects_bad_input():
    """No points, or a non-positive intensity, are refused, naming the parameter."""
    from helpers import plots

    fig, ax = plots.roofline_plot("T4", "fp16")
    with pytest.raises(ValueError, match="points"):
        ceilings.mark_ops(ax, {}, "T4")
    with pytest.raises(ValueError, match="points"):
        ceilings.mark_ops(ax, {"bad": -1.0}, "T4")
