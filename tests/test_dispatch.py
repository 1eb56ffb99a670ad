"""Tests of :mod:`helpers.dispatch`: CPU-GPU asynchrony bounds and the in-order stream.

Reference: Horace He, "Making Deep Learning Go Brrrr From First Principles",
section "Overhead" (asynchronous dispatch; scale the batch to diagnose).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from helpers import dispatch

times = st.lists(st.floats(0, 1e-2, allow_nan=False), min_size=1, max_size=60)


def test_bounds_hand_values():
    """GPU 10 + 2 + 2 us, dispatch 5 us each: max(14, 15) = 15 us, sum 29 us."""
    low, high = dispatch.sequence_bounds([10e-6, 2e-6, 2e-6], 5e-6)
    assert_allclose((low, high), (15e-6, 29e-6))


def test_stream_hand_values():
    """Issued at 5, 10, 15 us; kernel 1 runs 5-15, kernel 2 15-17, kernel 3 17-19 us."""
    assert_allclose(dispatch.stream_time([10e-6, 2e-6, 2e-6], 5e-6), 19e-6)
    assert_allclose(dispatch.stream_time(3e-6, 5e-6), 8e-6)  # one kernel: d + g


def test_stream_regimes():
    """GPU-bound: the first dispatch then every kernel; overhead-bound: every dispatch then the last kernel."""
    assert_allclose(dispatch.stream_time([4e-6] * 100, 1e-6), 1e-6 + 100 * 4e-6)
    assert_allclose(dispatch.stream_time([1e-6] * 100, 4e-6), 100 * 4e-6 + 1e-6)
    assert dispatch.overhead_bound([1e-6] * 100, 4e-6)
    assert not dispatch.overhead_bound([4e-6] * 100, 1e-6)


@given(gpu=times, cpu=st.floats(0, 1e-2, allow_nan=False))
def test_stream_lies_between_the_bounds(gpu, cpu):
    """max(sum g, sum d) <= stream time <= sum g + sum d, for any kernel times."""
    low, high = dispatch.sequence_bounds(gpu, cpu)
    t = dispatch.stream_time(gpu, cpu)
    assert low * (1 - 1e-9) <= t <= high * (1 + 1e-9) + 1e-300


def test_batch_scaling():
    """Time that doubles with a doubled batch scales fully (1); time that does not move, 0."""
    assert dispatch.batch_scaling(1.0, 2.0, 2) == 1.0
    assert dispatch.batch_scaling(1.0, 1.0, 8) == 0.0
    with pytest.raises(ValueError, match="ratio"):
        dispatch.batch_scaling(1.0, 1.0, 1)


def test_bad_input():
    """Mismatched lengths, negative or empty times are refused with the parameter named."""
    with pytest.raises(ValueError, match="equal length"):
        dispatch.stream_time([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="gpu_seconds"):
        dispatch.sequence_bounds([-1.0], 1.0)
    with pytest.raises(ValueError, match="non-empty"):
        dispatch.sequence_bounds([], 1.0)


def test_cuda_graph_stream_keeps_a_gpu_floor_per_kernel():
    """G3: 40 layers at batch 1, each ~0.6 us of roofline GPU time, in a CUDA graph (no dispatch):
    without a floor 40 * 0.625 = 25 us; with the NVBench-measured 1.84 us per kernel,
    40 * (0.625 + 1.84) = 98.6 us. The floor applies to every kernel, however the CPU side is hidden.
    """
    g = [0.625e-6] * 40
    assert dispatch.stream_time(g, 0.0) == pytest.approx(25e-6)
    floor = dispatch.kernel_floor("H100")
    assert floor == 1.84e-6
    assert dispatch.stream_time(g, 0.0, kernel_floor_s=floor) == pytest.approx(98.6e-6)
    # with dispatch 5 us per kernel the CPU still bounds it: 40 * 5 + last kernel
    assert dispatch.stream_time(g, 5e-6, kernel_floor_s=floor) == pytest.approx(
        200e-6 + 0.625e-6 + floor
    )


def test_kernel_floor_for_every_catalog_gpu():
    from helpers import hardware

    for acc in hardware.accelerators():
        assert dispatch.kernel_floor(acc) > 0
    with pytest.raises(ValueError, match="kernel_floor_s"):
        dispatch.stream_time([1e-6], 0.0, kernel_floor_s=-1.0)


def test_generation_is_read_from_the_catalog_entry_not_parsed_from_its_name():
    """C4-8: each catalog entry names its generation; dispatch reads that field, so a name that
    starts like another family's (a "B" that is not Blackwell) cannot mislead it."""
    from dataclasses import replace

    from helpers import hardware

    expected = {
        "T4": "Turing",
        "V100 SXM2": "Volta",
        "A100 SXM4 80GB": "Ampere",
        "A10G": "Ampere",
        "L4": "Ada",
        "RTX 4090": "Ada",
        "H20": "Hopper",
        "H200 SXM": "Hopper",
        "B200 SXM": "Blackwell",
        "GB200 (per GPU)": "Blackwell",
        "MI300X": "CDNA 3",
    }
    for name, gen in expected.items():
        assert dispatch.generation(name) == gen
    for acc in hardware.accelerators():
        assert acc.generation, acc.name
    misleading = replace(hardware.get_accelerator("H100"), name="Big GPU 9")
    assert dispatch.generation(misleading) == "Hopper"
    assert not hasattr(dispatch, "_GENERATION")


def test_a_new_generation_gets_the_measured_reference_floor_and_a_device_without_one_fails():
    """A GPU of a generation the floor table does not list prices with the measured (Ampere) figure
    instead of raising KeyError; a hand-built device with no generation raises ValueError naming acc."""
    from dataclasses import replace

    from helpers import hardware

    future = replace(hardware.get_accelerator("B200"), name="R100", generation="Rubin")
    assert "Rubin" not in dispatch.KERNEL_FLOOR_S
    assert (
        dispatch.kernel_floor(future)
        == dispatch.KERNEL_FLOOR_S[dispatch.KERNEL_FLOOR_REFERENCE]
    )
    bare = replace(hardware.get_accelerator("B200"), name="hand-built", generation="")
    with pytest.raises(ValueError, match="acc"):
        dispatch.kernel_floor(bare)
    with pytest.raises(TypeError, match="generation"):
        replace(bare, generation=5)
