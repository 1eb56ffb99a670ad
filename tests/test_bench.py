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
    m = bench.measure_memory_bandwidth(nbytes=32 << 20, repeats=3, dev=CPU)
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
        bench.measure_memory_bandwidth(nbytes=0, dev=CPU)
    with pytest.raises(ValueError, match="nbytes"):
        bench.measure_memory_bandwidth(nbytes=2, dev=CPU)
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


# --- amortized GPU timing, checked on a simulated GPU ----------------------------------------


class _SimGPU:
    """A fake ``torch`` whose CUDA events read a simulated GPU clock.

    Each eager call costs ``dispatch`` seconds of CPU time and ``kernel`` seconds of GPU
    time; the GPU starts a call only once the CPU has dispatched it, so ``n`` back-to-back
    calls between two events take ``dispatch + n * max(kernel, dispatch)`` (the first
    dispatch is inside the window, then whichever is slower sets the pace). A replayed
    CUDA graph of ``n`` calls costs ``dispatch + n * (kernel + launch)``: one dispatch,
    and the GPU's own launch cost per kernel.
    """

    def __init__(
        self, kernel, dispatch, launch=1e-6, capture_fails=False, replay_kernels=()
    ):
        import contextlib
        import types

        self.kernel, self.dispatch, self.launch = kernel, dispatch, launch
        # capture_fails: True (every capture raises) or n (captures from the n-th on raise);
        # replay_kernels: per-call GPU seconds of the 1st, 2nd, ... captured graph's calls.
        self.capture_fails, self.replay_kernels = capture_fails, tuple(replay_kernels)
        self.log, self.capturing, self.captures = [], None, 0
        sim = self

        class Event:
            def __init__(self, enable_timing=False):
                self.at = None

            def record(self):
                self.at = len(sim.log)

            def synchronize(self):
                pass

            def elapsed_time(self, end):  # milliseconds, as torch's
                return 1e3 * sim.window(sim.log[self.at : end.at])

        class CUDAGraph:
            def __init__(self):
                self.calls = 0
                sim.captures += 1
                index = min(sim.captures, len(sim.replay_kernels)) - 1
                self.kernel = sim.replay_kernels[index] if index >= 0 else sim.kernel

            def replay(self):
                sim.log.append(("graph", self.calls, self.kernel))

        @contextlib.contextmanager
        def graph(g):
            sim.capturing = g
            try:
                yield
                fails = sim.capture_fails
                if fails is True or (fails and sim.captures >= fails):
                    raise RuntimeError(
                        "operation not permitted when stream is capturing"
                    )
            finally:
                sim.capturing = None

        class Stream:
            def wait_stream(self, other):
                pass

        cuda = types.SimpleNamespace(
            Event=Event,
            CUDAGraph=CUDAGraph,
            graph=graph,
            Stream=Stream,
            stream=lambda s: contextlib.nullcontext(),
            current_stream=lambda: Stream(),
            set_stream=lambda stream: None,
            synchronize=lambda dev=None: None,
            get_device_name=lambda dev=None: "Tesla T4",
        )
        self.torch = types.SimpleNamespace(
            cuda=cuda,
            device=lambda d: types.SimpleNamespace(type="cuda"),
            get_num_threads=lambda: 8,
        )

    def call(self):
        if self.capturing is not None:
            self.capturing.calls += 1
        else:
            self.log.append(("eager", 1))

    def window(self, entries):
        eager = sum(entry[1] for entry in entries if entry[0] == "eager")
        t = 0.0
        if eager:
            t += self.dispatch + eager * max(self.kernel, self.dispatch)
        for entry in entries:
            if entry[0] == "graph":
                t += self.dispatch + entry[1] * (entry[2] + self.launch)
        return t


def test_calls_for_window_fills_a_millisecond():
    """k = ceil(1 ms / t): a T4 layer of 20 µs needs 50 calls, a 2.5 µs H200 kernel 400."""
    assert bench.calls_for_window(20e-6) == 50
    assert bench.calls_for_window(2.5e-6) == 400
    assert bench.calls_for_window(1.2e-3) == 1
    assert bench.calls_for_window(1e-9, max_calls=100) == 100
    with pytest.raises(ValueError, match="window"):
        bench.calls_for_window(1e-6, window=0)


def test_amortized_timer_removes_the_launch_gap_a_single_call_counts(monkeypatch):
    """T4-like layer: 20 µs of GPU work, 8 µs of dispatch.

    One call between its own events measures 8 + 20 = 28 µs (40 % high). k back-to-back
    calls in a window of at least 1 ms measure (8 + 20 k) / k: with k = 50, 20.16 µs.
    """
    sim = _SimGPU(kernel=20e-6, dispatch=8e-6)
    monkeypatch.setattr(bench, "_torch", lambda: sim.torch)
    single = bench.time_fn(sim.call, warmup=1, repeats=5, dev="cuda")
    assert single.median == pytest.approx(28e-6)
    amortized = bench.time_amortized(sim.call, warmup=1, repeats=5, dev="cuda")
    assert amortized.calls * amortized.median >= 1e-3  # the window
    assert amortized.median == pytest.approx(20e-6, rel=0.01)
    assert amortized.method == "events, back-to-back calls"
    assert amortized.device == "Tesla T4"


