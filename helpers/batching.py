"""Batching: step time, throughput and regime of a layer as the batch grows.

A layer run on a batch of ``B`` samples (or tokens) costs ``flops = f1 * B``
and ``bytes = b0 + b1 * B``: the weights (``b0``) are read once whatever the
batch, the activations (``b1`` per sample) grow with it. The roofline model
(:func:`helpers.roofline.roofline_time`) turns that into a step time

    ``t(B) = max(f1 B / peak, (b0 + b1 B) / bandwidth) + overhead``

and three regimes (:func:`helpers.roofline.bound`):

* ``'overhead'`` -- the fixed launch/framework cost is larger than both terms;
* ``'memory'`` -- reading the weights dominates: ``t`` hardly grows with ``B``,
  so throughput ``B / t`` grows almost linearly (batching is free);
* ``'compute'`` -- past the *knee* ``t`` grows in proportion to ``B`` and
  throughput stays at its ceiling (batching only adds latency).

The *predicted knee* is the batch at which compute time equals memory time
(:func:`crossing_batch`; for one linear layer it is
:func:`helpers.ops.critical_batch_size`). The *measured knee* of a real
time-versus-batch curve is defined by :func:`measured_knee`: the smallest
batch whose throughput reaches a fraction (default 90 %) of the sweep's best.

Typical use (Lab 2)::

    sweep = linear_sweep("t4", [1, 2, 4, 8, 16], 4096, 4096, overhead=10e-6)
    sweep.time, sweep.throughput, sweep.regime
    knee_batch("t4", 4096, 4096)               # predicted knee, samples
    measured_knee(batches, measured_seconds)   # knee of a measured curve

Units: seconds, FLOP, bytes, samples/s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from . import _validate
from .hardware import Accelerator, get_accelerator
from .ops import Cost, critical_batch_size, linear_cost, mlp_cost
from .roofline import Bound, bound, ridge_point, roofline_time

CostOfBatch = Callable[[int], Cost]
"""A function ``batch -> Cost`` (e.g. ``lambda b: linear_cost(b, 4096, 4096)``)."""


def _batches(batch: int | Sequence[int] | np.ndarray) -> np.ndarray:
    values = np.atleast_1d(np.asarray(batch))
    if values.ndim != 1 or values.size == 0:
        raise ValueError("batch must be a whole number or a non-empty 1-D sequence of them")
    return np.array([_validate.positive_int("batch", v) for v in values.tolist()])


@dataclass(frozen=True)
class BatchSweep:
    """Predicted step time of one computation over a range of batch sizes.

    Attributes
    ----------
    batch : numpy.ndarray of int
        Batch sizes (samples or tokens per step).
    flops, bytes : numpy.ndarray
        FLOP and bytes moved per step at each batch.
    compute_time, memory_time : numpy.ndarray
        ``flops / peak`` and ``bytes / bandwidth`` in seconds.
    time : numpy.ndarray
        Step time (latency of one step) in seconds:
        :func:`helpers.roofline.roofline_time` at each batch.
    regime : tuple of str
        :func:`helpers.roofline.bound` at each batch:
        ``'overhead'``, ``'memory'`` or ``'compute'``.
    overhead : float
        Fixed time per step in seconds.
    accelerator : str
        Name of the device.
    dtype : str
        Dtype whose peak FLOP/s was used.
    """

    batch: np.ndarray
    flops: np.ndarray
    bytes: np.ndarray
    compute_time: np.ndarray
    memory_time: np.ndarray
    time: np.ndarray
    regime: tuple[Bound, ...]
    overhead: float
    accelerator: str
    dtype: str

    @property
    def throughput(self) -> np.ndarray:
        """Samples (or tokens) per second: ``batch / time``."""
        return self.batch / self.time

    @property
    def achieved_flops(self) -> np.ndarray:
        """FLOP/s achieved at each batch: ``flops / time``."""
        return self.flops / self.time


def sweep(
    acc: str | Accelerator,
    batch: int | Sequence[int] | np.ndarray,
    cost_of_batch: CostOfBatch,
    dtype: str = "fp16",
    overhead: float = 0.0,
) -> BatchSweep:
    """Step time, throughput and regime of any computation at each batch size.

    Parameters
    ----------
    acc : str or Accelerator
        The device.
    batch : int or sequence of int
        Batch sizes to evaluate (each >= 1).
    cost_of_batch : callable
        ``batch -> Cost`` (e.g. ``lambda b: helpers.ops.linear_cost(b, 4096, 4096)``).
    dtype : str
        Dtype whose peak FLOP/s applies (the compute dtype).
    overhead : float
        Fixed time per step in seconds (kernel launch, framework).

    Returns
    -------
    BatchSweep
    """
    device = get_accelerator(acc)
    if not callable(cost_of_batch):
        raise TypeError("cost_of_batch must be a function batch -> Cost")
    overhead = _validate.non_negative("overhead", overhead)
    batches = _batches(batch)
    costs = [cost_of_batch(int(b)) for b in batches]
    if not all(isinstance(c, Cost) for c in costs):
        raise TypeError("cost_of_batch must return a helpers.ops.Cost")
    flops = np.array([c.flops for c in costs])
    bytes_ = np.array([c.bytes for c in costs])
    times = np.array([roofline_time(c.flops, c.bytes, device, dtype, overhead) for c in costs])
    regime = tuple(bound(c.flops, c.bytes, device, dtype, overhead) for c in costs)
    return BatchSweep(
        batch=batches,
        flops=flops,
        bytes=bytes_,
        compute_time=flops / device.flops(dtype),
        memory_time=bytes_ / device.memory_bandwidth,
        time=times,
        regime=regime,
        overhead=overhead,
        accelerator=device.name,
        dtype=dtype,
    )


def linear_sweep(
    acc: str | Accelerator,
    batch: int | Sequence[int] | np.ndarray,
    d_in: int,
    d_out: int,
    dtype: str = "fp16",
    weight_dtype: str | None = None,
    overhead: float = 0.0,
) -> BatchSweep:
    """:func:`sweep` of one linear layer ``d_in -> d_out`` (:func:`helpers.ops.linear_cost`).

    ``weight_dtype`` models weight-only quantisation (e.g. int8 weights,
    fp16 compute); ``dtype`` sets the activations and the peak FLOP/s.
    """
    _validate.positive_int("d_in", d_in)
    _validate.positive_int("d_out", d_out)
    return sweep(acc, batch, lambda b: linear_cost(b, d_in, d_out, dtype, weight_dtype), dtype, overhead)


def mlp_sweep(
    acc: str | Accelerator,
    batch: int | Sequence[int] | np.ndarray,
    d_model: int,
    d_ff: int,
    dtype: str = "fp16",
    gated: bool = False,
    weight_dtype: str | None = None,
    overhead: float = 0.0,
) -> BatchSweep:
    """:func:`sweep` of a transformer MLP (:func:`helpers.ops.mlp_cost`), run as one step.

    ``overhead`` is charged once per step (for a fused or graph-captured MLP);
    for one launch per matmul pass ``overhead`` times the number of matmuls.
    """
    _validate.positive_int("d_model", d_model)
    _validate.positive_int("d_ff", d_ff)
    if not isinstance(gated, bool):
        raise TypeError(f"gated must be True or False, got {gated!r}")
    return sweep(acc, batch, lambda b: mlp_cost(b, d_model, d_ff, dtype, gated, weight_dtype), dtype, overhead)


def crossing_batch(acc: str | Accelerator, cost_of_batch: CostOfBatch, dtype: str = "fp16") -> float:
    """Batch at which compute time equals memory time, for flops proportional to the batch.

    With ``flops = f1 B`` and ``bytes = b0 + b1 B`` (weights ``b0`` read once,
    activations ``b1`` per sample; read off the costs at ``B = 1`` and ``B = 2``,
    checked at ``B = 4``), compute time equals memory time where
    ``f1 B = ridge (b0 + b1 B)``, i.e.

        ``B* = ridge b0 / (f1 - ridge b1)``.

    Returns
    -------
    float
        ``B*`` in samples, not rounded. A value below 1 means the computation is
        compute-bound already at batch 1 (``0.0`` when nothing is read once per
        step); ``inf`` if its intensity never reaches the ridge point
        (``f1 <= ridge * b1``: the activations alone are too many bytes per FLOP).
    """
    if not callable(cost_of_batch):
        raise TypeError("cost_of_batch must be a function batch -> Cost")
    ridge = ridge_point(acc, dtype)
    c1, c2, c4 = (cost_of_batch(b) for b in (1, 2, 4))
    f1, b1 = c1.flops, c2.bytes - c1.bytes
    b0 = c1.bytes - b1
    proportional = all(math.isclose(c.flops, k * f1, rel_tol=1e-9) for c, k in ((c2, 2), (c4, 4)))
    if not (proportional and math.isclose(c4.bytes, b0 + 4 * b1, rel_tol=1e-9)):
        raise ValueError("cost_of_batch must have flops proportional to the batch and bytes affine in it")
    slope = f1 - ridge * b1
    if slope <= 0:
        return math.inf
    return max(0.0, ridge * b0 / slope)


def knee_batch(
    acc: str | Accelerator,
    d_in: int,
    d_out: int,
    dtype: str = "fp16",
    weight_dtype: str | None = None,
) -> float:
    """Predicted knee of a linear layer: the batch where its intensity reaches the ridge point.

    This is :func:`helpers.ops.critical_batch_size` with the layer's exact
    dimensions; for ``B << d_in, d_out`` it tends to ``ridge * w_w / 2``.
    """
    return critical_batch_size(acc, dtype, weight_dtype, d_in, d_out)


def mlp_knee_batch(
    acc: str | Accelerator,
    d_model: int,
    d_ff: int,
    dtype: str = "fp16",
    gated: bool = False,
    weight_dtype: str | None = None,
) -> float:
    """Predicted knee of a whole MLP (:func:`helpers.ops.mlp_cost`): :func:`crossing_batch` of its cost."""
    _validate.positive_int("d_model", d_model)
    _validate.positive_int("d_ff", d_ff)
    if not isinstance(gated, bool):
        raise TypeError(f"gated must be True or False, got {gated!r}")
    return crossing_batch(acc, lambda b: mlp_cost(b, d_model, d_ff, dtype, gated, weight_dtype), dtype)


def measured_knee(
    batch: Sequence[int] | np.ndarray,
    seconds: Sequence[float] | np.ndarray,
    fraction: float = 0.9,
) -> int:
    """The knee of a time-versus-batch curve: the smallest batch reaching ``fraction`` of peak throughput.

    Definition used throughout the book: throughput is ``batch / seconds``;
    the knee is the smallest batch in the sweep whose throughput is at least
    ``fraction`` times the largest throughput in the sweep. With the default
    90 %, batching beyond the knee buys at most about 10 % more throughput
    while latency keeps growing.

    On a roofline curve with no overhead and wide layers, this lands at about
    ``fraction`` times the predicted knee (:func:`crossing_batch`): below the
    knee throughput grows in proportion to the batch. The answer is only
    meaningful if the sweep extends past the knee (if the largest batch is
    returned, sweep further).

    Parameters
    ----------
    batch : sequence of int
        Batch sizes, in any order (each >= 1, no repeats).
    seconds : sequence of float
        Time per step at each batch (> 0), same length.
    fraction : float
        In (0, 1]: share of the best throughput that counts as saturated.

    Returns
    -------
    int
        The knee batch, one of ``batch``.
    """
    batches = _batches(batch)
    times = _validate.positive_array("seconds", seconds)
    if times.shape != batches.shape:
        raise ValueError(f"seconds must have one entry per batch ({batches.size}), got shape {times.shape}")
    if np.unique(batches).size != batches.size:
        raise ValueError("batch must not repeat a value")
    fraction = _validate.fraction("fraction", fraction)
    order = np.argsort(batches)
    batches, times = batches[order], times[order]
    throughput = batches / times
    reached = throughput >= fraction * throughput.max()
    return int(batches[np.argmax(reached)])


REGIME_COLOURS = {"overhead": "0.85", "memory": "#cfe2f3", "compute": "#fce5cd"}
"""Background colour of each regime in :func:`draw_sweep`."""


def _decade_limits(values: np.ndarray) -> tuple[float, float]:
    """Axis limits rounded out to whole powers of ten, so a log axis always shows labelled decades."""
    low = 10.0 ** math.floor(math.log10(float(np.min(values))))
    high = 10.0 ** math.ceil(math.log10(float(np.max(values))))
    return low, high if high > low else 10 * low


def draw_sweep(ax, sweep: BatchSweep, knee: float | None = None, mark: int | None = None):
    """Step time (left axis) and throughput (right axis) against batch, regimes shaded.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        Axes to draw the step time into. It is cleared, and any other axes in
        its figure (an earlier throughput twin) removed, so a calculator can redraw.
    sweep : BatchSweep
        What to draw (log-log, batch on x).
    knee : float, optional
        A predicted knee batch, drawn as a dashed vertical line.
    mark : int, optional
        A batch to highlight with a dot on both curves (must be in ``sweep.batch``).

    Returns
    -------
    matplotlib.axes.Axes
        The throughput axes (a twin of ``ax``).
    """
    if not isinstance(sweep, BatchSweep):
        raise TypeError(f"sweep must be a BatchSweep, got {type(sweep).__name__}")
    for other in list(ax.figure.axes):
        if other is not ax:
            other.remove()
    ax.clear()
    b = sweep.batch.astype(float)
    edges = np.concatenate([[b[0]], np.sqrt(b[1:] * b[:-1]), [b[-1]]])
    shown = set()
    for i, regime in enumerate(sweep.regime):
        label = f"{regime}-bound" if regime not in shown else None
        shown.add(regime)
        ax.axvspan(edges[i], edges[i + 1], color=REGIME_COLOURS[regime], lw=0, label=label)
    ax.loglog(b, sweep.time, color="C0", lw=2, label="step time")
    ax.set_xlabel("batch (samples or tokens per step)")
    ax.set_ylabel("step time (s)", color="C0")
    ax.set_xlim(b[0], b[-1])
    twin = ax.twinx()
    twin.loglog(b, sweep.throughput, color="C3", lw=2, label="throughput")
    twin.set_ylabel("throughput (samples/s)", color="C3")
    twin.grid(False)
    ax.set_ylim(*_decade_limits(sweep.time))
    twin.set_ylim(*_decade_limits(sweep.throughput))
    if knee is not None and math.isfinite(knee) and b[0] <= knee <= b[-1]:
        ax.axvline(knee, color="k", ls="--", lw=1, label=f"predicted knee ({knee:,.0f})")
    if mark is not None:
        where = np.flatnonzero(sweep.batch == mark)
        if where.size == 0:
            raise ValueError(f"mark must be one of the sweep's batches, got {mark!r}")
        i = int(where[0])
        ax.plot([b[i]], [sweep.time[i]], "o", color="C0", ms=7)
        twin.plot([b[i]], [sweep.throughput[i]], "o", color="C3", ms=7)
    handles, labels = ax.get_legend_handles_labels()
    more, more_labels = twin.get_legend_handles_labels()
    twin.legend(handles + more, labels + more_labels, loc="upper left", fontsize=8, framealpha=0.8, frameon=True)
    return twin
