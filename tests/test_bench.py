"""Tests of :mod:`helpers.bench` on the CPU: timing and measured rates are sane.

Bounds are physical sanity limits, not performance claims: no CPU copies
memory at 10 TB/s or multiplies fp32 matrices at 1 PFLOP/s (an H100's HBM3 is
3.35 TB/s; its dense fp32 is 67 TFLOP/s, NVIDIA H100 datasheet). Sizes are
small so each test takes well under 5 s on 2 cores.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from helpers import bench  # noqa: E402
from helpers.hardware import Accelerator  # noqa: E402
from helpers.roofline import ridge_point, roofline_time  # noqa: E402

CPU = torch.device("cpu")


@pytest.mark.slow
def test_time_fn_positive_and_grows_with_work():
    """time_fn's median is > 0 and a 100x larger reduction takes longer than a small one."""
    small = torch.ones(10_000)
    large = torch.ones(1_000_000)
    t_small = bench.time_fn(lambda: small.sum(), warmup=2, repeats=15, dev=CPU)
    t_large = bench.time_fn(lambda: large.sum(), warmup=2, repeats=15, dev=CPU)
    assert t_small.median > 0 and t_small.spread >= 0
    assert t_large.median > t_small.median
    assert t_small.repeats == 15 and t_small.device.startswith("CPU")


def test_time_fn_spread_needs_four_repeats():
    """With fewer than 4 repeats the interquartile spread is reported as 0."""
    assert bench.time_fn(lambda: None, warmup=0, repeats=3, dev=CPU).spread == 0.0


@pytest.mark.slow
def test_measure_memory_bandwidth_sane():
    """A 32 MiB copy gives a positive bandwidth below 1e13 B/s, and counts 2 bytes moved per byte copied."""
    m = bench.measure_memory_bandwidth(32 << 20, repeats=3, dev=CPU)
    assert 0 < m.value < 1e13
    assert m.unit == "bytes/s" and m.work == 2 * (32 << 20)
    assert m.device == bench.device_name(CPU)


@pytest.mark.slow
def test_measure_matmul_flops_fp32_sane():
    """A 256x256 fp32 matmul (2 * 256^3 FLOP per call) runs at a positive rate below 1e15 FLOP/s."""
    m = bench.measure_matmul_flops("fp32", n=256, repeats=3, dev=CPU)
    assert 0 < m.value < 1e15
    assert m.unit == "FLOP/s" and m.work == 2 * 256**3


@pytest.mark.slow
def test_measured_accelerator_quick():
    """measured_accelerator(quick=True) builds an Accelerator every roofline function accepts."""
    acc = bench.measured_accelerator(dtypes=("fp32",), dev=CPU, quick=True)
    assert isinstance(acc, Accelerator)
    assert acc.name.startswith("measured: CPU")
    assert ridge_point(acc, dtype="fp32") > 0
    assert roofline_time(1e9, 1e6, acc, dtype="fp32") >= 1e6 / acc.memory_bandwidth
    assert acc.memory_capacity > 1e8  # the host has at least 100 MB of RAM


@pytest.mark.slow
def test_device_description():
    """device_name and describe_device name the CPU when no GPU is present; supported dtypes include fp32."""
    assert bench.device_name(CPU).startswith("CPU: ")
    text = bench.describe_device(CPU)
    assert "device: CPU" in text and "torch" in text and "python" in text
    assert "fp32" in bench.supported_dtypes(CPU)
    assert bench.measure_overhead(repeats=5, dev=CPU).median > 0


def test_torch_dtype():
    """Book dtype names map to torch dtypes; int8/fp8 have no matmul here -> KeyError naming dtype."""
    assert bench.torch_dtype("fp16") is torch.float16
    assert bench.torch_dtype("BF16") is torch.bfloat16
    assert bench.torch_dtype("tf32") is torch.float32
    with pytest.raises(KeyError, match="dtype"):
        bench.torch_dtype("int8")
    with pytest.raises(KeyError, match="dtype"):
        bench.torch_dtype("fp64")


def test_bad_input():
    """Non-callables, zero repeats, zero sizes raise naming the parameter."""
    with pytest.raises(TypeError, match="fn"):
        bench.time_fn("not callable", dev=CPU)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="repeats"):
        bench.time_fn(lambda: None, repeats=0, dev=CPU)
    with pytest.raises(ValueError, match="warmup"):
        bench.time_fn(lambda: None, warmup=-1, dev=CPU)
    with pytest.raises(ValueError, match="nbytes"):
        bench.measure_memory_bandwidth(0, dev=CPU)
    with pytest.raises(ValueError, match="nbytes"):
        bench.measure_memory_bandwidth(2, dev=CPU)
    with pytest.raises(ValueError, match="n"):
        bench.measure_matmul_flops("fp32", n=0, dev=CPU)


def test_time_fn_on_one_thread_does_not_count_time_the_thread_is_not_running():
    """With torch on one thread, a call that sleeps 50 ms costs no CPU time: time_fn reports well under it."""
    import time

    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        t = bench.time_fn(lambda: time.sleep(0.05), warmup=0, repeats=3, dev=CPU)
    finally:
        torch.set_num_threads(before)
    assert t.median < 0.01
