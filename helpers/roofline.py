"""The roofline model (Williams, Waterman and Patterson 2009): the book's one time model.

A kernel that does ``flops`` floating-point operations and moves ``bytes`` to
and from memory takes at least ``max(flops / peak, bytes / bandwidth)``
seconds; add a fixed ``overhead`` (kernel launch, Python) and you have the
book's whole first-order time model. Its *ridge point* ``peak / bandwidth``
(FLOP/byte) separates memory-bound from compute-bound kernels.

Every time in :mod:`helpers` is computed here, by :func:`breakdown`:
:func:`roofline_time` and :func:`bound` are its total and its dominant term,
and the serving functions of :mod:`helpers.inference` call it with
``n_gpus`` and ``mfu``. :func:`crossing_batch` is the one home of the
"critical batch": the batch at which compute time catches up with memory time.

Examples
--------
>>> from helpers import roofline
>>> round(roofline.ridge_point("A100", dtype="fp16"))
153
>>> roofline.bound(2e9, 1e6, "A100", dtype="fp16")
'compute'
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np

from . import _args
from .hardware import Accelerator, get_accelerator

Bound = Literal["compute", "memory", "overhead"]
"""Which term of the time model sets a kernel's time."""

Roof = Literal["tensor", "vector"]
"""Which compute ceiling applies: the matrix (tensor-core) peak or the plain (CUDA-core) one."""


class HasCost(Protocol):
    """Anything with ``flops`` (FLOP) and ``bytes`` (bytes), such as :class:`helpers.ops.Cost`."""

    @property
    def flops(self) -> float: ...

    @property
    def bytes(self) -> float: ...


@dataclass(frozen=True)
class TimeBreakdown:
    """The terms of the time model for one kernel or step, in seconds.

    Every function in :mod:`helpers` that returns a time split into its terms
    returns this type.

    Attributes
    ----------
    compute_s : float
        ``flops / (n_gpus * mfu * peak)``: the compute term (s).
    memory_s : float
        ``bytes / (n_gpus * bandwidth)``: the memory term (s).
    overhead_s : float
        Fixed time per call: launch, framework (s).
    seconds : float
        ``max(compute_s, memory_s) + overlap * min(compute_s, memory_s) +
        overhead_s``: the bound itself (s); ``overlap`` is 0 (the roofline's
        perfect overlap) unless :func:`breakdown` is told otherwise.
    bound : {'compute', 'memory', 'overhead'}
        The term that sets ``seconds`` (``'overhead'`` when the overhead
        exceeds both other terms).
    comm_s : float
        Collective communication on the step's critical path (s), already in
        ``seconds`` (tensor-parallel all-reduces, :func:`helpers.inference.tp_allreduce_time`);
        0 for one device.
    """

    compute_s: float
    memory_s: float
    overhead_s: float
    seconds: float
    bound: Bound
    comm_s: float = 0.0


def ridge_point(
    acc: str | Accelerator, *, dtype: str = "fp16", roof: Roof = "tensor"
) -> float:
    """Arithmetic intensity (FLOP/byte) at which compute and memory time are equal.

    ``peak / memory_bandwidth``: below it a kernel is memory-bound. The peak
    is the tensor-core one (:meth:`helpers.hardware.Accelerator.flops`) for
    ``roof="tensor"``, the plain units' (:meth:`helpers.hardware.Accelerator.vector_flops`),
    where elementwise work runs, for ``roof="vector"``.

    >>> round(ridge_point("H100 SXM", dtype="fp16")), round(ridge_point("H100 SXM", dtype="fp16", roof="vector"))
    (295, 40)
    """
    return get_accelerator(acc).ridge(dtype, roof=roof)


def _peak(device: Accelerator, dtype: str, roof: Roof) -> float:
    if roof == "tensor":
        return device.flops(dtype)
    if roof == "vector":
        return device.vector_flops(dtype)
    raise ValueError(f"roof must be 'tensor' or 'vector', got {roof!r}")


def attainable_flops(
    intensity: float | np.ndarray, acc: str | Accelerator, *, dtype: str = "fp16"
) -> float | np.ndarray:
    """Roofline ceiling in FLOP/s at ``intensity`` FLOP/byte: ``min(peak, intensity * bandwidth)``.

    Vectorised over ``intensity``; returns a float for a scalar input.
    """
    device = get_accelerator(acc)
    values = _args.positive_array("intensity", intensity)
    result = np.minimum(device.flops(dtype), values * device.memory_bandwidth)
    return float(result) if np.ndim(intensity) == 0 else result


