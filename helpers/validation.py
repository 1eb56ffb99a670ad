"""The book's time model against published GPU measurements (:mod:`helpers.published`).

Two models predict every published number, each built only from the
helpers the chapters teach:

* **naive**: the first-order roofline at the datasheet's peaks, no overhead
  (:func:`helpers.roofline.breakdown`, :func:`helpers.convnets.resnet50_step_time`,
  :func:`helpers.inference.decode_step`, a link at its line rate);
* **second-order**: what real hardware adds. Achievable peaks
  (:func:`helpers.roofline.achievable`), tile and wave quantization with
  split-K (:func:`helpers.ops.gemm_time`), the vector roof and fusion of
  ResNet-50's kernels in one asynchronous stream
  (:func:`helpers.convnets.resnet50_stream_time`), a fixed cost per call,
  and a link's achieved share of its line rate (:func:`helpers.kvcache.link_time`).

Where each parameter comes from, by a rule fixed before any error was
computed (the appendix page prints which points calibrate and which
validate):

* **achievable fractions** of a GPU's matmul peak and memory bandwidth: the
  best published *peak* measurement of that GPU (:func:`fractions`);
  GPUs with none take the median fraction of the GPUs that have one;
* **tile shapes**: NVIDIA's 128 x 128, 128 x 64 and 64 x 64
  (:data:`helpers.ops.GEMM_TILES`); the SM counts are the whitepapers';
* **one calibration point per series** (a GPU with one software stack, or
  one link set-up) fixes its one free parameter, the fixed cost: the
  series' smallest GEMM (``gemm``), its batch-1 point (``resnet50``), its
  smallest batch (``decode``), its smallest message (``kv_transfer``).
  Everything else in the series validates.
* The *peak* kind itself is predicted leave-one-architecture-out: a GPU's
  achievable fraction is taken to be the median of the fractions of GPUs of
  other architectures (an H100 is predicted from neither the H200 nor the H800).

Errors are relative, ``(predicted - published) / published``, in the
published quantity (FLOP/s, bytes/s, images/s, tokens/s or seconds).
"""

from __future__ import annotations

import math
import re
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Literal

import numpy as np

from . import convnets, dispatch, inference, kvcache, ops, roofline
from .formatting import format_si, markdown_table
from .hardware import Accelerator, Link, get_accelerator
from .published import KINDS, Kind, Measurement, load

Role = Literal["calibration", "validation", "excluded"]

LINK_EFFICIENCY = 0.87
"""Share of the line rate a bulk RDMA transfer reaches: Mooncake FAST'25, Fig. 12,
87 GB/s on 4 x 200 Gb/s (:data:`helpers.papers.MOONCAKE_FIG12_TRANSFER_ENGINE`; that
point is not in the dataset scored here)."""

UNSTATED_PRECISION = "fp16"
"""Precision assumed where a source states none (the 16-bit default of the frameworks)."""


@dataclass(frozen=True)
class Comparison:
    """One published point and what both models predict for it.

    ``naive`` and ``second_order`` are in the point's unit; ``role`` says
    whether the point calibrated its series, validates the model, or was
    left out (``reason`` says why, or names the calibrated parameter).
    """

    point: Measurement
    naive: float
    second_order: float
    role: Role
    series: str
    reason: str = ""

    @property
    def naive_error(self) -> float:
        """Relative error of the naive roofline."""
        return self.naive / self.point.value - 1

    @property
    def second_order_error(self) -> float:
        """Relative error of the second-order model."""
        return self.second_order / self.point.value - 1

    def speed_ratio(self, model: Literal["naive", "second_order"]) -> float:
        """Predicted speed over published speed: above 1 the model predicts faster than measured.

        For a rate (FLOP/s, images/s ...) it is predicted / published; for a
        time it is published / predicted.
        """
        predicted = self.naive if model == "naive" else self.second_order
        ratio = predicted / self.point.value
        return 1 / ratio if self.point.unit == "s" else ratio


# --- achievable fractions, from the "peak" kind --------------------------------

_GEMM_LIBRARY = re.compile(r"torch|mamf|cublas", re.IGNORECASE)


def _peak_fraction(p: Measurement) -> float | None:
    """Measured / datasheet for a peak point the model can use, else ``None``."""
    acc = get_accelerator(p.gpu)
    if p.quantity == "memory_bandwidth":
        return p.value / acc.memory_bandwidth
    benchmark = p.setting["benchmark"]
    if (
        p.quantity == "matmul_flops"
        and _GEMM_LIBRARY.search(benchmark)
        and "microkernel" not in benchmark
    ):
        if p.precision in acc.peak_flops:
            return p.value / acc.flops(p.precision)
    return None


