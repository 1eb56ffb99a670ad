"""Batching: step time, throughput and regime of a layer as the batch grows.

A layer run on a batch of ``b`` samples (or tokens) costs ``flops = f1 b``
and ``bytes = B0 + B1 b``: the weights (``B0`` bytes) are read once whatever
the batch, the activations (``B1`` bytes per sample) grow with it (the
notation of ``appendix/notation.md``). The roofline model
(:func:`helpers.roofline.roofline_time`) turns that into a step time

    ``t(b) = max(f1 b / P, (B0 + B1 b) / W) + t0``

and three regimes (the ``bound`` of :func:`helpers.roofline.breakdown`):

* ``'overhead'`` -- the fixed launch/framework cost is larger than both terms;
* ``'memory'`` -- reading the weights dominates: ``t`` hardly grows with ``b``,
  so throughput ``b / t`` grows almost linearly (batching is free);
* ``'compute'`` -- past the *knee* ``t`` grows in proportion to ``b`` and
  throughput stays at its ceiling (batching only adds latency).

The *critical batch* is the batch at which compute time equals memory time
(:func:`helpers.roofline.crossing_batch`; for one linear layer
:func:`helpers.ops.critical_batch_size`). The *measured knee* of a real
time-versus-batch curve is defined by :func:`measured_knee`: the smallest
batch whose throughput reaches a fraction (default 90 %) of the sweep's best.
The *overhead crossover* (:func:`overhead_crossover`) is the other boundary:
the size below which the fixed overhead (the book assumes
:data:`DEFAULT_OVERHEAD_S`, 5 µs) outlasts both roofline terms.

Typical use (Lab 2)::

    sweep = linear_sweep([1, 2, 4, 8, 16], 4096, 4096, "t4", overhead=10e-6)
    sweep.seconds, sweep.throughput, sweep.bound
    critical_batch_size("t4", d_in=4096, d_out=4096)  # predicted crossing, samples
    measured_knee(batches, measured_seconds)          # knee of a measured curve

Units: seconds, FLOP, bytes, samples/s.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from . import _args
from .hardware import Accelerator, get_accelerator
from .ops import Cost, linear_cost, mlp_cost
from .roofline import Bound, breakdown

CostOfBatch = Callable[[int], Cost]
"""A function ``batch -> Cost`` (e.g. ``lambda b: linear_cost(b, 4096, 4096)``)."""


def _batches(batch: int | Sequence[int] | np.ndarray) -> np.ndarray:
    values = np.atleast_1d(np.asarray(batch))
    if values.ndim != 1 or values.size == 0:
        raise ValueError(
            "batch must be a whole number or a non-empty 1-D sequence of them"
        )
    return np.array([_args.positive_int("batch", v) for v in values.tolist()])


@dataclass(frozen=True)
class BatchSweep:
    """Predicted step time of one computation over a range of batch sizes.

    The fields of :class:`helpers.roofline.TimeBreakdown`, one entry per batch.

    Attributes
    ----------
    batch : numpy.ndarray of int
        Batch sizes (samples or tokens per step).
    flops, bytes : numpy.ndarray
        FLOP and bytes moved per step at each batch.
    compute_s, memory_s : numpy.ndarray
        ``flops / peak`` and ``bytes / bandwidth`` in seconds.
    overhead_s : float
        Fixed time per step in seconds.
    seconds : numpy.ndarray
        Step time (latency of one step) in seconds:
        ``max(compute_s, memory_s) + overhead_s`` at each batch.
    bound : tuple of str
        ``'overhead'``, ``'memory'`` or ``'compute'`` at each batch.
    accelerator : str
        Name of the device.
    dtype : str
        Dtype whose peak FLOP/s was used.
    """

    batch: np.ndarray
    flops: np.ndarray
    bytes: np.ndarray
    compute_s: np.ndarray
    memory_s: np.ndarray
    overhead_s: float
    seconds: np.ndarray
    bound: tuple[Bound, ...]
    accelerator: str
    dtype: str

    @property
    def throughput(self) -> np.ndarray:
        """Samples (or tokens) per second: ``batch / seconds``."""
        return self.batch / self.seconds

    @property
    def achieved_flops(self) -> np.ndarray:
        """FLOP/s achieved at each batch: ``flops / seconds``."""
        return self.flops / self.seconds


def sweep(
    cost_of_batch: CostOfBatch,
    batch: int | Sequence[int] | np.ndarray,
    acc: str | Accelerator,
    *,
    dtype: str = "fp16",
    overhead: float = 0.0,
) -> BatchSweep:
    """Step time, throughput and bound of any computation at each batch size.

    Parameters
    ----------
    cost_of_batch : callable
        ``batch -> Cost`` (e.g. ``lambda b: helpers.ops.linear_cost(b, 4096, 4096)``).
    batch : int or sequence of int
        Batch sizes to evaluate (each >= 1).
    acc : str or Accelerator
        The device.
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
    overhead = _args.non_negative("overhead", overhead)
    batches = _batches(batch)
    costs = [cost_of_batch(int(b)) for b in batches]
    if not all(isinstance(c, Cost) for c in costs):
        raise TypeError("cost_of_batch must return a helpers.ops.Cost")
    parts = [
        breakdown(c.flops, c.bytes, device, dtype=dtype, overhead=overhead)
        for c in costs
    ]
    return BatchSweep(
        batch=batches,
        flops=np.array([c.flops for c in costs]),
        bytes=np.array([c.bytes for c in costs]),
        compute_s=np.array([p.compute_s for p in parts]),
        memory_s=np.array([p.memory_s for p in parts]),
        overhead_s=overhead,
        seconds=np.array([p.seconds for p in parts]),
        bound=tuple(p.bound for p in parts),
        accelerator=device.name,
        dtype=dtype,
    )


