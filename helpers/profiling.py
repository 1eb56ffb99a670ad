"""Classifying what a profiler recorded: matrix kernels against elementwise ones.

The source text tells readers to profile. A profile of a real network lists
many more kernels than its matrix layers: batch norms, activations, adds and
copies, each a pass over memory (:mod:`helpers.fusion`). Each GPU kernel is
sorted into ``"matrix"`` (GEMM or convolution, tensor cores), ``"elementwise"``
(vector units, memory-bound), ``"layout"`` (cuDNN's layout passes) or ``"other"``.

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
LAYOUT_PATTERNS = (
    "nchwtonhwc",
    "nhwctonchw",
    "tensortransform",
    "computeoffsets",
)
"""Substrings of cuDNN's layout and offset helper kernels: a memory pass each, classed ``"layout"``.

Checked before everything else, even before the launching operator: they run
under ``aten::cudnn_convolution`` but do no matrix work (L4-12).
"""
FIRST_ELEMENTWISE_PATTERNS = (
    "batch_norm",
    "bn_fw",
    "bn_bw",
)
"""Checked before :data:`MATRIX_PATTERNS`: cuDNN's batch-norm kernels have "cudnn" in their names."""
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
    """``"matrix"``, ``"elementwise"``, ``"layout"`` or ``"other"`` from a kernel's or operator's name alone.

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
    if any(p in key for p in LAYOUT_PATTERNS):
        return "layout"
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

    A cuDNN layout or offset kernel (:data:`LAYOUT_PATTERNS`) is ``"layout"``
    whatever launched it: a memory pass, not matrix work.

    >>> kernel_class("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT", ops=("aten::mm", "aten::matmul"))
    'matrix'
    >>> kernel_class("void cudnn::engines_precompiled::nchwToNhwcKernel", ops=("aten::cudnn_convolution",))
    'layout'
    """
    if any(p in _args.name("name", name) for p in LAYOUT_PATTERNS):
        return "layout"
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


# --- a profiler trace as a timeline ------------------------------------------------

TRACE_CPU_CATEGORIES = ("cpu_op", "user_annotation", "cuda_runtime", "cuda_driver")
"""Chrome-trace categories drawn in the CPU lane: operators, ``record_function`` ranges, launch calls."""
TRACE_GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation")
"""Chrome-trace categories drawn in the GPU lane: kernels, copies and memsets."""


@dataclass(frozen=True)
class TraceEvent:
    """One complete event of a profiler trace, placed on a timeline.

    Attributes
    ----------
    name : str
        The operator's, launch call's or kernel's name.
    lane : str
        ``"cpu"`` (operators and launch calls, on the host) or ``"gpu"`` (kernels).
    start : float
        Seconds from the first event of the trace.
    seconds : float
        Duration in seconds.
    depth : int
        Nesting depth in its lane (0 = a top-level operator; its callees 1, 2, ...).
    kind : str
        ``"matrix"``, ``"elementwise"``, ``"layout"``, ``"launch"`` or ``"other"``.
    """

    name: str
    lane: str
    start: float
    seconds: float
    depth: int
    kind: str


def load_trace(trace: Any) -> dict:
    """A Chrome trace as a dict: from a path (``prof.export_chrome_trace(path)``'s file) or a dict."""
    import json
    from pathlib import Path

    if isinstance(trace, dict):
        data = trace
    elif isinstance(trace, (str, Path)):
        data = json.loads(Path(trace).read_text(encoding="utf-8"))
    else:
        raise TypeError(f"trace must be a path or a dict, got {type(trace).__name__}")
    if not isinstance(data.get("traceEvents"), list):
        raise KeyError("trace has no 'traceEvents' list (not a Chrome trace)")
    return data


def _event_kind(name: str, category: str) -> str:
    if category in ("cuda_runtime", "cuda_driver"):
        return "launch"
    if category == "user_annotation":
        return "other"
    return kernel_kind(name)