PRECISION_CLASS = {"fp16": "16-bit", "bf16": "16-bit", "fp8": "8-bit", "int8": "8-bit"}
"""Precisions that share a tensor-core rate, and so an achievable fraction; others stand alone."""


def _class(dtype: str) -> str:
    return PRECISION_CLASS.get(dtype, dtype)


@cache
def _fraction_table() -> dict[tuple[str, str, str], float]:
    """Best fraction per (GPU, quantity, precision class) over that GPU's usable peak points."""
    best: dict[tuple[str, str, str], float] = {}
    for p in load("peak"):
        f = _peak_fraction(p)
        if f is not None:
            key = (p.gpu, p.quantity, _class(p.precision or ""))
            best[key] = max(best.get(key, 0.0), f)
    return best


def _architecture(name: str) -> str:
    """GPUs that share an architecture whitepaper share an architecture (A100s; H100, H200, H800)."""
    return get_accelerator(name).whitepaper or name


def _fraction(
    name: str, quantity: str, dtype: str, exclude_architecture: bool
) -> float:
    """The first of: own at ``dtype``, own at any precision, others' median at ``dtype``, others' median."""
    table = _fraction_table()
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


# --- helpers shared by the kinds ----------------------------------------------


def _solve_overhead(
    time_of: Callable[[float], float], measured_s: float, *, hi: float = 1.0
) -> float:
    """Largest overhead ``o >= 0`` with ``time_of(o) <= measured_s`` (bisection; 0 if none)."""
    if time_of(0.0) >= measured_s:
        return 0.0
    lo = 0.0
    for _ in range(50):
        mid = (lo + hi) / 2
        if time_of(mid) > measured_s:
            hi = mid
        else:
            lo = mid
    return lo


def _int(p: Measurement, column: str) -> int:
    return p.integer(column)


# --- GEMM -----------------------------------------------------------------------


def _gemm_flops(p: Measurement) -> float:
    return 2.0 * _int(p, "m") * _int(p, "n") * _int(p, "k") * _int(p, "batch")


def _gemm_seconds(p: Measurement, acc: str | Accelerator, overhead: float) -> float:
    out = "bf16" if p.precision == "fp8" else None
    return ops.gemm_time(
        _int(p, "m"),
        _int(p, "n"),
        _int(p, "k"),
        acc,
        dtype=p.precision,
        batch=_int(p, "batch"),
        out_dtype=out,
        overhead=overhead,
    )


def _gemm(points: Sequence[Measurement]) -> list[Comparison]:
    out = []
    by_series: dict[str, list[Measurement]] = defaultdict(list)
    for p in points:
        by_series[f"{p.gpu} · {p.software.split(';')[0]}"].append(p)
    for series, group in by_series.items():
        usable = [p for p in group if "DOUBTFUL" not in p.notes and not _is_mamf(p)]
        calib = min(usable, key=_gemm_flops) if usable else None
        overhead = 0.0
        if calib is not None:
            acc = achievable_device(calib.gpu, calib.precision)
            measured = _gemm_measured_s(calib)
            overhead = _solve_overhead(
                lambda o, c=calib, a=acc: _gemm_seconds(c, a, o), measured, hi=1e-3
            )
        for p in group:
            flops = _gemm_flops(p)
            naive_s = roofline.roofline_time(
                flops, _gemm_bytes(p), p.gpu, dtype=p.precision
            )
            second_s = _gemm_seconds(p, achievable_device(p.gpu, p.precision), overhead)
            if _is_mamf(p):
                role: Role = "excluded"
                why = "the same number calibrates the achievable peak (kind 'peak')"
            elif "DOUBTFUL" in p.notes:
                role, why = "excluded", "flagged doubtful in its notes (warm-up)"
            elif p is calib:
                role, why = "calibration", f"fixed cost {overhead * 1e6:.2f} us"
            else:
                role, why = "validation", ""
            if p.unit == "s":  # a published time
                naive, second = naive_s, second_s
            else:
                naive, second = flops / naive_s, flops / second_s
            out.append(Comparison(p, naive, second, role, series, why))
    return out


def _gemm_measured_s(p: Measurement) -> float:
    """The published GEMM's seconds: as printed, or its FLOP over the printed FLOP/s."""
    return p.value if p.unit == "s" else _gemm_flops(p) / p.value


