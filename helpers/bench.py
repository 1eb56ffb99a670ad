"""Measure this machine: timings, memory bandwidth, matmul FLOP/s, overhead.

Torch is imported lazily (``import helpers`` must not need it). On a CUDA
device, times come from CUDA events around each call; on the CPU from the
calling thread's CPU time when torch runs on one thread (as the labs set it),
else from ``time.perf_counter``. Every result carries the device it was
measured on.
"""

from __future__ import annotations

import math
import platform
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import _args
from ._measure import cpu_name, summarize_samples
from .hardware import Accelerator, dtype_bytes

_TORCH_DTYPES = {
    "fp32": "float32",
    "tf32": "float32",
    "fp16": "float16",
    "bf16": "bfloat16",
}


def _torch() -> Any:
    import torch

    return torch


def device() -> Any:
    """The device labs run on: the first CUDA GPU when present, else the CPU (a ``torch.device``)."""
    torch = _torch()
    return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")


def device_name(dev: Any = None) -> str:
    """A human-readable name of ``dev`` (default :func:`device`): GPU model or CPU model with core count."""
    torch = _torch()
    dev = device() if dev is None else torch.device(dev)
    if dev.type == "cuda":
        return torch.cuda.get_device_name(dev)
    threads = torch.get_num_threads()
    return f"CPU: {cpu_name()} ({threads} thread{'' if threads == 1 else 's'})"


def describe_device(dev: Any = None) -> str:
    """A multi-line description: device, memory, torch and CUDA versions (printed first by every lab)."""
    torch = _torch()
    dev = device() if dev is None else torch.device(dev)
    lines = [f"device: {device_name(dev)}"]
    if dev.type == "cuda":
        props = torch.cuda.get_device_properties(dev)
        lines.append(
            f"memory: {props.total_memory / 1e9:.1f} GB, {props.multi_processor_count} SMs"
        )
        lines.append(f"torch {torch.__version__}, CUDA {torch.version.cuda}")
    else:
        lines.append(f"torch {torch.__version__}, no CUDA device (running on the CPU)")
    lines.append(
        f"python {platform.python_version()} on {platform.system()} {platform.machine()}"
    )
    return "\n".join(lines)


@dataclass(frozen=True)
class Timing:
    """Seconds per call of a timed function.

    Attributes
    ----------
    median : float
        Median seconds per call over the repeats.
    spread : float
        Interquartile range of the repeats in seconds (0 with fewer than 4 repeats).
    repeats : int
        Number of timed calls.
    device : str
        Name of the device the calls ran on.
    calls : int
        Calls inside each timed sample (1 for :func:`time_fn`; more for
        :func:`time_amortized`, whose median and spread are per call).
    method : str
        How a sample was timed: ``"events, one call"``, ``"events, back-to-back
        calls"``, ``"events, CUDA graph replay"`` or ``"CPU clock"``.
    """

    median: float
    spread: float
    repeats: int
    device: str
    calls: int = 1
    method: str = "events, one call"


def _synchronize(dev: Any) -> None:
    torch = _torch()
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def time_fn(
    fn: Callable[[], Any], *, warmup: int = 3, repeats: int = 10, dev: Any = None
) -> Timing:
    """Time ``fn()``: ``warmup`` untimed calls, then ``repeats`` timed ones.

    On CUDA each call is bracketed by its own CUDA events, so each sample
    holds that call's launch: right for the fixed cost of a call (the
    overhead study, :func:`measure_overhead`), wrong for a call shorter than
    its dispatch (use :func:`time_amortized`). On the CPU, with torch on one
    thread, by the calling thread's CPU time (``time.thread_time``): the work
    runs on this thread, and on a CPU shared with other jobs the wall clock
    would also count the time the OS gives them, which made a lab's
    batch-1-against-batch-2 check fail under load. With more threads, the
    work runs on others too, so the wall clock (``perf_counter``) is used.
    Returns the median and interquartile range in seconds.
    """
    if not callable(fn):
        raise TypeError("fn must be callable")
    warmup = _args.non_negative_int("warmup", warmup)
    repeats = _args.positive_int("repeats", repeats)
    torch = _torch()
    dev = device() if dev is None else torch.device(dev)
    for _ in range(warmup):
        fn()
    _synchronize(dev)
    samples: list[float] = []
    if dev.type == "cuda":
        for _ in range(repeats):
            start, end = (
                torch.cuda.Event(enable_timing=True),
                torch.cuda.Event(enable_timing=True),
            )
            start.record()
            fn()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) / 1e3)
    else:
        clock = time.thread_time if torch.get_num_threads() == 1 else time.perf_counter
        for _ in range(repeats):
            t0 = clock()
            fn()
            samples.append(clock() - t0)
    median, spread = summarize_samples(samples)
    method = "events, one call" if dev.type == "cuda" else "CPU clock"
    return Timing(median, spread, repeats, device_name(dev), 1, method)