def timeline(trace: Any) -> list[TraceEvent]:
    """The complete events of a ``torch.profiler`` Chrome trace, CPU lane above GPU lane, in time order.

    ``trace`` is a path to the JSON that ``prof.export_chrome_trace`` wrote, or
    its parsed dict. Operators (``cpu_op``), ``record_function`` ranges and the
    CUDA runtime's launch calls go to the ``"cpu"`` lane, with a nesting depth
    computed from their intervals per thread; kernels, copies and memsets to
    the ``"gpu"`` lane. Times are in seconds from the first kept event (the
    trace's microseconds / 1e6). Each event is classified by name
    (:func:`kernel_kind`; launch calls are ``"launch"``).
    """
    data = load_trace(trace)
    raw = [
        e
        for e in data["traceEvents"]
        if e.get("ph") == "X"
        and e.get("cat") in TRACE_CPU_CATEGORIES + TRACE_GPU_CATEGORIES
        and "ts" in e
    ]
    if not raw:
        return []
    t0 = min(float(e["ts"]) for e in raw)
    out: list[TraceEvent] = []
    open_until: dict[
        Any, list[float]
    ] = {}  # per (lane, thread): ends of the enclosing events
    for e in sorted(raw, key=lambda e: (float(e["ts"]), -float(e.get("dur", 0)))):
        lane = "gpu" if e["cat"] in TRACE_GPU_CATEGORIES else "cpu"
        start, dur = float(e["ts"]), float(e.get("dur", 0))
        stack = open_until.setdefault((lane, e.get("tid")), [])
        while stack and stack[-1] <= start:
            stack.pop()
        depth = len(stack) if lane == "cpu" else 0
        if lane == "cpu":
            stack.append(start + dur)
        out.append(
            TraceEvent(
                str(e.get("name", "")),
                lane,
                (start - t0) / 1e6,
                dur / 1e6,
                depth,
                _event_kind(str(e.get("name", "")) or "?", e["cat"]),
            )
        )
    return out


def trim_trace(trace: Any, *, annotation: str | None = None) -> dict:
    """A small Chrome trace: only the complete CPU and GPU events (no ``args``, no metadata).

    With ``annotation`` (a ``record_function`` name, e.g. ``"step"``) only the
    events inside that range's first occurrence are kept, GPU kernels included
    when they start inside it. What the book commits as data (a trace of a
    whole profile runs to megabytes).
    """
    data = load_trace(trace)
    keep = [
        {k: e[k] for k in ("name", "cat", "ph", "ts", "dur", "pid", "tid") if k in e}
        for e in data["traceEvents"]
        if e.get("ph") == "X"
        and e.get("cat") in TRACE_CPU_CATEGORIES + TRACE_GPU_CATEGORIES
    ]
    if annotation is not None:
        ranges = [
            e
            for e in keep
            if e["cat"] == "user_annotation" and e.get("name") == annotation
        ]
        if not ranges:
            raise KeyError(f"annotation {annotation!r} is not in the trace")
        lo = float(ranges[0]["ts"])
        hi = lo + float(ranges[0].get("dur", 0))
        keep = [e for e in keep if lo <= float(e["ts"]) <= hi]
    return {"traceEvents": keep, "displayTimeUnit": "us"}


class _QuietNative:
    """Send what native code writes to file descriptors 1 and 2 to /dev/null (the profiler's USDT lines).

    Python's own ``sys.stdout`` is untouched when it is not fd 1 (a notebook's is
    a stream object), so a lab's prints still show.
    """

    def __enter__(self) -> None:
        import os
        import sys

        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (AttributeError, ValueError):
                pass
        self._null = os.open(os.devnull, os.O_WRONLY)
        self._saved = [os.dup(1), os.dup(2)]
        os.dup2(self._null, 1)
        os.dup2(self._null, 2)

    def __exit__(self, *exc: object) -> None:
        import os

        os.dup2(self._saved[0], 1)
        os.dup2(self._saved[1], 2)
        for fd in (*self._saved, self._null):
            os.close(fd)