def _is_mamf(p: Measurement) -> bool:
    return "ml-engineering" in p.source


def _gemm_bytes(p: Measurement) -> float:
    out = "bf16" if p.precision == "fp8" else None
    cost = _int(p, "batch") * ops.matmul_cost(
        _int(p, "m"), _int(p, "k"), _int(p, "n"), dtype=p.precision, out_dtype=out
    )
    return cost.bytes


# --- achievable peaks -------------------------------------------------------------


def _peak(points: Sequence[Measurement]) -> list[Comparison]:
    out = []
    for p in points:
        acc = get_accelerator(p.gpu)
        f = _peak_fraction(p)
        series = f"{p.gpu} · {p.quantity}"
        if f is None:
            reason = (
                "a link, not a ceiling of the roofline"
                if p.quantity in ("nvlink", "pcie_h2d", "pcie_d2h")
                else "a microbenchmark kernel, not a GEMM library"
            )
            out.append(Comparison(p, p.value, p.value, "excluded", series, reason))
            continue
        datasheet = p.value / f
        c, m = fractions(acc, p.precision or "bf16", exclude_architecture=True)
        other = m if p.quantity == "memory_bandwidth" else c
        out.append(
            Comparison(
                p,
                datasheet,
                datasheet * other,
                "validation",
                series,
                "the median fraction of the other architectures' GPUs",
            )
        )
    return out


# --- ResNet-50 --------------------------------------------------------------------


def _resnet_fused(p: Measurement) -> bool:
    framework = p.setting["framework"]
    return "TensorRT" in framework or "XLA" in framework


@cache
def _resnet_kernels(
    gpu: str, batch: int, dtype: str, fused: bool, image_size: int
) -> tuple[float, ...]:
    return tuple(
        convnets.resnet50_kernel_seconds(
            batch,
            achievable_device(gpu, dtype),
            dtype=dtype,
            fused=fused,
            image_size=image_size,
        )
    )


def _resnet_images(p: Measurement, dispatch_s: float) -> float:
    """:func:`helpers.convnets.resnet50_stream_time` as images/s (its kernels' times computed once)."""
    batch = _int(p, "batch")
    kernels = _resnet_kernels(
        p.gpu, batch, p.precision, _resnet_fused(p), _int(p, "image_size")
    )
    return batch / dispatch.stream_time(kernels, dispatch_s)


_PRECISION_ORDER = ("fp16", "bf16", "fp8", "int8", "tf32", "fp32")


def _resnet(points: Sequence[Measurement]) -> list[Comparison]:
    out = []
    by_series: dict[str, list[Measurement]] = defaultdict(list)
    for p in points:
        by_series[f"{p.gpu} · {p.setting['framework']}"].append(p)
    for series, group in by_series.items():
        calib = min(
            group,
            key=lambda p: (_int(p, "batch"), _PRECISION_ORDER.index(p.precision)),
        )
        measured_s = _int(calib, "batch") / calib.value
        dispatch_s = _solve_overhead(
            lambda d, c=calib: _int(c, "batch") / _resnet_images(c, d),
            measured_s,
            hi=1e-2,
        )
        for p in group:
            batch = _int(p, "batch")
            naive = batch / convnets.resnet50_step_time(
                batch, p.gpu, dtype=p.precision, image_size=_int(p, "image_size")
            )
            second = _resnet_images(p, dispatch_s)
            if p is calib:
                role: Role = "calibration"
                why = f"dispatch {dispatch_s * 1e6:.1f} us per kernel"
            else:
                role, why = "validation", ""
            out.append(Comparison(p, naive, second, role, series, why))
    return out


# --- LLM decode -------------------------------------------------------------------


def _decode_dtype(p: Measurement) -> str:
    return p.precision or UNSTATED_PRECISION


def _decode_seconds(
    p: Measurement, acc: str | Accelerator, step_overhead: float
) -> tuple[float, float]:
    """(prefill seconds, seconds per decode step) of ``p`` on ``acc``."""
    model, dtype = p.setting["model"], _decode_dtype(p)
    batch, n_gpus = _int(p, "batch"), _int(p, "num_gpus")
    prompt = _int(p, "input_len")
    generated = _int(p, "output_len") if p.setting["output_len"] else 0
    prefill = inference.prefill_step(
        model, prompt, acc, batch=batch, dtype=dtype, n_gpus=n_gpus
    ).seconds
    # the mean context over the generation: the prompt plus half the output
    context = prompt + generated // 2
    step = inference.decode_step(
        model, context, acc, batch=batch, dtype=dtype, n_gpus=n_gpus
    ).seconds
    return prefill + step_overhead, step + step_overhead