def breakdown(
    flops: float,
    nbytes: float,
    acc: str | Accelerator,
    *,
    dtype: str = "fp16",
    overhead: float = 0.0,
    n_gpus: int = 1,
    mfu: float = 1.0,
    roof: Roof = "tensor",
    overlap: float = 0.0,
) -> TimeBreakdown:
    """Split the time of ``flops`` FLOP and ``nbytes`` bytes on ``acc`` into its terms.

    Parameters
    ----------
    flops : float
        Floating-point operations (one multiply-accumulate = 2 FLOP).
    nbytes : float
        Bytes read from and written to memory.
    acc : str or Accelerator
        The device (name or object).
    dtype : str
        Which peak to use (``"fp16"``, ``"bf16"``, ``"fp32"`` ...).
    overhead : float
        Fixed time per call in seconds (launch, framework), added to the bound.
    n_gpus : int
        Identical devices that share the work and the bytes evenly
        (ideal parallelism: communication is ignored).
    mfu : float
        Fraction of the peak FLOP/s reached, in (0, 1]; 1 is the datasheet bound.
    roof : {'tensor', 'vector'}
        Which compute ceiling: ``'tensor'`` (:meth:`helpers.hardware.Accelerator.flops`, the
        matrix units; for ``fp32`` the plain FP32 rate) or ``'vector'``
        (:meth:`helpers.hardware.Accelerator.vector_flops`, the CUDA cores), where elementwise
        work such as a ReLU runs. One device has several compute ceilings
        (Williams et al. 2009; on an H100 SXM, 989 against 134 TFLOP/s in fp16).
    overlap : float
        How much of the shorter term shows, in [0, 1]: 0 is the roofline's
        perfect overlap of loads and arithmetic (``max``), 1 none at all (their
        sum, the upper end of :func:`overlap_bounds`).

    Returns
    -------
    TimeBreakdown
    """
    device = get_accelerator(acc)
    flops = _args.non_negative("flops", flops)
    nbytes = _args.non_negative("nbytes", nbytes)
    if flops == 0 and nbytes == 0:
        raise ValueError("flops and bytes must not both be 0")
    overhead = _args.non_negative("overhead", overhead)
    n_gpus = _args.positive_int("n_gpus", n_gpus)
    mfu = _args.fraction("mfu", mfu)
    overlap = _args.non_negative("overlap", overlap)
    if overlap > 1:
        raise ValueError(f"overlap must be in [0, 1], got {overlap!r}")
    peak = _peak(device, dtype, roof)
    compute = flops / (n_gpus * mfu * peak)
    memory = nbytes / (n_gpus * device.memory_bandwidth)
    if overhead > max(compute, memory):
        which: Bound = "overhead"
    else:
        which = "compute" if compute >= memory else "memory"
    seconds = max(compute, memory) + overlap * min(compute, memory) + overhead
    return TimeBreakdown(compute, memory, overhead, seconds, which)


def achievable(
    acc: str | Accelerator, *, compute_fraction: float, memory_fraction: float
) -> Accelerator:
    """``acc`` with every compute peak scaled by ``compute_fraction`` and its bandwidth by ``memory_fraction``.

    The achievable fraction of peak as a parameter of the device, so every
    function that takes ``acc`` uses the derated ceilings. Measured values
    come from the labs (a large matmul and a large copy against the
    datasheet); published ones are about 0.8 of the matmul peak and 0.85 to
    0.9 of the bandwidth on an H100 (Austin et al., *How to Scale Your Model*,
    "All About Rooflines"), and nearer 0.7 to 0.8 of the bandwidth on a T4
    with ECC on. SM count and L2 size are kept.

    Examples
    --------
    >>> h = achievable("H100 SXM", compute_fraction=0.8, memory_fraction=0.9)
    >>> round(h.flops("bf16") / 1e12, 1), round(h.memory_bandwidth / 1e12, 3)
    (791.5, 3.015)
    """
    device = get_accelerator(acc)
    c = _args.fraction("compute_fraction", compute_fraction)
    m = _args.fraction("memory_fraction", memory_fraction)
    return dataclasses.replace(
        device,
        name=f"{device.name} at {c:.0%} of peak compute, {m:.0%} of peak bandwidth",
        peak_flops={d: c * v for d, v in device.peak_flops.items()},
        vector_peak_flops={d: c * v for d, v in device.vector_peak_flops.items()},
        memory_bandwidth=m * device.memory_bandwidth,
        notes=f"Derated from {device.name}. " + device.notes,
        aliases=(),
        torch_names=(),
    )