def test_graph_replay_removes_dispatch_where_the_cpu_is_slower(monkeypatch):
    """H200-like small kernel: 2 µs of GPU work, 8 µs of dispatch, 1 µs GPU launch cost.

    Back to back the CPU sets the pace: (8 + 8 k) / k ≈ 8 µs, four times the work. A CUDA
    graph replay of k calls costs (8 + 3 k) / k ≈ 3 µs: the work plus the GPU's launch.
    """
    sim = _SimGPU(kernel=2e-6, dispatch=8e-6, launch=1e-6)
    monkeypatch.setattr(bench, "_torch", lambda: sim.torch)
    eager = bench.time_amortized(sim.call, warmup=1, repeats=3, dev="cuda")
    assert eager.median == pytest.approx(8e-6, rel=0.02)
    graphed = bench.time_amortized(
        sim.call, warmup=1, repeats=3, dev="cuda", graph=True
    )
    assert graphed.method == "events, CUDA graph replay"
    assert graphed.median == pytest.approx(3e-6, rel=0.03)
    assert graphed.calls * graphed.median >= 1e-3


def test_a_failed_graph_capture_warns_and_times_back_to_back(monkeypatch):
    sim = _SimGPU(kernel=20e-6, dispatch=8e-6, capture_fails=True)
    monkeypatch.setattr(bench, "_torch", lambda: sim.torch)
    with pytest.warns(RuntimeWarning, match="CUDA graph capture failed"):
        t = bench.time_amortized(sim.call, warmup=0, repeats=3, dev="cuda", graph=True)
    assert t.method == "events, back-to-back calls"
    assert t.median == pytest.approx(20e-6, rel=0.01)


def test_graph_timing_divides_by_the_calls_the_replayed_graph_holds(monkeypatch):
    """L4-3: each capture replays faster, so the third falls short of the window.

    Eager: 20 µs calls, k = 50. Replays cost 10, 5 then 2.5 µs a call (launch 0), so the
    captures hold 50, 99 and 197 calls; the third replay's window, 8 + 197 x 2.5 µs, is
    divided by its own 197 calls (2.54 µs), not by a new estimate of about 394 (1.27 µs).
    """
    sim = _SimGPU(
        kernel=20e-6, dispatch=8e-6, launch=0.0, replay_kernels=(10e-6, 5e-6, 2.5e-6)
    )
    monkeypatch.setattr(bench, "_torch", lambda: sim.torch)
    t = bench.time_amortized(sim.call, warmup=0, repeats=3, dev="cuda", graph=True)
    assert t.method == "events, CUDA graph replay"
    assert sim.captures == 3 and t.calls == 197
    assert t.median == pytest.approx((8e-6 + 197 * 2.5e-6) / 197, rel=1e-6)


def test_a_failed_recapture_falls_back_with_the_eager_call_count(monkeypatch):
    """L4-3: the second capture raises; the fallback times the eager estimate's 50 calls
    and divides by 50 (the old code divided 50 calls by the recapture's 99: 2x too fast)."""
    sim = _SimGPU(
        kernel=20e-6,
        dispatch=8e-6,
        launch=0.0,
        capture_fails=2,
        replay_kernels=(10e-6,),
    )
    monkeypatch.setattr(bench, "_torch", lambda: sim.torch)
    with pytest.warns(RuntimeWarning, match="timing 50 back-to-back calls"):
        t = bench.time_amortized(sim.call, warmup=0, repeats=3, dev="cuda", graph=True)
    assert t.method == "events, back-to-back calls" and t.calls == 50
    assert t.median == pytest.approx((8e-6 + 50 * 20e-6) / 50, rel=1e-6)


def test_amortized_timer_on_the_cpu_is_per_call():
    """On the CPU k calls are timed by the clock and divided by k; a 0.2 ms call needs k = 5."""
    x = torch.ones(200_000)
    t = bench.time_amortized(lambda: x.sum(), warmup=1, repeats=3, dev=CPU)
    assert t.method == "CPU clock" and t.calls >= 1 and t.median > 0
    with pytest.raises(ValueError, match="repeats"):
        bench.time_amortized(lambda: None, repeats=0, dev=CPU)


def test_accelerator_from_measurements_keeps_the_given_ceilings_and_rejects_bad_ones():
    """The lab's sweep bests become the Accelerator's ceilings unchanged; a zero or missing
    ceiling is a ValueError naming the parameter."""
    acc = bench.accelerator_from_measurements(
        {"fp32": 4e10, "bf16": 1e9}, 2e10, dev=CPU
    )
    assert acc.flops("fp32") == 4e10 and acc.flops("bf16") == 1e9
    assert acc.memory_bandwidth == 2e10 and acc.memory_capacity > 1e8
    assert acc.name.startswith("measured: ")
    with pytest.raises(ValueError, match="peak_flops"):
        bench.accelerator_from_measurements({}, 2e10, dev=CPU)
    with pytest.raises(ValueError, match="peak_flops"):
        bench.accelerator_from_measurements({"fp32": 0.0}, 2e10, dev=CPU)
    with pytest.raises(ValueError, match="memory_bandwidth"):
        bench.accelerator_from_measurements({"fp32": 4e10}, 0.0, dev=CPU)


def test_cuda_graph_needs_a_gpu_and_a_callable():
    with pytest.raises(TypeError, match="fn"):
        bench.cuda_graph(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="calls"):
        bench.cuda_graph(lambda: None, calls=0)
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="CUDA"):
            bench.cuda_graph(lambda: None)