def _decode_value(p: Measurement, acc: str | Accelerator, overhead: float) -> float:
    prefill, step = _decode_seconds(p, acc, overhead)
    if p.quantity == "step_latency":
        return step
    if p.quantity == "user_throughput":
        return 1 / step
    batch, generated = _int(p, "batch"), _int(p, "output_len")
    # the prefill emits the first token; each later one takes a decode step
    total = prefill + max(generated - 1, 0) * step
    if p.quantity == "e2e_latency":
        return total
    tokens_s = batch * generated / total
    if p.quantity == "throughput_per_gpu":
        return tokens_s / _int(p, "num_gpus")
    return tokens_s


def _decode_overhead(p: Measurement) -> float:
    acc = achievable_device(p.gpu, _decode_dtype(p))
    if p.unit == "s":  # a time: larger overhead, larger time
        return _solve_overhead(lambda o: _decode_value(p, acc, o), p.value)
    # a rate: larger overhead, smaller rate
    return _solve_overhead(lambda o: 1 / _decode_value(p, acc, o), 1 / p.value)


def _decode_excluded(p: Measurement) -> str:
    """Why ``p`` cannot test the decode model ("" if it can)."""
    acc = get_accelerator(p.gpu)
    dtype = _decode_dtype(p)
    if dtype not in acc.dtypes:
        return f"no {dtype} peak for {p.gpu} in the catalogue"
    if "NIM" in p.setting["framework"]:
        return "an online benchmark's client concurrency, not a batch the engine runs"
    if "NeMo" in p.setting["framework"] and p.setting["model"] == "llama-2-13b":
        return (
            "the source's 13B latencies are below its 7B ones at the same settings "
            "(NeMo discussion 8455)"
        )
    context = _int(p, "input_len") + (
        _int(p, "output_len") if p.setting["output_len"] else 0
    )
    fits = inference.max_decode_batch(
        p.setting["model"], context, p.gpu, n_gpus=_int(p, "num_gpus"), dtype=dtype
    )
    if _int(p, "batch") > fits:
        return f"the KV caches of the batch do not fit (at most {fits} sequences)"
    return ""


def _run(p: Measurement) -> tuple[str, ...]:
    """The run a point comes from: its setting without the quantity measured."""
    keys = ("model", "batch", "input_len", "output_len", "num_gpus")
    return tuple(p.setting[k] for k in keys) + (p.precision or "",)


def _decode(points: Sequence[Measurement]) -> list[Comparison]:
    out = []
    by_series: dict[str, list[Measurement]] = defaultdict(list)
    for p in points:
        key = (
            f"{p.gpu} · {p.setting['framework']} · {p.software} · {p.setting['model']}"
        )
        by_series[key].append(p)
    for series, group in by_series.items():
        usable = [p for p in group if not _decode_excluded(p)]
        calib = (
            min(usable, key=lambda p: (_int(p, "batch"), _int(p, "num_gpus")))
            if usable
            else None
        )
        overhead = 0.0 if calib is None else _decode_overhead(calib)
        for p in group:
            reason = _decode_excluded(p)
            if not reason and p is not calib and calib is not None:
                if _run(p) == _run(calib):
                    reason = "the same run as its series' calibration point"
            if reason:
                out.append(
                    Comparison(p, math.nan, math.nan, "excluded", series, reason)
                )
                continue
            naive = _decode_value(p, p.gpu, 0.0)
            second = _decode_value(
                p, achievable_device(p.gpu, _decode_dtype(p)), overhead
            )
            if p is calib:
                role: Role = "calibration"
                why = f"fixed cost {overhead * 1e3:.2f} ms per step"
            else:
                role, why = "validation", ""
            out.append(Comparison(p, naive, second, role, series, why))
    return out


# --- KV transfer --------------------------------------------------------------------

_SIZE = re.compile(r"([\d.]+)\s*(KiB|MiB|GiB|KB|MB|GB)")
_BINARY = {"K": 2**10, "M": 2**20, "G": 2**30}
_DECIMAL = {"K": 1e3, "M": 1e6, "G": 1e9}


