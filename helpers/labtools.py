"""Plumbing for the labs: datasheet look-up of the running GPU, timed sweeps, predicted-vs-measured tables.

The labs predict a time with the book's models (:mod:`helpers.roofline`,
:mod:`helpers.batching`, :mod:`helpers.convnets`), measure it with
:mod:`helpers.bench`, and compare. This module holds what they share:

* :func:`rate_bounds` -- FLOP/s and bytes/s no honest measurement on a device can exceed;
* :func:`measured_ceilings` -- the best of a few :func:`helpers.bench.measured_accelerator` calls;
* :func:`timed_sweep`, :func:`timed_sweep_past_knee` -- time one callable per sweep value with a
  progress bar, stopping cleanly when a GPU runs out of memory (and, for batch sweeps, extending
  the sweep until its knee lies inside);
* :func:`measure_sweep` -- any :mod:`helpers.bench` measurement per sweep value, stopping cleanly
  at the first value that runs out of GPU memory (Lab 1's matmul and copy sweeps);
* :func:`largest_that_fits` -- the first size in a list that does not run out of memory;
* :class:`Comparison` -- predicted against measured with relative errors, as a Markdown table;
* :func:`batch_sweep_sizes`, :func:`make_linear`, :func:`make_mlp`, :func:`batch_caller` -- Lab 2's
  layers and sizes, shared with ``benchmarks/run.py``.

Torch is imported lazily, as in :mod:`helpers.bench`. Units: seconds, FLOP/s, bytes/s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from . import _args
from ._lab_checks import (
    count_kernels,
    extra_weight_passes,
    floor_growth_ratio,
    required_growth,
)
from ._lab_notebook import enable_colab_widgets, provenance_note
from .hardware import Accelerator, from_device_name

# The public names, the re-exported ones among them, in the order the API reference shows them.
__all__ = [
    "CPU_FLOP_PER_CYCLE",
    "relative_error",
    "Comparison",
    "TimedSweep",
    "timed_sweep",
    "MeasuredSweep",
    "measure_sweep",
    "largest_that_fits",
    "BatchSweepSizes",
    "batch_sweep_sizes",
    "make_linear",
    "make_mlp",
    "batch_caller",
    "measured_ceilings",
    "timed_sweep_past_knee",
    "rate_bounds",
    "SweepPlan",
    "plan_sweep",
    "enable_colab_widgets",
    "provenance_note",
    "count_kernels",
    "floor_growth_ratio",
    "required_growth",
    "extra_weight_passes",
]


def relative_error(
    predicted: float | Sequence[float] | np.ndarray,
    measured: float | Sequence[float] | np.ndarray,
) -> np.ndarray:
    """Signed relative error of a prediction: ``(predicted - measured) / measured``.

    Positive: the model predicted more than was measured (e.g. a slower time).
    Both inputs must be positive and have the same shape.
    """
    p = _args.positive_array("predicted", predicted)
    m = _args.positive_array("measured", measured)
    if p.shape != m.shape:
        raise ValueError(
            f"predicted and measured must have the same shape, got {p.shape} and {m.shape}"
        )
    return (p - m) / m


@dataclass(frozen=True)
class Comparison:
    """Predicted against measured values of one quantity, row by row.

    Attributes
    ----------
    labels : tuple of str
        Row labels (e.g. ``"batch 64"``).
    predicted, measured : numpy.ndarray
        Values in ``unit`` (both > 0).
    unit : str
        Unit of the values, e.g. ``"s"`` or ``"FLOP/s"``.
    device : str
        Where ``measured`` was measured.
    """

    labels: tuple[str, ...]
    predicted: np.ndarray
    measured: np.ndarray
    unit: str
    device: str

    def __post_init__(self) -> None:
        labels = tuple(str(label) for label in self.labels)
        errors = relative_error(self.predicted, self.measured)
        if errors.ndim != 1 or len(labels) != errors.size:
            raise ValueError(
                f"labels must have one entry per value ({errors.size}), got {len(labels)}"
            )
        object.__setattr__(self, "labels", labels)
        object.__setattr__(self, "predicted", np.asarray(self.predicted, dtype=float))
        object.__setattr__(self, "measured", np.asarray(self.measured, dtype=float))

    @property
    def relative_error(self) -> np.ndarray:
        """``(predicted - measured) / measured`` per row."""
        return relative_error(self.predicted, self.measured)

    @property
    def median_abs_error(self) -> float:
        """Median of ``|relative error|`` over the rows."""
        return float(np.median(np.abs(self.relative_error)))

    @property
    def max_abs_error(self) -> float:
        """Largest ``|relative error|`` over the rows."""
        return float(np.max(np.abs(self.relative_error)))

    def summary(self, what: str) -> str:
        """One line for a lab's output and ``make gpu-labs``' closing table: the model against the run.

        >>> c = Comparison(("a", "b"), np.array([1.0, 3.0]), np.array([1.0, 2.0]), "s", "CPU: x")
        >>> c.summary("time per call")
        'Predicted against measured (time per call) on CPU: x: median |error| 25 %, max 50 % over 2 points.'
        """
        what = str(what).strip()
        if not what:
            raise ValueError("what must name the compared quantity")
        return (
            f"Predicted against measured ({what}) on {self.device}: median |error| "
            f"{100 * self.median_abs_error:.0f} %, max {100 * self.max_abs_error:.0f} % "
            f"over {len(self.labels)} points."
        )

    def markdown(
        self,
        *,
        scale: float = 1.0,
        scaled_unit: str | None = None,
        digits: int = 3,
        label: str = "case",
    ) -> str:
        """The comparison as a Markdown table: label, predicted, measured, relative error.

        Values are divided by ``scale`` and shown in ``scaled_unit`` (e.g.
        ``scale=1e-3, scaled_unit="ms"``), with ``digits`` significant digits.
        ``label`` heads the first column (every column has a header, for screen readers).
        """
        scale = _args.positive("scale", scale)
        digits = _args.positive_int("digits", digits)
        if not label.strip():
            raise ValueError("label must name the first column, got an empty string")
        unit = self.unit if scaled_unit is None else scaled_unit
        head = (
            f"| {label} | predicted ({unit}) | measured ({unit}) | relative error |\n"
            "|---|---:|---:|---:|\n"
        )
        rows = [
            f"| {label} | {p / scale:.{digits}g} | {m / scale:.{digits}g} | {e:+.0%} |"
            for label, p, m, e in zip(
                self.labels, self.predicted, self.measured, self.relative_error
            )
        ]
        foot = (
            f"\n\nMeasured on {self.device}. Median |error| {self.median_abs_error:.0%}, "
            f"max |error| {self.max_abs_error:.0%}."
        )
        return head + "\n".join(rows) + foot


def _is_out_of_memory(exc: BaseException) -> bool:
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is there whenever a lab runs
        return False
    return isinstance(exc, torch.cuda.OutOfMemoryError)


def _free_gpu_memory() -> None:
    import gc

    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


@dataclass(frozen=True)
class TimedSweep:
    """Measured seconds per call over a sweep (e.g. of batch sizes).

    Attributes
    ----------
    values : numpy.ndarray
        The sweep values that were timed (those before an out-of-memory stop).
    seconds : numpy.ndarray
        Median seconds per call at each value.
    spread : numpy.ndarray
        Interquartile range of the repeats at each value, seconds.
    device : str
        Where the calls ran.
    stopped_at : object or None
        The first value that ran out of GPU memory (the sweep stopped there), else ``None``.
    """

    values: np.ndarray
    seconds: np.ndarray
    spread: np.ndarray
    device: str
    stopped_at: Any = None


def timed_sweep(
    values: Sequence[Any],
    make_call: Callable[[Any], Callable[[], Any]],
    *,
    repeats: int = 5,
    warmup: int = 2,
    desc: str = "sweep",
    progress: bool = True,
    dev: Any = None,
    amortized: bool = False,
    graph: bool = False,
) -> TimedSweep:
    """Time ``make_call(value)()`` for each value with :func:`helpers.bench.time_fn`.

    ``amortized=True`` times with :func:`helpers.bench.time_amortized` instead
    (many calls in one window of at least 1 ms, per call; ``graph`` replays
    them from a CUDA graph): per-layer and per-step times whose single calls
    would be shorter than their dispatch.

    ``make_call(value)`` allocates what the call needs (inputs, a layer) and
    returns a zero-argument function that does the work once. The sweep is
    :func:`measure_sweep` of those timings: a ``torch.cuda.OutOfMemoryError``
    while building or timing stops it, the values timed so far are kept and
    ``stopped_at`` names the value that did not fit. A tqdm progress bar shows
    the sweep (``progress=False`` hides it).
    """
    from . import bench

    if not callable(make_call):
        raise TypeError("make_call must be callable")
    repeats = _args.positive_int("repeats", repeats)
    warmup = _args.non_negative_int("warmup", warmup)

    def timed(value: Any) -> Any:
        if amortized:
            return bench.time_amortized(
                make_call(value), warmup=warmup, repeats=repeats, dev=dev, graph=graph
            )
        return bench.time_fn(make_call(value), warmup=warmup, repeats=repeats, dev=dev)

    timings = measure_sweep(
        values,
        timed,
        desc=desc,
        progress=progress,
    )
    done = list(timings)
    return TimedSweep(
        np.asarray(done),
        np.asarray([timings[v].median for v in done]),
        np.asarray([timings[v].spread for v in done]),
        str(timings[done[-1]].device),
        timings.stopped_at,
    )


class MeasuredSweep(Mapping):
    """One measurement per sweep value (``value -> result``, in order), and where the sweep stopped.

    A read-only mapping, so ``sweep[value]``, ``sorted(sweep)``, ``sweep.items()``
    and ``max(sweep)`` work as on a dict.

    Attributes
    ----------
    stopped_at : object or None
        The first value that ran out of GPU memory (the sweep stopped there), else ``None``.
    """

    def __init__(self, results: Mapping[Any, Any], stopped_at: Any = None) -> None:
        self._results = dict(results)
        self.stopped_at = stopped_at

    def __getitem__(self, value: Any) -> Any:
        return self._results[value]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._results)

    def __len__(self) -> int:
        return len(self._results)

    def __repr__(self) -> str:
        return f"MeasuredSweep({self._results!r}, stopped_at={self.stopped_at!r})"


def measure_sweep(
    values: Sequence[Any],
    measure: Callable[[Any], Any],
    *,
    desc: str = "sweep",
    progress: bool = True,
) -> MeasuredSweep:
    """``measure(value)`` for each value in order, stopping cleanly when a GPU runs out of memory.

    ``measure`` is any measurement of one sweep value, typically a
    :mod:`helpers.bench` function (``lambda n: bench.measure_matmul_flops("fp16", n=n)``,
    ``lambda nbytes: bench.measure_memory_bandwidth(nbytes=nbytes)``), whose result
    (a :class:`helpers.bench.Measurement`) keeps the rate, the work and the
    timing. Values are meant in increasing size: a
    ``torch.cuda.OutOfMemoryError`` frees the cache and ends the sweep, the
    results so far are kept and ``stopped_at`` names the value that did not
    fit. Any other error propagates. A tqdm progress bar shows the sweep
    (``progress=False`` hides it). Where :func:`timed_sweep` times a call,
    this keeps whatever the measurement returns.

    Raises
    ------
    RuntimeError
        If already the first value runs out of GPU memory.
    """
    values = list(values)
    if not values:
        raise ValueError("values must not be empty")
    if not callable(measure):
        raise TypeError("measure must be callable")
    if not isinstance(progress, bool):
        raise TypeError(f"progress must be True or False, got {progress!r}")
    from tqdm.auto import tqdm

    results: dict[Any, Any] = {}
    stopped = None
    for value in tqdm(values, desc=desc, disable=not progress, leave=False):
        try:
            results[value] = measure(value)
        except (
            Exception
        ) as exc:  # only out-of-memory is expected; anything else propagates
            if not _is_out_of_memory(exc):
                raise
            _free_gpu_memory()
            stopped = value
            break
    if not results:
        raise RuntimeError(
            f"the first sweep value {values[0]!r} already ran out of GPU memory"
        )
    return MeasuredSweep(results, stopped)


def largest_that_fits(
    sizes: Sequence[Any], run: Callable[[Any], Any]
) -> tuple[Any, Any]:
    """Try ``run(size)`` for each size in order (largest first) until one fits in GPU memory.

    Returns ``(size, run(size))`` for the first size that does not raise
    ``torch.cuda.OutOfMemoryError``; other errors propagate. If every size
    runs out of memory the last error is raised.
    """
    sizes = list(sizes)
    if not sizes:
        raise ValueError("sizes must not be empty")
    if not callable(run):
        raise TypeError("run must be callable")
    for i, size in enumerate(sizes):
        try:
            return size, run(size)
        except Exception as exc:
            if not _is_out_of_memory(exc) or i == len(sizes) - 1:
                raise
            _free_gpu_memory()
    raise AssertionError("unreachable")  # pragma: no cover


@dataclass(frozen=True)
class BatchSweepSizes:
    """The layer widths, dtype and batch sizes of Lab 2's sweep (and of the benchmark that replays it).

    Attributes
    ----------
    dtype : str
        Compute and storage dtype: ``"fp16"`` on a GPU, ``"fp32"`` on a CPU.
    batches : tuple of int
        Batch sizes swept, powers of two from 1 to well past the predicted knee.
    d_small : int
        Width of the small square linear layer whose time is mostly overhead.
    d_linear : int
        Width of the large square linear layer (weights far larger than any cache).
    d_model, d_ff : int
        Widths of the MLP ``d_model -> d_ff -> d_model``.
    """

    dtype: str
    batches: tuple[int, ...]
    d_small: int
    d_linear: int
    d_model: int
    d_ff: int


def batch_sweep_sizes(on_gpu: bool) -> BatchSweepSizes:
    """Lab 2's sizes: a GPU sweeps fp16 layers to batch 8192; a CPU sweeps fp32 layers to batch 512.

    The large layer's and the MLP's weights (a GPU: 128 MiB and 1 GiB; a CPU:
    256 MiB and 128 MiB) are far larger than a GPU's L2 or a CPU core's private
    caches, so the memory roof measured by a large copy applies, and the
    predicted knee (tens of samples on a CPU, a few hundred on a GPU) lies well
    inside the sweep. The small layer (256 wide on a GPU, 64 on a CPU, whose
    fixed cost per call is lower) shows the overhead regime.
    """
    if not isinstance(on_gpu, bool):
        raise TypeError(f"on_gpu must be True or False, got {on_gpu!r}")
    if on_gpu:
        return BatchSweepSizes(
            "fp16", tuple(2**i for i in range(14)), 256, 8192, 8192, 32768
        )
    return BatchSweepSizes("fp32", tuple(2**i for i in range(10)), 64, 8192, 2048, 8192)


def make_linear(d_in: int, d_out: int, dtype: str, *, dev: Any = None) -> Any:
    """A ``torch.nn.Linear(d_in, d_out, bias=False)`` in ``dtype`` on ``dev``, random weights, no gradients.

    No bias, so its cost is exactly :func:`helpers.ops.linear_cost`.
    """
    import torch

    from . import bench

    d_in = _args.positive_int("d_in", d_in)
    d_out = _args.positive_int("d_out", d_out)
    dev = bench.device() if dev is None else torch.device(dev)
    layer = torch.nn.Linear(
        d_in, d_out, bias=False, device=dev, dtype=bench.torch_dtype(dtype)
    )
    return layer.requires_grad_(False)


def make_mlp(d_model: int, d_ff: int, dtype: str, *, dev: Any = None) -> Any:
    """An MLP ``Linear(d_model, d_ff) -> ReLU -> Linear(d_ff, d_model)``, no biases, no gradients.

    Three framework calls per step (two matmuls and an in-place ReLU); its
    cost is :func:`helpers.ops.mlp_cost` (which ignores the ReLU's pass over
    the hidden activations).
    """
    import torch

    up = make_linear(d_model, d_ff, dtype, dev=dev)
    down = make_linear(d_ff, d_model, dtype, dev=dev)
    return torch.nn.Sequential(up, torch.nn.ReLU(inplace=True), down).requires_grad_(
        False
    )


def batch_caller(
    module: Any, d_in: int, dtype: str, *, dev: Any = None
) -> Callable[[int], Callable[[], Any]]:
    """For :func:`timed_sweep`: ``batch -> (lambda: module(x))`` with a random ``x`` of ``batch x d_in``."""
    import torch

    from . import bench

    if not callable(module):
        raise TypeError("module must be callable")
    d_in = _args.positive_int("d_in", d_in)
    tdtype = bench.torch_dtype(dtype)
    dev = bench.device() if dev is None else torch.device(dev)

    def make(batch: int) -> Callable[[], Any]:
        x = torch.randn(
            _args.positive_int("batch", batch), d_in, device=dev, dtype=tdtype
        )
        return lambda: module(x)

    return make


def measured_ceilings(
    *,
    dtypes: Sequence[str] | None = None,
    dev: Any = None,
    tries: int = 3,
    quick: bool = False,
) -> Accelerator:
    """The best of ``tries`` calls of :func:`helpers.bench.measured_accelerator`: per-dtype peak and bandwidth maxima.

    On a shared machine a single measurement can land on a moment when other
    jobs hold the cores; the best of a few is the device's ceiling (the
    standard "best of N" of benchmarking). The result is an
    :class:`~helpers.hardware.Accelerator`, usable by every roofline function.
    """
    from . import bench

    tries = _args.positive_int("tries", tries)
    runs = [
        bench.measured_accelerator(
            dtypes=None if dtypes is None else tuple(dtypes), dev=dev, quick=quick
        )
        for _ in range(tries)
    ]
    best = runs[0]
    peaks = {d: max(r.flops(d) for r in runs) for d in best.peak_flops}
    return Accelerator(
        name=best.name,
        peak_flops=peaks,
        memory_bandwidth=max(r.memory_bandwidth for r in runs),
        memory_capacity=best.memory_capacity,
        source=best.source,
        notes=f"Best of {tries} measurements. " + best.notes,
    )


def timed_sweep_past_knee(
    values: Sequence[int],
    make_call: Callable[[Any], Callable[[], Any]],
    max_value: int,
    *,
    fraction: float = 0.9,
    **kwargs: Any,
) -> TimedSweep:
    """:func:`timed_sweep` over batch sizes, doubling the largest until the measured knee lies inside.

    The knee is :func:`helpers.batching.measured_knee` (the smallest batch
    reaching ``fraction`` of the best throughput). If it is the largest batch
    timed, throughput was still climbing: the sweep is extended by doubling
    the largest batch, up to ``max_value``, or until a GPU runs out of memory.
    ``kwargs`` go to :func:`timed_sweep`.
    """
    from .batching import measured_knee

    max_value = _args.positive_int("max_value", max_value)
    sweep = timed_sweep(values, make_call, **kwargs)
    while (
        sweep.stopped_at is None
        and measured_knee(sweep.values, sweep.seconds, fraction=fraction)
        == sweep.values[-1]
        and 2 * int(sweep.values[-1]) <= max_value
    ):
        more = timed_sweep(
            [2 * int(sweep.values[-1])], make_call, **{**kwargs, "progress": False}
        )
        if more.stopped_at is not None:
            sweep = TimedSweep(
                sweep.values, sweep.seconds, sweep.spread, sweep.device, more.stopped_at
            )
            break
        sweep = TimedSweep(
            np.append(sweep.values, more.values),
            np.append(sweep.seconds, more.seconds),
            np.append(sweep.spread, more.spread),
            sweep.device,
            None,
        )
    return sweep


CPU_FLOP_PER_CYCLE: Mapping[str, float] = MappingProxyType(
    {
        "fp64": 32.0,  # 2 AVX-512 FMA units x 8 lanes x 2 FLOP
        "fp32": 64.0,  # 2 AVX-512 FMA units x 16 lanes x 2 FLOP
        "bf16": 2048.0,  # AMX-BF16: 1,024 multiply-adds per cycle per core (Intel)
        "fp16": 2048.0,  # AMX-FP16, as bf16
        "int8": 4096.0,  # AMX-INT8: 2,048 multiply-adds per cycle per core
    }
)
"""The most FLOP (integer ops for int8) one CPU core's units can retire per cycle, by dtype:
the ceiling :func:`rate_bounds` multiplies by threads and a 6 GHz clock. A dtype not listed
gets the largest value."""


def rate_bounds(
    device_name: str, dtype: str, *, threads: int = 1, slack: float = 1.05
) -> tuple[float, float]:
    """Upper bounds ``(FLOP/s, bytes/s)`` that no honest measurement on the named device can exceed.

    A catalogued GPU (:func:`helpers.hardware.from_device_name`): ``slack`` times its
    datasheet peak for ``dtype`` (no bound on FLOP/s if the datasheet lacks the
    dtype) and ``slack`` times its bandwidth; the default 5 % allows for boost
    clocks. Any other GPU: 10 PFLOP/s and 20 TB/s, beyond every accelerator
    sold by 2026. A CPU: ``slack`` times the most one core's units retire per
    cycle in ``dtype`` (:data:`CPU_FLOP_PER_CYCLE`: two 512-bit FMA units for
    fp32 and fp64, AMX tiles for 16- and 8-bit types) per thread at 6 GHz, and
    2 TB/s. The labs assert that every measured rate lies below these bounds.
    """
    key = _args.name("device_name", device_name)
    threads = _args.positive_int("threads", threads)
    slack = _args.positive("slack", slack)
    if key.startswith("cpu"):
        per_cycle = CPU_FLOP_PER_CYCLE.get(dtype, max(CPU_FLOP_PER_CYCLE.values()))
        return slack * threads * 6e9 * per_cycle, 2e12
    datasheet = from_device_name(device_name)
    if datasheet is None:
        return 1e16, 2e13
    flops = (
        slack * datasheet.peak_flops[dtype]
        if dtype in datasheet.peak_flops
        else float("inf")
    )
    return flops, slack * datasheet.memory_bandwidth


@dataclass(frozen=True)
class SweepPlan:
    """Which sizes of a sweep fit the time budget, from a rate probed at a small size.

    Attributes
    ----------
    rate : float
        The probed rate (e.g. FLOP/s of a small matmul) the prediction uses.
    kept : tuple
        Sizes to measure, in increasing order.
    skipped : tuple
        Larger sizes left out because the budget would not cover them.
    predicted_s : dict
        Predicted seconds to measure each size (kept and skipped).
    budget_s : float
        Seconds the sweep was allowed.
    calls : int
        Calls per size the prediction counts (warm-up plus timed repeats).
    """

    rate: float
    kept: tuple
    skipped: tuple
    predicted_s: Mapping[Any, float]
    budget_s: float
    calls: int

    def describe(self, what: str, *, unit: str = "FLOP/s") -> str:
        """One sentence for the lab's output: the probed rate, what is swept, what is skipped and why."""
        from .formatting import format_si

        sentence = f"{what}: probed at {format_si(self.rate, unit)}; sweeping {list(self.kept)}"
        if self.skipped:
            first = self.skipped[0]
            spent = sum(self.predicted_s[s] for s in self.kept)
            sentence += (
                f"; skipping {list(self.skipped)}: at the probed rate {first} alone would "
                f"take about {format_si(self.predicted_s[first], 's')} ({self.calls} calls), "
                f"and the sizes kept already use about {format_si(spent, 's')} of the "
                f"{format_si(self.budget_s, 's')} budget"
            )
        return sentence + "."