def overlap_bounds(compute_s: float, memory_s: float) -> tuple[float, float]:
    """Two-sided bound on a kernel's time: ``(max(compute_s, memory_s), compute_s + memory_s)``.

    The roofline is the lower bound, reached only when loads and arithmetic
    overlap perfectly; with no overlap at all they add, so the true time is
    at most the sum, within 2x of the bound, and furthest from it where the
    two terms are equal, at the knee (Austin et al., *How to Scale Your
    Model*, "All About Rooflines": ``T_lower = max``, ``T_upper = sum``).
    """
    compute_s = _args.non_negative("compute_s", compute_s)
    memory_s = _args.non_negative("memory_s", memory_s)
    return max(compute_s, memory_s), compute_s + memory_s


def roofline_time(
    flops: float,
    bytes: float,
    acc: str | Accelerator,
    *,
    dtype: str = "fp16",
    overhead: float = 0.0,
) -> float:
    """Lower bound on a kernel's time in seconds: ``max(flops / peak, bytes / bandwidth) + overhead``.

    The ``seconds`` of :func:`breakdown` (see there for the parameters).
    """
    return breakdown(flops, bytes, acc, dtype=dtype, overhead=overhead).seconds


def bound(
    flops: float,
    bytes: float,
    acc: str | Accelerator,
    *,
    dtype: str = "fp16",
    overhead: float = 0.0,
) -> Bound:
    """Which term dominates :func:`roofline_time`: ``'compute'``, ``'memory'`` or ``'overhead'``.

    The ``bound`` of :func:`breakdown`; ``'overhead'`` when the fixed overhead
    exceeds both the compute and the memory time.
    """
    return breakdown(flops, bytes, acc, dtype=dtype, overhead=overhead).bound


def crossing_batch(
    cost_of_batch: Callable[[int], HasCost],
    acc: str | Accelerator,
    *,
    dtype: str = "fp16",
    mfu: float = 1.0,
) -> float:
    """Batch at which compute time equals memory time, for FLOP proportional to the batch.

    With ``flops = f1 b`` and ``bytes = B0 + B1 b`` for a batch of ``b``
    samples (weights ``B0`` bytes read once per step, activations or KV cache
    ``B1`` bytes per sample; read off the costs at ``b = 1`` and ``b = 2``,
    checked at ``b = 4``), compute time equals memory time where
    ``f1 b / (mfu P) = (B0 + B1 b) / W``, i.e. with the effective ridge
    ``I* = mfu P / W``

        ``b* = I* B0 / (f1 - I* B1)``.

    This is the book's *critical batch* for every layer and step: a linear
    layer (:func:`helpers.ops.critical_batch_size`), an MLP, a convolution,
    a whole decode step (:func:`helpers.inference.critical_decode_batch`).
    Splitting the work over several devices scales both terms equally and
    leaves it unchanged.

    Parameters
    ----------
    cost_of_batch : callable
        ``batch -> Cost`` (e.g. ``lambda b: helpers.ops.linear_cost(b, 4096, 4096)``).
    acc : str or Accelerator
    dtype : str
        Which peak FLOP/s applies.
    mfu : float
        Fraction of the peak reached, in (0, 1].

    Returns
    -------
    float
        ``b*`` in samples, not rounded. Below 1: compute-bound already at
        batch 1 (``0.0`` when nothing is read once per step); ``inf`` if the
        intensity never reaches the ridge (``f1 <= I* B1``: the per-sample
        bytes alone are too many per FLOP).
    """
    if not callable(cost_of_batch):
        raise TypeError("cost_of_batch must be a function batch -> Cost")
    mfu = _args.fraction("mfu", mfu)
    ridge = mfu * ridge_point(acc, dtype=dtype)
    c1, c2, c4 = (cost_of_batch(b) for b in (1, 2, 4))
    f1, per_sample_bytes = c1.flops, c2.bytes - c1.bytes
    fixed_bytes = c1.bytes - per_sample_bytes
    proportional = all(
        math.isclose(c.flops, k * f1, rel_tol=1e-9) for c, k in ((c2, 2), (c4, 4))
    )
    if not (
        proportional
        and math.isclose(c4.bytes, fixed_bytes + 4 * per_sample_bytes, rel_tol=1e-9)
    ):
        raise ValueError(
            "cost_of_batch must have flops proportional to the batch and bytes affine in it"
        )
    slope = f1 - ridge * per_sample_bytes
    if slope <= 0:
        return math.inf
    return max(0.0, ridge * fixed_bytes / slope)
