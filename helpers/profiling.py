"""Classifying what a profiler recorded: matrix kernels against elementwise ones.

The source text tells readers to profile. A profile of a real network lists
many more kernels than its matrix layers: batch norms, activations, adds and
copies, each a pass over memory (:mod:`helpers.fusion`). Each GPU kernel is
sorted into ``"matrix"`` (GEMM or convolution, tensor cores), ``"elementwise"``
(vector units, memory-bound) or ``"other"``.

**From the op that launched it first.** Kernel names are the libraries'
own and change with every GPU generation and library version: a Turing
cuDNN convolution is ``turing_fp16_s1688cudnn_fp16_…_relu_…`` (its name
says "relu" because the epilogue could fuse one), a Hopper cuBLAS GEMM
``nvjet_tst_…``. The profiler knows which aten operator launched each
kernel (``aten::cudnn_convolution``, ``aten::cudnn_batch_norm``), and the
operator's name is stable. :func:`launched_kernels` reads that from
``torch.profiler`` events, :func:`kernel_class` classifies by the innermost
known operator and falls back to :func:`kernel_kind`'s name patterns, and
:func:`summarize` adds up counts and times per kind. No torch is imported
here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from . import _args

MATRIX_PATTERNS = (
    "conv",
    "gemm",
    "gemv",
    "matmul",
    "addmm",
    "aten::mm",
    "aten::bmm",
    "linear",
    "xmma",
    "cutlass",
    "cudnn",
    "s1688",
    "h1688",
    "s884",
    "h884",
    "16816",
    "i8816",
    "fprop",
    "dgrad",
    "wgrad",
    "winograd",
    "implicit",
    "nvjet",
)
"""Substrings of a lower-cased kernel or operator name that mark a GEMM or convolution.

cuBLAS, cuDNN, CUTLASS, oneDNN and aten spellings: Turing's ``s1688``/``h1688``
and Volta's ``s884`` tensor-core tiles, Ampere's ``16816``, cuDNN's ``fprop``,
``winograd`` and ``implicit`` (implicit GEMM), Hopper's ``nvjet`` cuBLAS kernels.
"""
FIRST_ELEMENTWISE_PATTERNS = (
    "batch_norm",
    "bn_fw",
    "bn_bw",
    "nchwtonhwc",
    "nhwctonchw",
)
"""Checked before :data:`MATRIX_PATTERNS`: cuDNN's batch-norm and layout kernels have "cudnn" in their names."""
ELEMENTWISE_PATTERNS = (
    "relu",
    "add",
    "mul",
    "elementwise",
    "vectorized",
    "pool",
    "copy",
    "silu",
    "softmax",
    "norm",
    "clamp",
    "threshold",
)
"""Substrings that mark an elementwise, normalization or pooling kernel (memory-bound, vector units)."""

_OP_KINDS = (
    (
        "elementwise",
        re.compile(
            r"^aten::(\w*batch_norm\w*|layer_norm|rms_norm|\w*relu\w*|threshold\w*|"
            r"add_?|sub_?|mul_?|div_?|clamp\w*|sigmoid_?|silu_?|gelu_?|tanh_?|"
            r"\w*pool\w*|copy_|_to_copy|contiguous|clone|\w*softmax\w*|cat|fill_|zero_)$"
        ),
    ),
    (
        "matrix",
        re.compile(
            r"^aten::(\w*conv\w*|_convolution\w*|convolution\w*|mm|addmm|bmm|baddbmm|"
            r"matmul|linear|addmv|mv|einsum|_scaled_mm|\w*scaled_dot_product\w*)$"
        ),
    ),
)


def kernel_kind(name: str) -> str:
    """``"matrix"``, ``"elementwise"`` or ``"other"`` from a kernel's or operator's name alone.

    Batch-norm and layout kernels first (cuDNN names them ``cudnn::bn_fw_…``),
    then the matrix patterns (so a cuDNN convolution whose name mentions its
    fused ``relu`` epilogue stays a convolution), then the elementwise ones.
    Prefer :func:`kernel_class`, which asks the launching operator first.

    Examples
    --------
    >>> kernel_kind("aten::conv2d"), kernel_kind("aten::batch_norm"), kernel_kind("aten::empty")
    ('matrix', 'elementwise', 'other')
    >>> kernel_kind("turing_fp16_s1688cudnn_fp16_128x128_ldg8_relu_f2f_exp_small_nhwc_tn_v1")
    'matrix'
    """
    key = _args.name("name", name)
    if any(p in key for p in FIRST_ELEMENTWISE_PATTERNS):
        return "elementwise"
    if any(p in key for p in MATRIX_PATTERNS):
        return "matrix"
    if any(p in key for p in ELEMENTWISE_PATTERNS):
        return "elementwise"
    return "other"


