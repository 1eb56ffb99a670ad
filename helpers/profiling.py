"""Classifying what a profiler recorded: matrix kernels against elementwise ones.

The source text tells readers to profile. A profile of a real network lists
many more kernels than its matrix layers: batch norms, activations, adds and
copies, each a pass over memory (:mod:`helpers.fusion`). :func:`kernel_kind`
sorts a kernel or operator name into ``"matrix"`` (GEMM or convolution, tensor
cores), ``"elementwise"`` (vector units, memory-bound) or ``"other"``, and
:func:`summarize` adds up counts and times per kind from ``(name, seconds)``
pairs, such as the events of ``torch.profiler``. No torch is imported here.
"""

from __future__ import annotations

from collections.abc import Iterable

from . import _validate

MATRIX_PATTERNS = (
    "conv",
    "gemm",
    "matmul",
    "addmm",
    "aten::mm",
    "linear",
    "xmma",
    "cutlass",
)
"""Substrings of a lower-cased name that mark a GEMM or convolution (cuDNN, cuBLAS, oneDNN, aten)."""
ELEMENTWISE_PATTERNS = (
    "batch_norm",
    "bn_fw",
    "relu",
    "add",
    "mul",
    "elementwise",
    "vectorized",
    "pool",
    "copy",
    "silu",
)
"""Substrings that mark an elementwise or pooling kernel (memory-bound, vector units)."""


def kernel_kind(name: str) -> str:
    """``"matrix"``, ``"elementwise"`` or ``"other"`` for a kernel or operator name.

    Examples
    --------
    >>> kernel_kind("aten::conv2d"), kernel_kind("aten::batch_norm"), kernel_kind("aten::empty")
    ('matrix', 'elementwise', 'other')
    """
    key = _validate.name("name", name)
    if any(p in key for p in MATRIX_PATTERNS):
        return "matrix"
    if any(p in key for p in ELEMENTWISE_PATTERNS):
        return "elementwise"
    return "other"


def summarize(events: Iterable[tuple[str, float]]) -> dict[str, tuple[int, float]]:
    """``{kind: (count, seconds)}`` over ``(name, seconds)`` pairs, for every kind seen.

    Examples
    --------
    >>> s = summarize([("aten::conv2d", 2e-3), ("aten::relu_", 1e-4), ("aten::add_", 2e-4)])
    >>> s["matrix"], s["elementwise"][0], round(s["elementwise"][1] * 1e6)
    ((1, 0.002), 2, 300)
    """
    out: dict[str, tuple[int, float]] = {}
    for name, seconds in events:
        seconds = _validate.non_negative("seconds", seconds)
        kind = kernel_kind(name)
        count, total = out.get(kind, (0, 0.0))
        out[kind] = (count + 1, total + seconds)
    return out