def record_trace(
    fn: Any,
    path: Any,
    *,
    warmup: int = 2,
    steps: int = 5,
    annotation: str = "step",
) -> dict:
    """Profile ``steps`` calls of ``fn()`` with ``torch.profiler``; write the fastest one's trimmed trace to ``path``.

    ``warmup`` untimed calls first (cuDNN's autotune, allocator growth), then
    ``steps`` calls, each inside its own ``record_function`` range, with CUDA
    activity when a GPU is present (synchronized inside each range). The
    fastest range is kept (on a shared machine another job can only slow a
    step down, as in :func:`helpers.bench.time_fn`'s best-of-N use), trimmed to
    its own events (:func:`trim_trace`) and renamed ``annotation``. Returns the
    trimmed trace, which :func:`timeline` reads.
    """
    import json
    import os
    import tempfile
    from pathlib import Path

    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    if not callable(fn):
        raise TypeError("fn must be callable")
    warmup = _args.non_negative_int("warmup", warmup)
    steps = _args.positive_int("steps", steps)
    for _ in range(warmup):
        fn()
    on_gpu = torch.cuda.is_available()
    if on_gpu:
        torch.cuda.synchronize()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_gpu else [])
    names = [f"{annotation}#{i}" for i in range(steps)]
    with _QuietNative(), profile(activities=activities) as prof:
        for name in names:
            with record_function(name):
                fn()
                if on_gpu:
                    torch.cuda.synchronize()
    handle, raw = tempfile.mkstemp(suffix=".json")
    os.close(handle)
    try:
        prof.export_chrome_trace(raw)
        data = load_trace(raw)
    finally:
        os.unlink(raw)
    ranges = {
        e["name"]: float(e.get("dur", 0))
        for e in data["traceEvents"]
        if e.get("cat") == "user_annotation" and e.get("name") in names
    }
    fastest = min(ranges, key=ranges.__getitem__)
    trimmed = trim_trace(data, annotation=fastest)
    for e in trimmed["traceEvents"]:
        if e.get("name") == fastest:
            e["name"] = annotation
    trimmed["steps"] = f"fastest of {steps} profiled steps"
    Path(path).write_text(json.dumps(trimmed, separators=(",", ":")), encoding="utf-8")
    return trimmed


_KIND_HATCH = {
    "matrix": ("#4477aa", ""),
    "elementwise": ("#ee7733", "//"),
    "layout": ("#aa3377", "xx"),
    "launch": ("#bbbbbb", ".."),
    "other": ("#dddddd", ""),
}