def op_kind(op: str) -> str | None:
    """The kind of an aten operator (``"aten::cudnn_convolution"`` → ``"matrix"``), ``None`` if unknown.

    >>> op_kind("aten::cudnn_convolution"), op_kind("aten::cudnn_batch_norm"), op_kind("aten::empty")
    ('matrix', 'elementwise', None)
    """
    key = _args.name("op", op)
    for kind, pattern in _OP_KINDS:
        if pattern.match(key):
            return kind
    return None


@dataclass(frozen=True)
class LaunchedKernel:
    """One GPU kernel with the operators that launched it, innermost first.

    Attributes
    ----------
    name : str
        The kernel's name as the profiler recorded it.
    ops : tuple of str
        The launching operator and its parents (``("aten::cudnn_convolution",
        "aten::_convolution", "aten::convolution", "aten::conv2d")``); empty if unknown.
    seconds : float
        The kernel's GPU time.
    """

    name: str
    ops: tuple[str, ...]
    seconds: float


def kernel_class(name: str, *, ops: Sequence[str] = ()) -> str:
    """The kind of a kernel: from the innermost launching operator whose kind is known, else from its name.

    >>> kernel_class("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT", ops=("aten::mm", "aten::matmul"))
    'matrix'
    >>> kernel_class("void cudnn::engines_precompiled::nchwToNhwcKernel", ops=("aten::cudnn_convolution",))
    'matrix'
    """
    for op in ops:
        kind = op_kind(op)
        if kind is not None:
            return kind
    return kernel_kind(name)


def launched_kernels(events: Iterable[Any]) -> list[LaunchedKernel]:
    """Every GPU kernel of a ``torch.profiler`` profile with its launching operators.

    ``events`` is ``prof.events()``: each CPU operator event lists the kernels
    it launched (``event.kernels``: ``name``, ``duration`` in µs) and its
    parent (``event.cpu_parent``). Duck-typed, so no torch is needed here.
    """
    out = []
    for event in events:
        kernels = getattr(event, "kernels", None) or ()
        if not kernels:
            continue
        ops = []
        node = event
        while node is not None:
            ops.append(str(node.name))
            node = getattr(node, "cpu_parent", None)
        for kernel in kernels:
            out.append(
                LaunchedKernel(
                    str(kernel.name), tuple(ops), float(kernel.duration) / 1e6
                )
            )
    return out


def unclassified(kernels: Iterable[LaunchedKernel]) -> list[str]:
    """Names of the kernels :func:`kernel_class` calls ``"other"`` (sorted, each once): what a lab warns about."""
    return sorted(
        {k.name for k in kernels if kernel_class(k.name, ops=k.ops) == "other"}
    )


def summarize(
    events: Iterable[tuple[str, float] | LaunchedKernel],
) -> dict[str, tuple[int, float]]:
    """``{kind: (count, seconds)}`` over ``(name, seconds)`` pairs or :class:`LaunchedKernel`\\ s.

    A pair is classified by its name (:func:`kernel_kind`), a launched kernel by
    its operators first (:func:`kernel_class`).

    Examples
    --------
    >>> s = summarize([("aten::conv2d", 2e-3), ("aten::relu_", 1e-4), ("aten::add_", 2e-4)])
    >>> s["matrix"], s["elementwise"][0], round(s["elementwise"][1] * 1e6)
    ((1, 0.002), 2, 300)
    """
    out: dict[str, tuple[int, float]] = {}
    for event in events:
        if isinstance(event, LaunchedKernel):
            kind = kernel_class(event.name, ops=event.ops)
            seconds = event.seconds
        else:
            name, seconds = event
            kind = kernel_kind(name)
        seconds = _args.non_negative("seconds", seconds)
        count, total = out.get(kind, (0, 0.0))
        out[kind] = (count + 1, total + seconds)
    return out