MIN_WINDOW_S = 1e-3
"""Shortest GPU time between one pair of events in :func:`time_amortized` (1 ms)."""


def calls_for_window(
    seconds_per_call: float, *, window: float = MIN_WINDOW_S, max_calls: int = 4096
) -> int:
    """Calls ``k`` that fill a timing window: ``ceil(window / seconds_per_call)``, between 1 and ``max_calls``.

    CUDA events resolve about 0.5 µs, and a window of one short call holds its
    launch gap too; ``k`` calls between one pair of events make both a ``1/k``
    share. Example: a 20 µs convolution needs ``k = 50`` for a 1 ms window.

    >>> calls_for_window(20e-6), calls_for_window(5e-3), calls_for_window(1e-9)
    (50, 1, 4096)
    """
    seconds_per_call = _args.non_negative("seconds_per_call", seconds_per_call)
    window = _args.positive("window", window)
    max_calls = _args.positive_int("max_calls", max_calls)
    if seconds_per_call == 0:
        return max_calls
    return max(1, min(max_calls, math.ceil(window / seconds_per_call - 1e-9)))


def _cuda_window(torch: Any, run: Callable[[], Any]) -> float:
    """Seconds between two CUDA events around ``run()`` (which launches the work)."""
    start, end = (
        torch.cuda.Event(enable_timing=True),
        torch.cuda.Event(enable_timing=True),
    )
    start.record()
    run()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1e3


def _back_to_back(fn: Callable[[], Any], calls: int) -> Callable[[], None]:
    def run() -> None:
        for _ in range(calls):
            fn()

    return run


def cuda_graph(fn: Callable[[], Any], *, calls: int = 1) -> Any:
    """A ``torch.cuda.CUDAGraph`` of ``calls`` calls of ``fn``, warmed up on a side stream; ``.replay()`` runs it.

    For a lab that profiles or times a replay itself (:func:`time_amortized`
    with ``graph=True`` captures its own). Needs a CUDA device; the inputs
    ``fn`` reads are baked into the graph (change their contents, not the tensors).
    """
    if not callable(fn):
        raise TypeError("fn must be callable")
    calls = _args.positive_int("calls", calls)
    torch = _torch()
    if not torch.cuda.is_available():
        raise RuntimeError("cuda_graph needs a CUDA device")
    return _capture_graph(torch, fn, calls)


