"""Achievable shares of a GPU's datasheet peaks, from the published peak measurements (:mod:`helpers.published`).

A GPU's achievable compute fraction is its best published GEMM-library
(cuBLAS, ``torch.mm``) matmul rate over the datasheet peak in the same
precision class; its memory fraction the best published bandwidth over the
datasheet's. :func:`helpers.validation` uses them for every prediction of the
second-order model; :func:`achievable_device` applies them to a catalog GPU
(:func:`helpers.roofline.achievable`).
"""

from __future__ import annotations

import re
import statistics
from functools import cache

from . import roofline
from .hardware import Accelerator, get_accelerator
from .published import PublishedPoint, load

_GEMM_LIBRARY = re.compile(r"torch|mamf|cublas", re.IGNORECASE)


def point_gpu(p: PublishedPoint) -> str:
    """The GPU a published point was measured on; ``ValueError`` if the point names none."""
    if p.gpu is None:
        raise ValueError("this kind needs a GPU")
    return p.gpu


def point_precision(p: PublishedPoint) -> str:
    """The precision of a published point; ``ValueError`` if the point names none."""
    if p.precision is None:
        raise ValueError("this kind needs a precision")
    return p.precision


def peak_fraction(p: PublishedPoint) -> float | None:
    """Measured / datasheet for a peak point the model can use, else ``None``."""
    acc = get_accelerator(point_gpu(p))
    if p.quantity == "memory_bandwidth":
        return p.value / acc.memory_bandwidth
    benchmark = p.setting["benchmark"]
    if (
        p.quantity == "matmul_flops"
        and _GEMM_LIBRARY.search(benchmark)
        and "microkernel" not in benchmark
    ):
        if p.precision in acc.peak_flops:
            return p.value / acc.flops(point_precision(p))
    return None


PRECISION_CLASS = {"fp16": "16-bit", "bf16": "16-bit", "fp8": "8-bit", "int8": "8-bit"}
"""Precisions that share a tensor-core rate, and so an achievable fraction; others stand alone."""


def _class(dtype: str) -> str:
    return PRECISION_CLASS.get(dtype, dtype)


@cache
def fraction_table() -> dict[tuple[str, str, str], float]:
    """Best fraction per (GPU, quantity, precision class) over that GPU's usable peak points."""
    best: dict[tuple[str, str, str], float] = {}
    for p in load("peak"):
        f = peak_fraction(p)
        if f is not None:
            key = (point_gpu(p), p.quantity, _class(p.precision or ""))
            best[key] = max(best.get(key, 0.0), f)
    return best


def _architecture(name: str) -> str:
    """GPUs that share an architecture whitepaper share an architecture (A100s; H100, H200, H800)."""
    return get_accelerator(name).whitepaper or name


def _fraction(
    name: str, quantity: str, dtype: str, exclude_architecture: bool
) -> float:
    """The first of: own at ``dtype``, own at any precision, others' median at ``dtype``, others' median."""
    table = fraction_table()
    dtype = _class(dtype)
    own = (
        []
        if exclude_architecture
        else [(g, q, d) for (g, q, d) in table if g == name and q == quantity]
    )
    arch = _architecture(name)
    others = [
        (g, q, d)
        for (g, q, d) in table
        if g != name
        and q == quantity
        and not (exclude_architecture and _architecture(g) == arch)
    ]
    for keys, pick in (
        ([k for k in own if k[2] == dtype], max),
        (own, max),
        ([k for k in others if k[2] == dtype], statistics.median),
        (others, statistics.median),
    ):
        if keys:
            return min(pick(table[k] for k in keys), 1.0)
    raise KeyError(f"no published {quantity} measurement to derive a fraction from")


def fractions(
    gpu: str | Accelerator, dtype: str = "bf16", *, exclude_architecture: bool = False
) -> tuple[float, float]:
    """Achievable (compute, memory) fractions of ``gpu``'s datasheet peaks, in ``dtype``.

    The compute fraction is the best published matmul measurement through a
    GEMM library (cuBLAS, ``torch.mm``) over the datasheet peak: of that GPU
    in ``dtype``'s class (:data:`PRECISION_CLASS`; 8-bit matmuls reach a
    smaller share of their peak than 16-bit ones on the same chip), else of
    that GPU in any precision, else the median over the other GPUs in that
    class, else in any precision. The
    memory fraction is the best published bandwidth measurement over the
    datasheet's, else the other GPUs' median. Both are capped at 1.
    ``exclude_architecture`` ignores the measurements of the GPU and of every
    GPU of its architecture (to predict them from other chips).

    Examples
    --------
    >>> [round(f, 3) for f in fractions("H100 SXM", "bf16")]
    [0.803, 0.949]
    >>> round(fractions("H100 SXM", "fp8")[0], 3)
    0.709
    """
    name = get_accelerator(gpu).name
    return (
        _fraction(name, "matmul_flops", dtype, exclude_architecture),
        _fraction(name, "memory_bandwidth", "", exclude_architecture),
    )


def achievable_device(gpu: str | Accelerator, dtype: str = "bf16") -> Accelerator:
    """``gpu`` derated by its :func:`fractions` in ``dtype`` (:func:`helpers.roofline.achievable`)."""
    c, m = fractions(gpu, dtype)
    return roofline.achievable(gpu, compute_fraction=c, memory_fraction=m)


__all__ = [
    "PRECISION_CLASS",
    "achievable_device",
    "fraction_table",
    "fractions",
    "peak_fraction",
    "point_gpu",
    "point_precision",
]
