"""The numbers a lab's checks compare a measurement with: kernels a call launches, and how much a time should grow.

Part of :mod:`helpers.labtools` (which re-exports :func:`count_kernels`,
:func:`floor_growth_ratio`, :func:`required_growth` and
:func:`extra_weight_passes`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import _args

_NO_KERNEL = frozenset(
    {
        "empty",
        "empty_like",
        "empty_strided",
        "detach",
        "lift_fresh",
        "alias",
        "_reshape_alias",
        "_unsafe_view",
        "as_strided",
        "view",
        "reshape",
    }
)


def count_kernels(fn: Callable[[], Any]) -> int:
    """Aten operators one call of ``fn()`` dispatches, views and allocations left out: on a GPU, about one kernel each.

    Counted with a ``TorchDispatchMode`` (any device, CPU included), so a lab can
    say how many launches a call pays for: what the dispatch floor of a
    decode step multiplies.
    """
    from torch.utils._python_dispatch import TorchDispatchMode

    class _Count(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.n = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            # views and allocations launch no kernel
            if not func.is_view and func.__name__.split(".")[0] not in _NO_KERNEL:
                self.n += 1
            return func(*args, **(kwargs or {}))

    if not callable(fn):
        raise TypeError("fn must be callable")
    with _Count() as counter:
        fn()
    return counter.n


def floor_growth_ratio(
    big_bytes: float,
    small_bytes: float,
    *,
    bandwidth: float,
    kernels: int,
    per_kernel_s: float,
) -> float:
    """Model ratio of two memory-bound calls' times when each pays a fixed cost per kernel.

    ``t(bytes) = bytes / bandwidth + kernels * per_kernel_s`` (the roofline's memory
    time plus a launch floor); returns ``t(big_bytes) / t(small_bytes)``. With no floor
    it is the bytes ratio; a floor pulls it toward 1, which is why a check that the
    time grows must use this ratio, not the bytes ratio, on a GPU whose small calls
    are launch-bound.

    >>> round(floor_growth_ratio(4.29e9, 8.4e6, bandwidth=4.8e12, kernels=32, per_kernel_s=6.5e-6), 2)
    5.25
    """
    big_bytes = _args.non_negative("big_bytes", big_bytes)
    small_bytes = _args.non_negative("small_bytes", small_bytes)
    bandwidth = _args.positive("bandwidth", bandwidth)
    kernels = _args.non_negative_int("kernels", kernels)
    per_kernel_s = _args.non_negative("per_kernel_s", per_kernel_s)
    floor = kernels * per_kernel_s
    small = small_bytes / bandwidth + floor
    if small <= 0:
        raise ValueError("small_bytes and the floor are both 0: the ratio is undefined")
    return (big_bytes / bandwidth + floor) / small


def required_growth(
    big_bytes: float,
    small_bytes: float,
    *,
    bandwidth: float,
    kernels: int,
    per_kernel_s: float,
    cap: float = 10.0,
    margin: float = 0.5,
) -> float:
    """How much longer a lab requires its largest memory-bound call to take than its smallest.

    ``min(cap, margin * floor_growth_ratio(...))``: at most ``cap`` (a CPU, whose small
    calls are not launch-bound, keeps Lab 5's old tenfold), and never more than
    ``margin`` of what the roofline with a launch floor of ``kernels * per_kernel_s``
    predicts (an H200, whose smallest attention step is mostly launches).

    >>> round(required_growth(4.29e9, 8.4e6, bandwidth=4.8e12, kernels=32, per_kernel_s=6.5e-6), 2)
    2.63
    >>> required_growth(4.29e9, 8.4e6, bandwidth=320e9, kernels=32, per_kernel_s=6.5e-6)
    10.0
    """
    cap = _args.positive("cap", cap)
    margin = _args.positive("margin", margin)
    ratio = floor_growth_ratio(
        big_bytes,
        small_bytes,
        bandwidth=bandwidth,
        kernels=kernels,
        per_kernel_s=per_kernel_s,
    )
    return min(cap, margin * ratio)


def extra_weight_passes(
    t_first: float, t_second: float, *, weight_bytes: float, bandwidth: float
) -> float:
    """Extra passes over a layer's weights that a step up in batch costs: ``max(0, t2 - t1) / (w / W)``.

    Below the knee the roofline expects the same time at both batches (the
    weights are read once either way), so any growth is counted in units of
    one pass over the ``weight_bytes`` at ``bandwidth``. On a CPU this is the
    weight packing that :mod:`helpers.calibration` fits as ``pack_passes``
    (the library copies the weights into its blocked layout on every eager
    GEMM call, but not for a matrix-vector product at batch 1).

    >>> round(extra_weight_passes(0.018, 0.0365, weight_bytes=256e6, bandwidth=14e9), 2)
    1.01
    """
    t_first = _args.positive("t_first", t_first)
    t_second = _args.positive("t_second", t_second)
    weight_bytes = _args.positive("weight_bytes", weight_bytes)
    bandwidth = _args.positive("bandwidth", bandwidth)
    return max(0.0, t_second - t_first) / (weight_bytes / bandwidth)