def message_bytes(text: str) -> float:
    """Bytes of a printed message size: a plain integer, or a number with a unit.

    KiB, MiB and GiB are binary. KB, MB and GB are binary when the number is
    a power of two (a benchmark's block size, "128 KB") and decimal
    otherwise (a measured total, "4.50 GB"; the vLLM table it comes from
    divides 4.50e9 bytes by its time to print its bandwidth).

    >>> message_bytes("1048576 (1 MB)"), message_bytes("128 KB"), message_bytes("64 MiB")
    (1048576.0, 131072.0, 67108864.0)
    >>> message_bytes("4.50 GB (total KV per request)")
    4500000000.0
    """
    plain = re.match(r"\s*(\d+)\s*(\(|$)", text)
    if plain:
        return float(plain[1])
    match = _SIZE.search(text)
    if match is None:
        raise ValueError(f"message_bytes: cannot read a size from {text!r}")
    number, unit = float(match[1]), match[2]
    power_of_two = number.is_integer() and int(number) & (int(number) - 1) == 0
    if unit.endswith("iB") or power_of_two:
        return number * _BINARY[unit[0]]
    return number * _DECIMAL[unit[0]]


def _link(p: Measurement, latency: float) -> Link:
    per_link = float(p.setting["nominal_gbps"]) * 1e9 / 8 / _int(p, "num_links")
    return Link(p.setting["link"], per_link, latency, p.source)


def _kv_rate(p: Measurement, latency: float, efficiency: float) -> float:
    nbytes = message_bytes(p.setting["message_bytes"])
    t = kvcache.link_time(
        nbytes,
        _link(p, latency),
        n_links=_int(p, "num_links"),
        efficiency=efficiency,
    )
    return nbytes / t


def _kv(points: Sequence[Measurement]) -> list[Comparison]:
    out = []
    by_series: dict[str, list[Measurement]] = defaultdict(list)
    for p in points:
        host = "host memory" if p.gpu is None else p.gpu
        by_series[f"{host} · {p.setting['link']}"].append(p)
    for series, group in by_series.items():
        calib = min(group, key=lambda p: message_bytes(p.setting["message_bytes"]))
        nbytes = message_bytes(calib.setting["message_bytes"])
        latency = _solve_overhead(
            lambda t, c=calib, b=nbytes: b / _kv_rate(c, t, LINK_EFFICIENCY),
            nbytes / calib.value,
        )
        sizes = {message_bytes(p.setting["message_bytes"]) for p in group}
        for p in group:
            naive = float(p.setting["nominal_gbps"]) * 1e9 / 8
            second = _kv_rate(p, latency, LINK_EFFICIENCY)
            if p is calib:
                role: Role = "calibration"
                why = f"fixed cost {latency * 1e6:.1f} us per message"
            elif len(sizes) == 1:
                role = "excluded"
                why = "one message size: the calibration point fixes the prediction"
            else:
                role, why = "validation", ""
            out.append(Comparison(p, naive, second, role, series, why))
    return out


_COMPARE: dict[Kind, Callable[[Sequence[Measurement]], list[Comparison]]] = {
    "gemm": _gemm,
    "peak": _peak,
    "resnet50": _resnet,
    "decode": _decode,
    "kv_transfer": _kv,
}