def plot_timeline(
    events: Sequence[TraceEvent],
    *,
    ax: Any = None,
    title: str = "",
    max_depth: int = 3,
    label_min: float = 0.06,
) -> Any:
    """Draw a timeline: CPU operators (by nesting depth) above, GPU kernels below; returns the axes.

    Each bar's colour and hatching say its kind (matrix, elementwise, layout,
    launch, other), so it reads without colour; bars wider than ``label_min``
    of the span carry their operator's name. A trace without GPU events is
    drawn as CPU operators only, and the GPU row says so.
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    if not events:
        raise ValueError("events must hold at least one trace event")
    if ax is None:
        _, ax = plt.subplots(figsize=(9.0, 3.2))
    end = max(e.start + e.seconds for e in events)
    span = end or 1.0
    scale, unit = (1e6, "µs") if span < 10e-3 else (1e3, "ms")
    cpu = [e for e in events if e.lane == "cpu" and e.depth < max_depth]
    gpu = [e for e in events if e.lane == "gpu"]
    depth_rows = max((e.depth for e in cpu), default=0) + 1
    rows = {("cpu", d): depth_rows - d for d in range(depth_rows)}
    for e in cpu + gpu:
        y = rows[("cpu", e.depth)] if e.lane == "cpu" else 0
        colour, hatch = _KIND_HATCH.get(e.kind, _KIND_HATCH["other"])
        ax.broken_barh(
            [(scale * e.start, scale * max(e.seconds, span * 1e-4))],
            (y - 0.4, 0.8),
            facecolors=colour,
            edgecolor="black",
            linewidth=0.3,
            hatch=hatch,
        )
        if e.seconds >= label_min * span:
            short = e.name.replace("aten::", "")[:18]
            ax.text(
                scale * (e.start + e.seconds / 2),
                y,
                short,
                ha="center",
                va="center",
                fontsize=7,
                clip_on=True,
            )
    labels = ["GPU kernels" if gpu else "GPU: none (CPU run)"] + [
        f"CPU depth {d}" for d in range(depth_rows - 1, -1, -1)
    ]
    ax.set_yticks(range(depth_rows + 1), labels)
    ax.set_ylim(-0.6, depth_rows + 0.6)
    ax.set_xlim(0, scale * span)
    ax.set_xlabel(f"time from the first event ({unit})")
    kinds = sorted({e.kind for e in cpu + gpu})
    ax.legend(
        handles=[
            Patch(
                facecolor=_KIND_HATCH[k][0],
                hatch=_KIND_HATCH[k][1],
                edgecolor="black",
                label=k,
            )
            for k in kinds
            if k in _KIND_HATCH
        ],
        fontsize=7,
        loc="upper right",
        ncol=len(kinds),
    )
    if title:
        ax.set_title(title)
    return ax


def resnet_bottleneck(*, c_in: int = 64, width: int = 64, c_out: int = 256) -> Any:
    """A ResNet-50 bottleneck in eval mode: 1 × 1, 3 × 3, 1 × 1 convolutions with batch norms, a projection shortcut.

    Stage 1's first block by default (64 → 64 → 256, shortcut 64 → 256): four
    convolutions, four batch norms, two ReLUs inside, the residual add and a
    final ReLU, as eager PyTorch launches them. A ``torch.nn.Module`` on the CPU
    in fp32, no gradients; move it with ``.to(device, dtype)``.
    """
    import torch

    for param, value in (("c_in", c_in), ("width", width), ("c_out", c_out)):
        _args.positive_int(param, value)

    def conv_bn(a: int, b: int, k: int) -> list:
        return [
            torch.nn.Conv2d(a, b, k, padding=k // 2, bias=False),
            torch.nn.BatchNorm2d(b),
        ]

    class Bottleneck(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body = torch.nn.Sequential(
                *conv_bn(c_in, width, 1),
                torch.nn.ReLU(),
                *conv_bn(width, width, 3),
                torch.nn.ReLU(),
                *conv_bn(width, c_out, 1),
            )
            self.shortcut = torch.nn.Sequential(*conv_bn(c_in, c_out, 1))

        def forward(self, x: Any) -> Any:
            return torch.relu(self.body(x) + self.shortcut(x))

    return Bottleneck().eval().requires_grad_(False)


def profile_kinds(
    fn: Any,
) -> tuple[dict[str, tuple[int, float]], list[str]]:
    """Profile one call of ``fn()`` and sum its work per kind: ``({kind: (count, seconds)}, unclassified)``.

    On a GPU, every kernel with the operators that launched it
    (:func:`launched_kernels`, classified by :func:`kernel_class`) and the names
    of those classified neither way; on a CPU, the top-level operators by name
    (a CPU runs each as one kernel), with nothing unclassified reported.
    """
    import torch
    from torch.profiler import ProfilerActivity, profile

    if not callable(fn):
        raise TypeError("fn must be callable")
    on_gpu = torch.cuda.is_available()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_gpu else [])
    with _QuietNative(), profile(activities=activities) as prof:
        fn()
        if on_gpu:
            torch.cuda.synchronize()
    if on_gpu:
        kernels = launched_kernels(prof.events())
        return summarize(kernels), unclassified(kernels)
    ops = [
        (e.name, e.cpu_time_total / 1e6) for e in prof.events() if e.cpu_parent is None
    ]
    return summarize(ops), []
