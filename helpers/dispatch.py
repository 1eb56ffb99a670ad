"""CPU-GPU asynchrony: how per-kernel dispatch overhead and GPU time combine over a sequence.

PyTorch's eager mode dispatches each kernel from Python on the CPU and
returns before the GPU has run it, so the CPU prepares kernel ``i + 1``
while the GPU runs kernel ``i``. A sequence of kernels with GPU times
``g_i`` and CPU dispatch times ``d_i`` therefore takes between
``max(sum g, sum d)`` (perfect overlap) and ``sum g + sum d`` (none, as for
one isolated, synchronised call, which is how :func:`helpers.bench.time_fn`
times). :func:`stream_time` is the model's in-order stream: one time in
that range, not an exact one (it ignores, for one, that the CPU can run
only a limited number of launches ahead of the GPU).
When ``sum d > sum g`` the sequence is *overhead-bound*: a larger batch
(more GPU work per kernel) costs no extra time until the GPU side catches up
(Horace He, "Making Deep Learning Go Brrrr From First Principles",
section "Overhead"). CUDA graphs and ``torch.compile(mode="reduce-overhead")``
shrink ``d``; fusion shrinks both ``g`` and the number of kernels.

No CPU-side trick removes the GPU's own fixed time per kernel: the front end
fetching the launch, the grid's first blocks filling the SMs, the last wave's
tail and the memory flush before the next kernel may start
(:func:`kernel_floor`). :func:`stream_time` adds it to every kernel's
``g_i`` when given ``kernel_floor_s``, so even a CUDA graph (``d = 0``) of
``n`` kernels takes at least ``n`` floors.

Units: seconds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

import numpy as np

from . import _validate
from .hardware import Accelerator, get_accelerator

KERNEL_FLOOR_S: Mapping[str, float] = MappingProxyType(
    {
        "Volta": 1.84e-6,
        "Turing": 1.84e-6,
        "Ampere": 1.84e-6,
        "Ada": 1.84e-6,
        "Hopper": 1.84e-6,
        "Blackwell": 1.84e-6,
        "CDNA 3": 1.84e-6,
    }
)
"""GPU-side time of a kernel that does (almost) nothing, per GPU generation (s).

