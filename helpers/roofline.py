"""The roofline model (Williams, Waterman and Patterson 2009).

A kernel that does ``flops`` floating-point operations and moves ``bytes`` to
and from memory takes at least ``max(flops / peak, bytes / bandwidth)``
seconds; add a fixed ``overhead`` (kernel launch, Python) and you have the
book's whole time model. Its *ridge point* ``peak / bandwidth`` (FLOP/byte)
separates memory-bound from compute-bound kernels.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from . import _validate
from .hardware import Accelerator, get_accelerator

Bound = Literal["compute", "memory", "overhead"]


def ridge_point(acc: str | Accelerator, dtype: str = "fp16") -> float:
    """Arithmetic intensity (FLOP/byte) at which compute and memory time are equal.

    ``peak_flops[dtype] / memory_bandwidth``: below it a kernel is memory-bound.
    """
    device = get_accelerator(acc)
    return device.flops(dtype) / device.memory_bandwidth


def attainable_flops(intensity: float | np.ndarray, acc: str | Accelerator, dtype: str = "fp16") -> float | np.ndarray:
    """Roofline ceiling in FLOP/s at ``intensity`` FLOP/byte: ``min(peak, intensity * bandwidth)``.

    Vectorised over ``intensity``; returns a float for a scalar input.
    """
    device = get_accelerator(acc)
    values = _validate.positive_array("intensity", intensity)
    result = np.minimum(device.flops(dtype), values * device.memory_bandwidth)
    return float(result) if np.ndim(intensity) == 0 else result


def _times(flops: float, bytes_: float, acc: str | Accelerator, dtype: str) -> tuple[float, float]:
    device = get_accelerator(acc)
    flops = _validate.non_negative("flops", flops)
    bytes_ = _validate.non_negative("bytes", bytes_)
    if flops == 0 and bytes_ == 0:
        raise ValueError("flops and bytes must not both be 0")
    return flops / device.flops(dtype), bytes_ / device.memory_bandwidth


def roofline_time(flops: float, bytes: float, acc: str | Accelerator, dtype: str = "fp16", overhead: float = 0.0) -> float:
    """Lower bound on a kernel's time in seconds.

    Parameters
    ----------
    flops : float
        Floating-point operations (one multiply-accumulate = 2 FLOP).
    bytes : float
        Bytes read from and written to memory.
    acc : str or Accelerator
        The device (name or object).
    dtype : str
        Which peak to use (``"fp16"``, ``"bf16"``, ``"fp32"`` ...).
    overhead : float
        Fixed time per call in seconds (launch, framework), added to the bound.

    Returns
    -------
    float
        ``max(flops / peak, bytes / bandwidth) + overhead`` in seconds.
    """
    compute, memory = _times(flops, bytes, acc, dtype)
    return max(compute, memory) + _validate.non_negative("overhead", overhead)


def bound(flops: float, bytes: float, acc: str | Accelerator, dtype: str = "fp16", overhead: float = 0.0) -> Bound:
    """Which term dominates :func:`roofline_time`: ``'compute'``, ``'memory'`` or ``'overhead'``.

    ``'overhead'`` when the fixed overhead exceeds both the compute and the memory time.
    """
    compute, memory = _times(flops, bytes, acc, dtype)
    overhead = _validate.non_negative("overhead", overhead)
    if overhead > max(compute, memory):
        return "overhead"
    return "compute" if compute >= memory else "memory"