def plan_sweep(
    sizes: Sequence[Any],
    work_of: Callable[[Any], float],
    rate: float,
    *,
    budget_s: float,
    calls: int = 8,
    minimum: int = 2,
    keep_largest: bool = False,
) -> SweepPlan:
    """Keep the sizes of a sweep, smallest first, while their predicted time fits ``budget_s``.

    A lab probes how fast this device runs an operation at a small size
    (``rate``, e.g. FLOP/s of a 128 x 128 matmul in one dtype) before it
    sweeps: a dtype the hardware only emulates (bf16 on a CPU without bf16
    units runs some 50 times slower than fp32) would otherwise take the lab's
    whole time. Measuring size ``s`` costs ``calls * work_of(s) / rate``
    seconds (warm-up and timed repeats); sizes are kept in order while the
    running total stays within ``budget_s``, and at least ``minimum`` are
    kept so the sweep still shows a trend. The small-size rate underestimates
    the rate of large sizes on fast hardware, so the plan errs on the short side.

    Parameters
    ----------
    sizes : sequence
        Sweep values in increasing order of work.
    work_of : callable
        ``size -> work`` in the rate's unit times seconds (FLOP for FLOP/s, bytes for bytes/s).
    rate : float
        Probed rate (> 0).
    budget_s : float
        Seconds the whole sweep may take.
    calls : int
        Calls per size (warm-up plus timed repeats).
    minimum : int
        Sizes kept whatever the budget (at most ``len(sizes)``).
    keep_largest : bool
        Keep the largest size whatever the budget (a GPU lab: the one size that
        reaches the roof, whose time a small probe, bound by dispatch,
        overestimates the most).
    """
    sizes = list(sizes)
    if not sizes:
        raise ValueError("sizes must not be empty")
    if not callable(work_of):
        raise TypeError("work_of must be callable")
    rate = _args.positive("rate", rate)
    budget_s = _args.positive("budget_s", budget_s)
    calls = _args.positive_int("calls", calls)
    minimum = min(_args.positive_int("minimum", minimum), len(sizes))
    predicted = {
        s: calls * _args.non_negative("work_of(size)", work_of(s)) / rate for s in sizes
    }
    kept, total = [], 0.0
    for i, s in enumerate(sizes):
        if i >= minimum and total + predicted[s] > budget_s:
            break
        kept.append(s)
        total += predicted[s]
    skipped = sizes[len(kept) :]
    if keep_largest and skipped:
        kept.append(skipped.pop())
    return SweepPlan(rate, tuple(kept), tuple(skipped), predicted, budget_s, calls)


