"""Tests of :mod:`helpers.roofline`: ridge point, attainable FLOP/s, time bound.

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

from helpers import roofline
from helpers.hardware import Accelerator, get_accelerator
from helpers.roofline import attainable_flops, bound, ridge_point, roofline_time

DEVICES = ["T4", "A100", "H100 SXM", "L4", "RTX 4090"]
positive_floats = st.floats(min_value=1e-3, max_value=1e18, allow_nan=False, allow_infinity=False)
work = st.floats(min_value=0.0, max_value=1e18, allow_nan=False, allow_infinity=False)
factors = st.floats(min_value=1e-3, max_value=1e3, allow_nan=False, allow_infinity=False)


def test_ridge_h100_bf16():
    """H100 SXM bf16 ridge = 989.4e12 / 3.35e12 ≈ 295 FLOP/byte (dense peak; NVIDIA H100 datasheet)."""
    assert_allclose(ridge_point("H100 SXM", "bf16"), 989.4e12 / 3.35e12, rtol=1e-12)
    assert round(ridge_point("h100", "bf16")) == 295


def test_ridge_t4_fp16():
    """T4 fp16 ridge = 65e12 / 320e9 = 203.125 FLOP/byte; fp32 = 8.1e12 / 320e9 = 25.3 (T4 datasheet)."""
    assert_allclose(ridge_point("T4", "fp16"), 203.125, rtol=1e-12)
    assert_allclose(ridge_point("T4"), 203.1, rtol=1e-3)  # fp16 is the default dtype
    assert_allclose(ridge_point("T4", "fp32"), 25.3125, rtol=1e-12)


def test_ridge_accepts_accelerator_object():
    """A hand-built (e.g. measured) Accelerator works wherever a name does."""
    toy = Accelerator("toy", {"fp32": 1e12}, 1e10, 1e9, "https://example.org", "toy")
    assert_allclose(ridge_point(toy, "fp32"), 100.0)
    assert_allclose(attainable_flops(10.0, toy, "fp32"), 1e11)


def test_attainable_flops_scalar_values():
    """Scalar in, float out: below the ridge the slope is the bandwidth, above it the peak.

    T4 fp16: at 10 FLOP/byte, 10 * 320e9 = 3.2e12; at 1000, the 65e12 peak; at the ridge both.
    """
    low = attainable_flops(10.0, "T4", "fp16")
    assert isinstance(low, float)
    assert_allclose(low, 3.2e12)
    assert_allclose(attainable_flops(1000, "T4", "fp16"), 65e12)
    assert_allclose(attainable_flops(203.125, "T4", "fp16"), 65e12)
    assert isinstance(attainable_flops(np.float64(3.0), "T4"), float)


def test_attainable_flops_vectorised():
    """Array in, array of the same shape out, each element the scalar result."""
    x = np.array([[0.5, 10.0], [203.125, 1e4]])
    y = attainable_flops(x, "T4", "fp16")
    assert isinstance(y, np.ndarray) and y.shape == x.shape
    expected = [[attainable_flops(float(v), "T4", "fp16") for v in row] for row in x]
    assert_allclose(y, expected)
    assert_allclose(attainable_flops([1.0, 2.0], "A100", "bf16"), [2039e9, 2 * 2039e9])


def test_roofline_time_hand_derived():
    """Hand-derived times on the T4 (fp16 65e12 FLOP/s, 320e9 B/s).

    * 1e12 FLOP, 1e9 bytes: compute 1/65 s = 15.38 ms > memory 3.125 ms -> 15.38 ms.
    * 1e9 FLOP, 1e9 bytes: memory 3.125 ms > compute 15.4 us -> 3.125 ms.
    * plus overhead 1e-3: added on top.
    """
    assert_allclose(roofline_time(1e12, 1e9, "T4"), 1 / 65, rtol=1e-12)
    assert_allclose(roofline_time(1e9, 1e9, "T4"), 1e9 / 320e9, rtol=1e-12)
    assert_allclose(roofline_time(1e9, 1e9, "T4", overhead=1e-3), 1e9 / 320e9 + 1e-3, rtol=1e-12)
    assert_allclose(roofline_time(0, 320e9, "T4"), 1.0)
    assert_allclose(roofline_time(65e12, 0, "T4"), 1.0)
    # fp32 peak is 8.1e12
    assert_allclose(roofline_time(8.1e12, 1.0, "T4", "fp32"), 1.0)


def test_bound_regimes():
    """``bound`` names the dominating term: memory below the ridge, compute above, overhead when it exceeds both."""
    assert bound(1e9, 1e9, "T4") == "memory"  # intensity 1 < 203
    assert bound(1e12, 1e9, "T4") == "compute"  # intensity 1000 > 203
    assert bound(1e6, 1e6, "T4", overhead=10e-6) == "overhead"  # 3 ns of memory, 10 us launch
    assert bound(1e12, 1e9, "T4", overhead=1e-6) == "compute"
    # exactly at the ridge the two times tie; the function calls it compute-bound
    assert bound(203.125e9, 1e9, "T4") == "compute"


def test_overhead_regime_time():
    """In the overhead regime, the time is nearly the overhead alone (tiny kernels are launch-bound)."""
    t = roofline_time(1e3, 1e3, "H100", "bf16", overhead=5e-6)
    assert 5e-6 <= t < 5e-6 * 1.001


@given(st.lists(positive_floats, min_size=2, max_size=20), st.sampled_from(DEVICES))
def test_attainable_monotone_and_capped(values, device):
    """Property: attainable FLOP/s is non-decreasing in intensity and never above the peak."""
    x = np.sort(np.array(values))
    y = attainable_flops(x, device, "fp16")
    assert np.all(np.diff(y) >= 0)
    assert np.all(y <= get_accelerator(device).flops("fp16"))
    assert np.all(y > 0)


@given(work, work, st.sampled_from(DEVICES), st.floats(0, 1e-3))
def test_time_at_least_both_bounds(flops, bytes_, device, overhead):
    """Property: roofline_time >= compute time and >= memory time (+ overhead)."""
    assume(flops > 0 or bytes_ > 0)
    acc = get_accelerator(device)
    t = roofline_time(flops, bytes_, device, "fp16", overhead)
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
    assert_allclose(roofline_time(flops * factor, bytes_ * factor, device), factor * t, rtol=1e-9)


@given(positive_floats, positive_floats, st.sampled_from(DEVICES))
def test_bound_agrees_with_ridge(flops, bytes_, device):
    """Property: without overhead, the kernel is compute-bound iff its intensity >= ridge point."""
    intensity = flops / bytes_
    ridge = ridge_point(device)
    assume(abs(intensity / ridge - 1) > 1e-9)
    assert bound(flops, bytes_, device) == ("compute" if intensity > ridge else "memory")


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


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf"), [1.0, 0.0], [], [1.0, float("nan")]])
def test_attainable_rejects_bad_intensity(bad):
    """Intensity must be finite and > 0 (zero FLOP/byte is meaningless on a log-log roofline)."""
    with pytest.raises(ValueError, match="intensity"):
        attainable_flops(bad, "T4")


@pytest.mark.parametrize("bad", ["abc", "10", True, np.array([True, False]), None, {"a": 1}])
def test_attainable_rejects_non_numbers(bad):
    """Strings (even numeric ones), bools and other non-numbers raise TypeError naming ``intensity``."""
    with pytest.raises(TypeError, match="intensity"):
        attainable_flops(bad, "T4")


def test_unknown_device_and_dtype():
    """Unknown device -> KeyError naming ``accelerator``; dtype missing on the device -> KeyError naming ``dtype``."""
    with pytest.raises(KeyError, match="accelerator"):
        ridge_point("TPU v9")
    with pytest.raises(KeyError, match="dtype"):
        ridge_point("T4", "bf16")
    with pytest.raises(KeyError, match="dtype"):
        roofline_time(1.0, 1.0, "T4", "bf16")


def test_module_exports():
    """The public names chapters use exist."""
    for name in ("ridge_point", "attainable_flops", "roofline_time", "bound"):
        assert callable(getattr(roofline, name))
    assert math.isfinite(ridge_point("A100", "tf32"))