def linear_sweep(
    batch: int | Sequence[int] | np.ndarray,
    d_in: int,
    d_out: int,
    acc: str | Accelerator,
    *,
    dtype: str = "fp16",
    weight_dtype: str | None = None,
    overhead: float = 0.0,
) -> BatchSweep:
    """:func:`sweep` of one linear layer ``d_in -> d_out`` (:func:`helpers.ops.linear_cost`).

    ``weight_dtype`` models weight-only quantisation (e.g. int8 weights,
    fp16 compute); ``dtype`` sets the activations and the peak FLOP/s.
    """
    _args.positive_int("d_in", d_in)
    _args.positive_int("d_out", d_out)
    return sweep(
        lambda b: linear_cost(b, d_in, d_out, dtype=dtype, weight_dtype=weight_dtype),
        batch,
        acc,
        dtype=dtype,
        overhead=overhead,
    )


def mlp_sweep(
    batch: int | Sequence[int] | np.ndarray,
    d_model: int,
    d_ff: int,
    acc: str | Accelerator,
    *,
    dtype: str = "fp16",
    gated: bool = False,
    weight_dtype: str | None = None,
    overhead: float = 0.0,
) -> BatchSweep:
    """:func:`sweep` of a transformer MLP (:func:`helpers.ops.mlp_cost`), run as one step.

    ``overhead`` is charged once per step (for a fused or graph-captured MLP);
    for one launch per matmul pass ``overhead`` times the number of matmuls.
    """
    _args.positive_int("d_model", d_model)
    _args.positive_int("d_ff", d_ff)
    _args.boolean("gated", gated)
    return sweep(
        lambda b: mlp_cost(
            b, d_model, d_ff, dtype=dtype, gated=gated, weight_dtype=weight_dtype
        ),
        batch,
        acc,
        dtype=dtype,
        overhead=overhead,
    )


def measured_knee(
    batch: Sequence[int] | np.ndarray,
    seconds: Sequence[float] | np.ndarray,
    *,
    fraction: float = 0.9,
) -> int:
    """The knee of a time-versus-batch curve: the smallest batch reaching ``fraction`` of peak throughput.

    Definition used throughout the book: throughput is ``batch / seconds``;
    the knee is the smallest batch in the sweep whose throughput is at least
    ``fraction`` times the largest throughput in the sweep. With the default
    90 %, batching beyond the knee buys at most about 10 % more throughput
    while latency keeps growing.

    On a roofline curve with no overhead and wide layers, this lands at about
    ``fraction`` times the critical batch (:func:`helpers.roofline.crossing_batch`): below the
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
    times = _args.positive_array("seconds", seconds)
    if times.shape != batches.shape:
        raise ValueError(
            f"seconds must have one entry per batch ({batches.size}), got shape {times.shape}"
        )
    if np.unique(batches).size != batches.size:
        raise ValueError("batch must not repeat a value")
    fraction = _args.fraction("fraction", fraction)
    order = np.argsort(batches)
    batches, times = batches[order], times[order]
    throughput = batches / times
    reached = throughput >= fraction * throughput.max()
    return int(batches[np.argmax(reached)])


DEFAULT_OVERHEAD_S = 5e-6
"""The book's assumed fixed time per call, in seconds: 5 µs.