Source: an NVBench "batch" measurement, which launches the same kernel back
to back behind a blocking kernel so that neither CPU dispatch nor
synchronisation is timed, only the GPU's time per kernel: a 4-element
histogram kernel on an RTX 3060 Laptop GPU (Ampere GA106) takes
0.001844 ms per launch (github.com/R100001/Programming-Massively-Parallel-Processors,
``Performance-Tests-NvBench/histogram/BenchResults.md``, run 1 of 350,
"Batch: 0.001844ms GPU"). No comparable published measurement was found for
the other generations (AMD's CDNA 3 included), so the Ampere figure stands in
for them; a measured
one replaces its entry here. It is a floor: cuBLAS GEMMs and cuDNN
convolutions add their own prologue, epilogue and tail on top.
"""

KERNEL_FLOOR_REFERENCE = "Ampere"
"""The generation whose kernel floor was measured (the NVBench run above).

:func:`kernel_floor` uses its figure for a generation :data:`KERNEL_FLOOR_S`
does not list (a GPU added to the catalog before anyone measured its
generation): the same stand-in every other listed generation already uses,
so a new generation prices like the rest instead of failing.
"""


def generation(acc: str | Accelerator) -> str:
    """The GPU generation of ``acc``: its catalog entry's :attr:`~helpers.hardware.Accelerator.generation`.

    Raises ``ValueError`` naming ``acc`` for a device that names none (one
    built by hand, or a measured CPU).

    >>> generation("H200")
    'Hopper'
    """
    device = get_accelerator(acc)
    if not device.generation:
        raise ValueError(
            f"acc: {device.name!r} names no GPU generation (Accelerator.generation is empty)"
        )
    return device.generation


def kernel_floor(acc: str | Accelerator) -> float:
    """GPU-side fixed time per kernel (s) on ``acc``: :data:`KERNEL_FLOOR_S` of its :func:`generation`.

    A generation the table does not list gets the measured
    :data:`KERNEL_FLOOR_REFERENCE` figure (see there); a device with no
    generation raises ``ValueError`` naming ``acc``.

    >>> round(kernel_floor("H100") * 1e6, 2)
    1.84
    """
    gen = generation(acc)
    return KERNEL_FLOOR_S.get(gen, KERNEL_FLOOR_S[KERNEL_FLOOR_REFERENCE])


def _pair(
    gpu_seconds: float | Sequence[float], dispatch_seconds: float | Sequence[float]
) -> tuple[np.ndarray, np.ndarray]:
    gpu = np.atleast_1d(np.asarray(gpu_seconds, dtype=float))
    cpu = np.atleast_1d(np.asarray(dispatch_seconds, dtype=float))
    if cpu.size == 1 and gpu.size > 1:
        cpu = np.full_like(gpu, cpu[0])
    if gpu.ndim != 1 or gpu.shape != cpu.shape or gpu.size == 0:
        raise ValueError(
            "gpu_seconds and dispatch_seconds must be non-empty and of equal length "
            "(or dispatch_seconds one number for every kernel)"
        )
    for name, values in (("gpu_seconds", gpu), ("dispatch_seconds", cpu)):
        if not np.all(np.isfinite(values)) or np.any(values < 0):
            raise ValueError(f"{name} must be finite and >= 0 everywhere")
    return gpu, cpu


def sequence_bounds(
    gpu_seconds: float | Sequence[float], dispatch_seconds: float | Sequence[float]
) -> tuple[float, float]:
    """``(max(sum g, sum d), sum g + sum d)``: the fastest and slowest a kernel sequence can run.

    Parameters
    ----------
    gpu_seconds : float or sequence of float
        Each kernel's time on the GPU (s).
    dispatch_seconds : float or sequence of float
        Each kernel's CPU dispatch time (s); one number applies to every kernel.

    Examples
    --------
    >>> [round(t * 1e6, 6) for t in sequence_bounds([10e-6, 2e-6, 2e-6], 5e-6)]
    [15.0, 29.0]
    """
    gpu, cpu = _pair(gpu_seconds, dispatch_seconds)
    total_gpu, total_cpu = float(gpu.sum()), float(cpu.sum())
    return max(total_gpu, total_cpu), total_gpu + total_cpu


def stream_time(
    gpu_seconds: float | Sequence[float],
    dispatch_seconds: float | Sequence[float],
    *,
    kernel_floor_s: float = 0.0,
) -> float:
    """Time of one in-order stream whose CPU dispatches kernel ``i`` while the GPU runs earlier ones.

    Kernel ``i`` is issued when the CPU has spent ``d_1 + ... + d_i`` and
    starts when both it is issued and kernel ``i - 1`` has finished:
    ``f_i = max(d_1 + ... + d_i, f_{i-1}) + g_i + t_k``, with ``t_k`` the
    GPU-side fixed time per kernel ``kernel_floor_s`` (:func:`kernel_floor`;
    0 leaves it out). The result ``f_n`` lies in :func:`sequence_bounds` of
    ``g_i + t_k``; a single kernel costs ``d + g + t_k``, the book's
    first-order model ``roofline + overhead``. With ``d = 0`` (a CUDA graph)
    ``n`` kernels still take ``sum g + n t_k``.

    Examples
    --------
    >>> round(stream_time([10e-6, 2e-6, 2e-6], 5e-6) * 1e6, 6)
    19.0
    >>> round(stream_time([1e-6] * 40, 0.0, kernel_floor_s=2e-6) * 1e6, 6)
    120.0
    """
    gpu, cpu = _pair(gpu_seconds, dispatch_seconds)
    gpu = gpu + _validate.non_negative("kernel_floor_s", kernel_floor_s)
    issued = np.cumsum(cpu)
    finish = 0.0
    for g, ready in zip(gpu.tolist(), issued.tolist()):
        finish = max(ready, finish) + g
    return finish


def overhead_bound(
    gpu_seconds: float | Sequence[float], dispatch_seconds: float | Sequence[float]
) -> bool:
    """Whether the CPU side is the longer one (``sum d > sum g``): the sequence is overhead-bound."""
    gpu, cpu = _pair(gpu_seconds, dispatch_seconds)
    return bool(cpu.sum() > gpu.sum())


def batch_scaling(seconds_small: float, seconds_large: float, ratio: float) -> float:
    """How much of a ``ratio``-times larger batch shows up in the time: ``(t_large / t_small - 1) / (ratio - 1)``.

    Horace He's test for the overhead regime: scale the work and watch the
    time. Near 0 the time did not move (overhead- or, below the knee,
    weight-read-bound: batching is free); near 1 it grew in proportion
    (compute-bound, or a tile that was already full).

    Examples
    --------
    >>> round(batch_scaling(1.0e-3, 1.1e-3, 2), 3)
    0.1
    """
    small = _validate.positive("seconds_small", seconds_small)
    large = _validate.positive("seconds_large", seconds_large)
    ratio = _validate.positive("ratio", ratio)
    if ratio <= 1:
        raise ValueError(f"ratio must be > 1, got {ratio}")
    return (large / small - 1) / (ratio - 1)