def conv_caller(
    layer: Any, dtype: str, *, dev: Any = None, channels_last: bool = False
) -> Callable[[int], Callable[[], Any]]:
    """For :func:`timed_sweep`: ``batch -> (lambda: conv(x))`` for one convolution layer's shape.

    ``layer`` is a :class:`helpers.ops.Layer` of kind ``"conv"`` (``c_in``,
    ``c_out``, ``kernel``, ``stride``, ``in_size``). The ``torch.nn.Conv2d`` has
    the same channels, kernel and stride, padding ``kernel // 2``, no bias, no
    gradients, random weights in ``dtype`` on ``dev``; ``x`` is a random batch of
    ``in_size × in_size`` maps. ``channels_last=True`` stores both NHWC (the
    layout GPU tensor cores want).
    """
    import torch

    from . import bench

    for attr in ("c_in", "c_out", "kernel", "stride", "in_size"):
        if not hasattr(layer, attr):
            raise ValueError(f"layer must be a convolution layer with {attr!r}")
    tdtype = bench.torch_dtype(dtype)
    dev = bench.device() if dev is None else torch.device(dev)
    layout = torch.channels_last if channels_last else torch.contiguous_format
    conv = torch.nn.Conv2d(
        layer.c_in,
        layer.c_out,
        layer.kernel,
        layer.stride,
        padding=layer.kernel // 2,
        bias=False,
        device=dev,
        dtype=tdtype,
    )
    conv = conv.requires_grad_(False).to(memory_format=layout)  # type: ignore[call-overload]

    def make(batch: int) -> Callable[[], Any]:
        shape = (batch, layer.c_in, layer.in_size, layer.in_size)
        x = torch.randn(shape, device=dev, dtype=tdtype).to(memory_format=layout)
        return lambda: conv(x)

    return make