def _capture_graph(torch: Any, fn: Callable[[], Any], calls: int) -> Any:
    """A CUDA graph of ``calls`` calls of ``fn`` (warmed up on a side stream, as torch's docs ask)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    saved = torch.cuda.current_stream()
    try:
        with torch.cuda.graph(graph):
            for _ in range(calls):
                fn()
    except BaseException:
        # ``graph.__exit__`` ends the capture before it restores the stream: if
        # that raises, later work would run on the capture's side stream.
        torch.cuda.set_stream(saved)
        raise
    return graph


def _replay_filling(
    torch: Any,
    fn: Callable[[], Any],
    calls: int,
    measure: Callable[[Callable[[], Any]], float],
    *,
    window: float,
    max_calls: int,
) -> tuple[Callable[[], Any], int]:
    """A graph replay of ``k`` calls that fills ``window``, and that ``k`` (the calls the replay makes).

    A replay is faster than eager calls, so up to three captures re-estimate
    ``k``; the last one captured is returned with the count it holds.
    """
    for attempt in range(3):
        captured = _capture_graph(torch, fn, calls)
        elapsed = measure(captured.replay)
        if elapsed >= window or calls >= max_calls or attempt == 2:
            return captured.replay, calls
        calls = max(
            calls + 1,
            calls_for_window(elapsed / calls, window=window, max_calls=max_calls),
        )
    raise AssertionError("unreachable")  # pragma: no cover


def time_amortized(
    fn: Callable[[], Any],
    *,
    window: float = MIN_WINDOW_S,
    warmup: int = 3,
    repeats: int = 10,
    dev: Any = None,
    graph: bool = False,
    max_calls: int = 4096,
) -> Timing:
    """Seconds per call of ``fn()`` from ``k`` calls between one pair of events, the window at least ``window``.

    :func:`time_fn` brackets each call with its own events, so a call shorter
    than its CPU dispatch measures the dispatch (a 20 µs convolution, a decode
    step of hundreds of small kernels). Here ``k`` (:func:`calls_for_window`,
    re-estimated until ``k`` calls fill the window) back-to-back calls run
    between one pair of events, and the sample is the window over ``k``: the
    GPU stays busy if it is slower than the CPU's dispatch, and one launch gap
    is shared by ``k`` calls. With ``graph=True`` the ``k`` calls are captured
    once in a CUDA graph and replayed, which removes the CPU dispatch
    altogether (the GPU's own per-kernel launch cost stays); if capture fails
    (an operation that cannot be captured), a warning says so and the calls
    run back to back. On a CPU there is no asynchronous launch to amortize:
    ``k`` calls are timed by the clock of :func:`time_fn`, per call.
    Returns per-call median and interquartile range, with ``calls = k``.
    """
    if not callable(fn):
        raise TypeError("fn must be callable")
    warmup = _args.non_negative_int("warmup", warmup)
    repeats = _args.positive_int("repeats", repeats)
    window = _args.positive("window", window)
    max_calls = _args.positive_int("max_calls", max_calls)
    torch = _torch()
    dev = device() if dev is None else torch.device(dev)
    for _ in range(warmup):
        fn()
    _synchronize(dev)
    if dev.type != "cuda":
        clock = time.thread_time if torch.get_num_threads() == 1 else time.perf_counter

        def measure(run: Callable[[], Any]) -> float:
            t0 = clock()
            run()
            return clock() - t0

        method = "CPU clock"
    else:

        def measure(run: Callable[[], Any]) -> float:
            return _cuda_window(torch, run)

        method = "events, back-to-back calls"
    calls = 1
    for _ in range(4):  # k calls at the last estimate; stop once they fill the window
        elapsed = measure(_back_to_back(fn, calls))
        if elapsed >= window or calls >= max_calls:
            break
        calls = max(
            calls + 1,
            calls_for_window(elapsed / calls, window=window, max_calls=max_calls),
        )
    run = _back_to_back(fn, calls)
    if graph and dev.type == "cuda":
        # ``run`` and ``calls`` change together: a sample is always divided by
        # the number of calls the timed ``run`` makes (L4-3).
        try:
            replay, captured_calls = _replay_filling(
                torch, fn, calls, measure, window=window, max_calls=max_calls
            )
            run, calls, method = replay, captured_calls, "events, CUDA graph replay"
        except Exception as exc:  # noqa: BLE001 - any capture failure falls back
            torch.cuda.synchronize(dev)
            warnings.warn(
                f"CUDA graph capture failed ({type(exc).__name__}: {exc}); "
                f"timing {calls} back-to-back calls instead",
                RuntimeWarning,
                stacklevel=2,
            )
    samples = [measure(run) / calls for _ in range(repeats)]
    median, spread = summarize_samples(samples)
    return Timing(median, spread, repeats, device_name(dev), calls, method)


@dataclass(frozen=True)
class Measurement:
    """A measured rate and how it was obtained.

    ``value`` is in the unit named by ``unit`` (bytes/s or FLOP/s); ``timing``
    is the underlying :class:`Timing`; ``work`` the bytes or FLOP per call.
    """

    value: float
    unit: str
    work: float
    timing: Timing

    @property
    def device(self) -> str:
        """Where it was measured."""
        return self.timing.device


def torch_dtype(dtype: str) -> Any:
    """The ``torch.dtype`` for one of the book's dtype names (fp32, tf32, fp16, bf16)."""
    dtype_bytes(dtype)
    key = dtype.strip().lower()
    if key not in _TORCH_DTYPES:
        raise KeyError(
            f"dtype {dtype!r} has no torch matmul here; choose one of {sorted(_TORCH_DTYPES)}"
        )
    return getattr(_torch(), _TORCH_DTYPES[key])


def measure_memory_bandwidth(
    *, nbytes: int | None = None, repeats: int = 10, dev: Any = None
) -> Measurement:
    """Memory bandwidth in bytes/s from a large device-to-device copy.

    Copies a buffer of ``nbytes`` (default 1 GiB on a GPU, 256 MiB on a CPU)
    and counts ``2 * nbytes`` per copy: each byte is read once and written once.
    """
    torch = _torch()
    dev = device() if dev is None else torch.device(dev)
    if nbytes is None:
        nbytes = (1 << 30) if dev.type == "cuda" else (256 << 20)
    nbytes = _args.positive_int("nbytes", nbytes)
    if nbytes < 4:
        raise ValueError(f"nbytes must be >= 4 (one fp32 element), got {nbytes}")
    src = torch.empty(nbytes // 4, dtype=torch.float32, device=dev).fill_(1.0)
    dst = torch.empty_like(src)
    timing = time_fn(lambda: dst.copy_(src), warmup=2, repeats=repeats, dev=dev)
    moved = 2.0 * src.numel() * 4
    return Measurement(moved / timing.median, "bytes/s", moved, timing)


def measure_matmul_flops(
    dtype: str, *, n: int | None = None, repeats: int = 10, dev: Any = None
) -> Measurement:
    """Matmul throughput in FLOP/s for square ``n x n`` matrices of ``dtype`` (``2 n**3`` FLOP per call).

    Default ``n``: 8192 on a GPU, 1024 on a CPU. ``tf32`` enables TF32 tensor
    cores for the call (``torch.backends.cuda.matmul.allow_tf32``).
    """
    torch = _torch()
    dev = device() if dev is None else torch.device(dev)
    if n is None:
        n = 8192 if dev.type == "cuda" else 1024
    n = _args.positive_int("n", n)
    tdtype = torch_dtype(dtype)
    a = torch.randn(n, n, device=dev).to(tdtype)
    b = torch.randn(n, n, device=dev).to(tdtype)
    previous = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = dtype.strip().lower() == "tf32"
    try:
        timing = time_fn(lambda: a @ b, warmup=3, repeats=repeats, dev=dev)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous
    flops = 2.0 * n**3
    return Measurement(flops / timing.median, "FLOP/s", flops, timing)


def measure_overhead(*, repeats: int = 50, dev: Any = None) -> Timing:
    """Time of a tiny op (adding 1 to a one-element tensor): the fixed cost of one framework call."""
    torch = _torch()
    dev = device() if dev is None else torch.device(dev)
    x = torch.zeros(1, device=dev)
    return time_fn(lambda: x.add_(1), warmup=5, repeats=repeats, dev=dev)


def supported_dtypes(dev: Any = None) -> tuple[str, ...]:
    """Dtypes worth measuring on ``dev``: fp32 everywhere; tf32/bf16 on Ampere+, fp16 on any GPU; bf16 on CPU."""
    torch = _torch()
    dev = device() if dev is None else torch.device(dev)
    if dev.type != "cuda":
        return ("fp32", "bf16")
    major, _ = torch.cuda.get_device_capability(dev)
    return ("fp32", "tf32", "fp16", "bf16") if major >= 8 else ("fp32", "fp16")


def measured_accelerator(
    *, dtypes: tuple[str, ...] | None = None, dev: Any = None, quick: bool = False
) -> Accelerator:
    """An :class:`~helpers.hardware.Accelerator` built from measurements of this machine.

    Peak FLOP/s per dtype from :func:`measure_matmul_flops`, bandwidth from
    :func:`measure_memory_bandwidth`, capacity from the device (or the host's
    RAM on a CPU). ``quick=True`` uses smaller sizes (for tests and CI).
    Every roofline function accepts the result in place of a catalog name.
    """
    torch = _torch()
    dev = device() if dev is None else torch.device(dev)
    dtypes = supported_dtypes(dev) if dtypes is None else dtypes
    n = 512 if quick else None
    nbytes = (32 << 20) if quick else None
    repeats = 3 if quick else 10
    peaks = {
        d: measure_matmul_flops(d, n=n, repeats=repeats, dev=dev).value for d in dtypes
    }
    bandwidth = measure_memory_bandwidth(nbytes=nbytes, repeats=repeats, dev=dev).value
    return accelerator_from_measurements(peaks, bandwidth, dev=dev)


def accelerator_from_measurements(
    peak_flops: dict[str, float],
    memory_bandwidth: float,
    *,
    dev: Any = None,
    source: str = "measured by helpers.bench on this machine",
) -> Accelerator:
    """The :class:`~helpers.hardware.Accelerator` of measured ceilings on ``dev``.

    ``peak_flops`` maps dtype to the achieved matmul FLOP/s, ``memory_bandwidth`` is the achieved
    copy bandwidth in bytes/s; the capacity, in bytes, is the device's (the host's RAM on a CPU).
    A lab that swept sizes passes its best values here, so one set of ceilings serves the whole page.

    >>> acc = accelerator_from_measurements({"fp32": 50e9}, 10e9, dev="cpu")
    >>> acc.flops("fp32"), acc.memory_bandwidth, acc.memory_capacity > 0
    (50000000000.0, 10000000000.0, True)
    """
    if not peak_flops or any(not v > 0 for v in peak_flops.values()):
        raise ValueError(
            f"peak_flops must map dtypes to positive FLOP/s, got {peak_flops!r}"
        )
    if not memory_bandwidth > 0:
        raise ValueError(
            f"memory_bandwidth must be positive bytes/s, got {memory_bandwidth!r}"
        )
    torch = _torch()
    dev = device() if dev is None else torch.device(dev)
    if dev.type == "cuda":
        capacity = float(torch.cuda.get_device_properties(dev).total_memory)
    else:
        import os

        capacity = float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    return Accelerator(
        name=f"measured: {device_name(dev)}",
        peak_flops=dict(peak_flops),
        memory_bandwidth=memory_bandwidth,
        memory_capacity=capacity,
        source=source,
        notes="Achieved, not peak: matmul and device copy throughput measured on this machine.",
    )