Before an operation does any work, eager PyTorch runs Python and framework
dispatch on the CPU and the GPU launches a kernel; together that is "a few
microseconds" per call, whatever the size of the operation. The book takes
5 µs as one round, *assumed* figure wherever a chapter needs one: chapter ``two_ceilings``
charges it per operation, chapter ``batching`` per step of a fused (graph-captured)
MLP block, chapter ``convolutions`` per ResNet-50 layer. It is an order of magnitude, not
a datasheet value: Lab 1 measures the real one on the reader's machine
(:func:`helpers.bench.measure_overhead`, the time of adding 1 to a
one-element tensor; about 7 µs on the CPU of the committed lab runs), and
CUDA graphs or ``torch.compile`` remove most of it.
"""


def overhead_crossover(
    cost_of_size: Callable[[int], Cost],
    acc: str | Accelerator,
    *,
    dtype: str = "fp16",
    overhead: float = DEFAULT_OVERHEAD_S,
) -> float:
    """Size below which a computation is overhead-bound: its roofline time equals ``overhead``.

    For FLOP and bytes affine in the size ``n`` (``f0 + f1 n`` and
    ``B0 + B1 n``: elements of an elementwise op, rows of a linear layer;
    read off the costs at ``n = 1`` and ``n = 2``, checked at ``n = 4``),
    the compute time reaches ``overhead`` at ``n_c = (overhead P - f0) / f1``
    and the memory time at ``n_m = (overhead W - B0) / B1``. The time model
    (:func:`helpers.roofline.breakdown`) calls a call overhead-bound while
    ``overhead`` exceeds both terms, i.e. below ``min(n_c, n_m)``.

    For an fp16 ReLU (4 bytes per element, memory-bound at every size) this
    is ``overhead W / 4`` elements: 4.19 million on an H100 at 5 µs.

    Parameters
    ----------
    cost_of_size : callable
        ``size -> Cost``, e.g. ``lambda n: helpers.ops.op_cost("relu", n)``.
    acc : str or Accelerator
        The device.
    dtype : str
        Which peak FLOP/s applies.
    overhead : float
        Fixed time per call in seconds (default :data:`DEFAULT_OVERHEAD_S`).

    Returns
    -------
    float
        The size (elements, rows, samples), not rounded; ``0.0`` if the
        fixed part of the work alone outlasts ``overhead``; ``inf`` if
        neither term grows with the size.
    """
    if not callable(cost_of_size):
        raise TypeError("cost_of_size must be a function size -> Cost")
    device = get_accelerator(acc)
    overhead = _args.positive("overhead", overhead)
    c1, c2, c4 = (cost_of_size(n) for n in (1, 2, 4))
    slopes = (c2.flops - c1.flops, c2.bytes - c1.bytes)
    offsets = (c1.flops - slopes[0], c1.bytes - slopes[1])
    affine = all(
        math.isclose(value, offset + 4 * slope, rel_tol=1e-9, abs_tol=1e-9)
        for value, offset, slope in zip((c4.flops, c4.bytes), offsets, slopes)
    )
    if not affine:
        raise ValueError("cost_of_size must have flops and bytes affine in the size")
    rates = (device.flops(dtype), device.memory_bandwidth)
    sizes = []
    for rate, offset, slope in zip(rates, offsets, slopes):
        if slope > 0:
            sizes.append((overhead * rate - offset) / slope)
        else:  # a term that does not grow: past the overhead at every size, or never
            sizes.append(0.0 if offset / rate >= overhead else math.inf)
    return max(0.0, min(sizes))