@cache
def compare(kind: Kind) -> tuple[Comparison, ...]:
    """Both models' predictions for every published point of ``kind``."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    return tuple(_COMPARE[kind](load(kind)))


@dataclass(frozen=True)
class ErrorSummary:
    """Error statistics of the validating points of one group (fractions, not %)."""

    group: str
    points: int
    naive_median: float
    naive_p90: float
    second_order_median: float
    second_order_p90: float

    def meets(self, *, median: float = 0.15, p90: float = 0.40) -> bool:
        """Whether the second-order model meets the targets (median, 90th percentile of the absolute error)."""
        return self.second_order_median <= median and self.second_order_p90 <= p90


def summarize(
    comparisons: Iterable[Comparison], key: Callable[[Comparison], str]
) -> list[ErrorSummary]:
    """Absolute relative error statistics of the validating comparisons, grouped by ``key``."""
    groups: dict[str, list[Comparison]] = defaultdict(list)
    for c in comparisons:
        if c.role == "validation":
            groups[key(c)].append(c)
    out = []
    for group, items in groups.items():
        naive = np.abs([c.naive_error for c in items])
        second = np.abs([c.second_order_error for c in items])
        out.append(
            ErrorSummary(
                group,
                len(items),
                float(np.median(naive)),
                float(np.percentile(naive, 90)),
                float(np.median(second)),
                float(np.percentile(second, 90)),
            )
        )
    return out


def with_role(comparisons: Iterable[Comparison], role: Role) -> list[Comparison]:
    """The comparisons that play ``role``."""
    return [c for c in comparisons if c.role == role]


def _percent(x: float) -> str:
    return f"{100 * x:.0f} %"


def summary_markdown(
    kind: Kind,
    *,
    median: float = 0.15,
    p90: float = 0.40,
    by: Literal["gpu", "series"] = "gpu",
) -> str:
    """A Markdown table of both models' absolute relative error per GPU (or series) on ``kind``'s validating points.

    The last column says whether the second-order model meets the targets
    (``median`` and ``p90`` of the absolute relative error); groups of fewer than 10
    points are reported but not judged.
    """
    comparisons = compare(kind)
    if by not in ("gpu", "series"):
        raise ValueError(f"by must be 'gpu' or 'series', got {by!r}")
    groups = summarize(
        comparisons,
        key=(lambda c: c.point.gpu or "host memory")
        if by == "gpu"
        else (lambda c: c.series),
    )
    groups.sort(key=lambda g: -g.points)
    groups += summarize(comparisons, key=lambda c: "all")
    rows = []
    for g in groups:
        verdict = (
            "too few points"
            if g.points < 10
            else ("met" if g.meets(median=median, p90=p90) else "missed")
        )
        name = f"**{g.group}**" if g.group == "all" else g.group
        rows.append(
            [
                name,
                g.points,
                _percent(g.naive_median),
                _percent(g.naive_p90),
                _percent(g.second_order_median),
                _percent(g.second_order_p90),
                verdict,
            ]
        )
    return markdown_table(
        [
            "GPU" if by == "gpu" else "series",
            "points",
            "naive median",
            "naive p90",
            "second-order median",
            "second-order p90",
            f"targets ({_percent(median)}, {_percent(p90)})",
        ],
        rows,
        align="lrrrrrl",
    )


def worst_markdown(kind: Kind, *, n: int = 4) -> str:
    """A Markdown table of the ``n`` validating points of ``kind`` the second-order model misses most."""
    valid = with_role(compare(kind), "validation")
    valid.sort(key=lambda c: -abs(c.second_order_error))
    rows = [
        [
            c.series,
            c.point.label,
            format_si(c.point.value, c.point.unit),
            format_si(c.naive, c.point.unit),
            format_si(c.second_order, c.point.unit),
            f"{100 * c.second_order_error:+.0f} %",
        ]
        for c in valid[:n]
    ]
    return markdown_table(
        ["series", "setting", "published", "naive", "second-order", "error"],
        rows,
        align="llrrrr",
    )


def calibration_markdown() -> str:
    """A Markdown table of every calibration point: its series, setting, value and the parameter it fixes."""
    rows = []
    for kind in KINDS:
        for c in with_role(compare(kind), "calibration"):
            rows.append(
                [
                    kind,
                    c.series,
                    c.point.label,
                    format_si(c.point.value, c.point.unit),
                    c.reason,
                ]
            )
    return markdown_table(
        ["kind", "series", "point", "published", "fixes"], rows, align="llllr"
    )


def fractions_markdown() -> str:
    """A Markdown table of each catalogued GPU's achievable fractions, as :func:`fractions` derives them."""
    table = _fraction_table()
    rows = []
    for gpu in sorted({g for g, _, _ in table}):
        for dtype in sorted(
            {d for g, q, d in table if g == gpu and q == "matmul_flops"}
        ):
            c, m = fractions(gpu, dtype)
            rows.append([gpu, dtype, _percent(c), _percent(m)])
    return markdown_table(
        ["GPU", "matmul precision", "matmul share of peak", "bandwidth share of peak"],
        rows,
    )


def targets_markdown(*, median: float = 0.15, p90: float = 0.40) -> str:
    """A Markdown table, one row per kind: both models' errors over all GPUs, and the targets met."""
    rows = []
    for kind in KINDS:
        comparisons = compare(kind)
        (g,) = summarize(comparisons, key=lambda c: "all")
        calibrating = len(with_role(comparisons, "calibration"))
        rows.append(
            [
                kind,
                g.points,
                calibrating,
                _percent(g.naive_median),
                _percent(g.naive_p90),
                _percent(g.second_order_median),
                _percent(g.second_order_p90),
                "met" if g.meets(median=median, p90=p90) else "missed",
            ]
        )
    return markdown_table(
        [
            "kind",
            "validating points",
            "calibration points",
            "naive median",
            "naive p90",
            "second-order median",
            "second-order p90",
            f"targets ({_percent(median)}, {_percent(p90)})",
        ],
        rows,
        align="lrrrrrrl",
    )
