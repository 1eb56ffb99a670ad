"""The book's time model against published GPU measurements (:mod:`helpers.published`).

Three predictions for every published number, each built only from the
helpers the chapters teach:

* **naive**: the first-order roofline at the datasheet's peaks, no overhead
  (:func:`helpers.roofline.breakdown`, :func:`helpers.convnets.resnet50_step_time`,
  :func:`helpers.inference.decode_step` without communication, a link at its line rate);
* **constant-free**: what real hardware adds, every term derived and sourced,
  nothing fitted to these data. Achievable peaks (:func:`helpers.roofline.achievable`,
  from the *peak* kind), tile and wave quantization with split-K
  (:func:`helpers.ops.gemm_time`), the GPU-side floor of every kernel
  (:func:`helpers.dispatch.kernel_floor`), the vector roof and fusion of
  ResNet-50's kernels in one stream (:func:`helpers.convnets.resnet50_stream_time`),
  tensor-parallel all-reduces for decode and prefill on several GPUs
  (:func:`helpers.inference.tp_allreduce_time`), a link's achieved share of
  its line rate and its catalog latency (:func:`helpers.kvcache.link_time`);
* **calibrated**: the constant-free model plus **one** constant per GPU and
  kind, a fixed time added where the constant-free model has its floor: per
  GEMM launch (``gemm``), per kernel of CPU dispatch (``resnet50``), per
  decode step (``decode``), per message (``kv_transfer``). It is fitted on one
  point per GPU and kind, chosen by a rule fixed before any error was
  computed: the GPU's smallest GEMM, its batch-1 (smallest-batch) ResNet-50
  point, its smallest decode batch on the fewest GPUs, its smallest message.
  Everything else validates, for both models. The *peak* kind has no
  constant: it is predicted leave-one-architecture-out (a GPU's achievable
  fraction is the median of the fractions of GPUs of other architectures).

Per-operation achievable fractions: GEMMs and convolutions (as implicit
GEMMs) take the GPU's best published GEMM-library share of peak in their
precision class (:func:`helpers.achievable.fractions`); attention and every other memory-bound
kernel the best published bandwidth share. No separate published convolution
or attention peak is in the dataset, so those two borrow the GEMM and the
bandwidth share; the appendix page says where that shows.

Errors are relative, ``(predicted - published) / published``, in the
published quantity (FLOP/s, bytes/s, images/s, tokens/s or seconds).
"""

from __future__ import annotations

import math
import re
import statistics
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache, partial
from typing import Literal

import numpy as np

from . import convnets, dispatch, inference, kvcache, ops, roofline
from .achievable import _gpu, _peak_fraction, _prec, achievable_device, fractions
from .hardware import Accelerator, Link, get_accelerator, get_link
from .published import KINDS, Kind, PublishedPoint, load

Role = Literal["calibration", "validation", "excluded"]
Model = Literal["naive", "second_order", "constant_free"]

LINK_EFFICIENCY = 0.87
"""Share of the line rate a bulk RDMA transfer reaches: Mooncake FAST'25, Fig. 12,
87 GB/s on 4 x 200 Gb/s (:data:`helpers.papers.MOONCAKE_FIG12_TRANSFER_ENGINE`; that
point is not in the dataset scored here)."""

UNSTATED_PRECISION = "fp16"
"""Precision assumed where a source states none (the 16-bit default of the frameworks)."""

RDMA_LATENCY_S = get_link("cx7").latency
"""The constant-free model's latency per message: the catalog's RDMA order of magnitude (2 us)."""


@dataclass(frozen=True)
class Prediction:
    """One published point and what the three models predict for it.

    ``naive``, ``constant_free`` and ``second_order`` (the calibrated model)
    are in the point's unit; ``role`` says whether the point calibrated its
    GPU's constant, validates the models, or was left out (``reason`` says
    why, or gives the calibrated constant).
    """

    point: PublishedPoint
    naive: float
    second_order: float
    role: Role
    series: str
    reason: str = ""
    constant_free: float = math.nan

    @property
    def naive_error(self) -> float:
        """Relative error of the naive roofline."""
        return self.naive / self.point.value - 1

    @property
    def second_order_error(self) -> float:
        """Relative error of the calibrated second-order model."""
        return self.second_order / self.point.value - 1

    @property
    def constant_free_error(self) -> float:
        """Relative error of the constant-free second-order model."""
        return self.constant_free / self.point.value - 1

    def speed_ratio(self, model: Model) -> float:
        """Predicted speed over published speed: above 1 the model predicts faster than measured.

        For a rate (FLOP/s, images/s ...) it is predicted / published; for a
        time it is published / predicted.
        """
        predicted = {
            "naive": self.naive,
            "second_order": self.second_order,
            "constant_free": self.constant_free,
        }[model]
        ratio = predicted / self.point.value
        return 1 / ratio if self.point.unit == "s" else ratio


def __getattr__(name: str) -> object:
    """Deprecation shims: ``Comparison`` is :class:`Prediction`; the renderers are in :mod:`helpers.reports`."""
    if name == "Comparison":
        warnings.warn(
            "helpers.validation.Comparison is now helpers.validation.Prediction",
            DeprecationWarning,
            stacklevel=2,
        )
        return Prediction
    if name == "PRECISION_CLASS":
        warnings.warn(
            "helpers.validation.PRECISION_CLASS is now helpers.achievable.PRECISION_CLASS",
            DeprecationWarning,
            stacklevel=2,
        )
        from .achievable import PRECISION_CLASS

        return PRECISION_CLASS
    if name in _REPORTS:
        warnings.warn(
            f"helpers.validation.{name} is now helpers.reports.{name}",
            DeprecationWarning,
            stacklevel=2,
        )
        from . import reports

        return getattr(reports, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --- the fitted constant ----------------------------------------------------------


def _solve_constant(
    time_of: Callable[[float], float], measured_s: float, *, hi: float
) -> float:
    """Largest constant ``c >= 0`` with ``time_of(c) <= measured_s``; 0 if even ``c = 0`` is too slow.

    Bisection on ``[0, hi]``, its bracket checked: ``time_of`` must grow with
    ``c``; ``hi`` is doubled (up to 2**20 times) until ``time_of(hi) > measured_s``,
    and a ``ValueError`` is raised if it never is.
    """
    if time_of(0.0) >= measured_s:
        return 0.0
    lo = 0.0
    for _ in range(20):
        if time_of(hi) > measured_s:
            break
        lo, hi = hi, 2 * hi
    else:
        raise ValueError(
            f"no constant up to {hi:g} s reaches the measured {measured_s:g} s"
        )
    for _ in range(60):
        mid = (lo + hi) / 2
        if time_of(mid) > measured_s:
            hi = mid
        else:
            lo = mid
    return lo


@dataclass(frozen=True)
class _Kind:
    """How one kind is predicted: with ``constant`` (s) added where the model has its floor."""

    series: Callable[[PublishedPoint], str]
    excluded: Callable[[PublishedPoint], str]
    calibration_key: Callable[[PublishedPoint], tuple | float]
    naive: Callable[[PublishedPoint], float]
    model: Callable[[PublishedPoint, float], float]
    constant: str  # what the constant is, for the calibration table
    same_run: Callable[[PublishedPoint, PublishedPoint], bool]
    hi: float


def _time(p: PublishedPoint, value: float) -> float:
    """A predicted value as a time (which grows with the constant): itself, or one over a rate."""
    return value if p.unit == "s" else 1 / value


def _gpu_key(p: PublishedPoint) -> str:
    return p.gpu or "host memory"


def _safe(f: Callable[[], float]) -> float:
    try:
        return f()
    except (KeyError, ValueError):
        return math.nan


def _calibration_time(spec: _Kind, p: PublishedPoint, constant: float) -> float:
    return _time(p, spec.model(p, constant))


def _compare(points: Sequence[PublishedPoint], spec: _Kind) -> list[Prediction]:
    out = []
    by_gpu: dict[str, list[PublishedPoint]] = defaultdict(list)
    for p in points:
        by_gpu[_gpu_key(p)].append(p)
    for group in by_gpu.values():
        usable = [p for p in group if not spec.excluded(p)]
        calib = min(usable, key=spec.calibration_key) if usable else None
        constant = 0.0
        if calib is not None:
            constant = _solve_constant(
                partial(_calibration_time, spec, calib),
                _time(calib, calib.value),
                hi=spec.hi,
            )
        for p in group:
            reason = spec.excluded(p)
            if not reason and calib is not None and p is not calib:
                if spec.same_run(p, calib):
                    reason = "the same run as its GPU's calibration point"
            naive = _safe(partial(spec.naive, p))
            free = _safe(partial(spec.model, p, 0.0))
            calibrated = _safe(partial(spec.model, p, constant))
            if reason:
                role: Role = "excluded"
            elif p is calib:
                role, reason = "calibration", f"{spec.constant} {_us(constant)}"
            else:
                role = "validation"
            out.append(
                Prediction(
                    p,
                    naive,
                    calibrated,
                    role,
                    spec.series(p),
                    reason,
                    constant_free=free,
                )
            )
    return out


def _us(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.2f} us"


# --- GEMM -----------------------------------------------------------------------


def _gemm_out(p: PublishedPoint) -> str | None:
    return "bf16" if p.precision == "fp8" else None


def _gemm_cost(p: PublishedPoint) -> ops.Cost:
    """One GEMM's :func:`helpers.ops.matmul_cost`, times its ``batch`` (independent products)."""
    one = ops.matmul_cost(
        p.integer("m"),
        p.integer("k"),
        p.integer("n"),
        dtype=_prec(p),
        out_dtype=_gemm_out(p),
    )
    return p.integer("batch") * one


def _gemm_flops(p: PublishedPoint) -> float:
    return _gemm_cost(p).flops


def _gemm_value(p: PublishedPoint, seconds: float) -> float:
    return seconds if p.unit == "s" else _gemm_flops(p) / seconds


def _gemm_model(p: PublishedPoint, constant: float) -> float:
    seconds = ops.gemm_time(
        p.integer("m"),
        p.integer("n"),
        p.integer("k"),
        achievable_device(_gpu(p), _prec(p)),
        dtype=_prec(p),
        batch=p.integer("batch"),
        out_dtype=_gemm_out(p),
        overhead=dispatch.kernel_floor(_gpu(p)) + constant,
    )
    return _gemm_value(p, seconds)


def _gemm_naive(p: PublishedPoint) -> float:
    cost = _gemm_cost(p)
    seconds = roofline.roofline_time(cost.flops, cost.bytes, _gpu(p), dtype=_prec(p))
    return _gemm_value(p, seconds)


def _is_mamf(p: PublishedPoint) -> bool:
    return "ml-engineering" in p.source


def _gemm_excluded(p: PublishedPoint) -> str:
    if _is_mamf(p):
        return "the same number calibrates the achievable peak (kind 'peak')"
    if "DOUBTFUL" in p.notes:
        return "flagged doubtful in its notes (warm-up)"
    return ""


_GEMM = _Kind(
    series=lambda p: f"{p.gpu} · {p.software.split(';')[0]}",
    excluded=_gemm_excluded,
    calibration_key=_gemm_flops,
    naive=_gemm_naive,
    model=_gemm_model,
    constant="fixed cost per launch",
    same_run=lambda p, c: False,
    hi=1e-3,
)


# --- achievable peaks -------------------------------------------------------------


def _peak(points: Sequence[PublishedPoint]) -> list[Prediction]:
    out = []
    for p in points:
        acc = get_accelerator(_gpu(p))
        f = _peak_fraction(p)
        series = f"{p.gpu} · {p.quantity}"
        if f is None:
            reason = (
                "a link, not a ceiling of the roofline"
                if p.quantity in ("nvlink", "pcie_h2d", "pcie_d2h")
                else "a microbenchmark kernel, not a GEMM library"
            )
            out.append(
                Prediction(
                    p,
                    p.value,
                    p.value,
                    "excluded",
                    series,
                    reason,
                    constant_free=p.value,
                )
            )
            continue
        datasheet = p.value / f
        c, m = fractions(acc, p.precision or "bf16", exclude_architecture=True)
        other = datasheet * (m if p.quantity == "memory_bandwidth" else c)
        out.append(
            Prediction(
                p,
                datasheet,
                other,
                "validation",
                series,
                "the median fraction of the other architectures' GPUs",
                constant_free=other,
            )
        )
    return out


# --- ResNet-50 --------------------------------------------------------------------


def _resnet_fused(p: PublishedPoint) -> bool:
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


def _resnet_model(p: PublishedPoint, dispatch_s: float) -> float:
    """Images/s of :func:`helpers.convnets.resnet50_stream_time` with ``dispatch_s`` per kernel and the GPU's floor."""
    batch = p.integer("batch")
    kernels = _resnet_kernels(
        _gpu(p), batch, _prec(p), _resnet_fused(p), p.integer("image_size")
    )
    seconds = dispatch.stream_time(
        kernels, dispatch_s, kernel_floor_s=dispatch.kernel_floor(_gpu(p))
    )
    return batch / seconds


def _resnet_naive(p: PublishedPoint) -> float:
    batch = p.integer("batch")
    return batch / convnets.resnet50_step_time(
        batch, _gpu(p), dtype=_prec(p), image_size=p.integer("image_size")
    )


_PRECISION_ORDER = ("fp16", "bf16", "fp8", "int8", "tf32", "fp32")

_RESNET = _Kind(
    series=lambda p: f"{p.gpu} · {p.setting['framework']}",
    excluded=lambda p: "",
    calibration_key=lambda p: (p.integer("batch"), _PRECISION_ORDER.index(_prec(p))),
    naive=_resnet_naive,
    model=_resnet_model,
    constant="CPU dispatch per kernel",
    same_run=lambda p, c: False,
    hi=1e-2,
)


# --- LLM decode -------------------------------------------------------------------


def _decode_dtype(p: PublishedPoint) -> str:
    return p.precision or UNSTATED_PRECISION


def _decode_seconds(
    p: PublishedPoint, acc: str | Accelerator, per_step: float, *, physical: bool
) -> tuple[float, float]:
    """(prefill seconds, seconds per decode step) of ``p`` on ``acc``.

    ``physical`` adds the tensor-parallel all-reduces and the GPU-side floor
    of every kernel of a step (:func:`helpers.inference.kernels_per_step`);
    ``per_step`` is added to the prefill and to each step.
    """
    model, dtype = p.setting["model"], _decode_dtype(p)
    batch, n_gpus = p.integer("batch"), p.integer("num_gpus")
    prompt = p.integer("input_len")
    generated = p.integer("output_len") if p.setting["output_len"] else 0
    link = inference.AUTO if physical else None
    floor = (
        inference.kernels_per_step(model) * dispatch.kernel_floor(_gpu(p))
        if physical
        else 0.0
    )
    prefill = inference.prefill_step(
        model, prompt, acc, batch=batch, dtype=dtype, n_gpus=n_gpus, link=link
    ).seconds
    context = inference.mean_decode_context(prompt, generated)
    step = inference.decode_step(
        model, context, acc, batch=batch, dtype=dtype, n_gpus=n_gpus, link=link
    ).seconds
    return prefill + floor + per_step, step + floor + per_step


def _decode_value(
    p: PublishedPoint, acc: str | Accelerator, per_step: float, *, physical: bool
) -> float:
    prefill, step = _decode_seconds(p, acc, per_step, physical=physical)
    if p.quantity == "step_latency":
        return step
    if p.quantity == "user_throughput":
        return 1 / step
    batch, generated = p.integer("batch"), p.integer("output_len")
    # the prefill emits the first token; each later one takes a decode step
    total = prefill + max(generated - 1, 0) * step
    if p.quantity == "e2e_latency":
        return total
    tokens_s = batch * generated / total
    if p.quantity == "throughput_per_gpu":
        return tokens_s / p.integer("num_gpus")
    return tokens_s


def _decode_excluded(p: PublishedPoint) -> str:
    """Why ``p`` cannot test the decode model ("" if it can)."""
    acc = get_accelerator(_gpu(p))
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
    context = p.integer("input_len") + (
        p.integer("output_len") if p.setting["output_len"] else 0
    )
    fits = inference.max_decode_batch(
        p.setting["model"], context, _gpu(p), n_gpus=p.integer("num_gpus"), dtype=dtype
    )
    if p.integer("batch") > fits:
        return f"the KV caches of the batch do not fit (at most {fits} sequences)"
    return ""


def _run(p: PublishedPoint) -> tuple[str, ...]:
    """The run a point comes from: its setting without the quantity measured."""
    keys = ("model", "batch", "input_len", "output_len", "num_gpus")
    return (
        (p.setting["framework"], p.software)
        + tuple(p.setting[k] for k in keys)
        + (p.precision or "",)
    )


_DECODE = _Kind(
    series=lambda p: (
        f"{p.gpu} · {p.setting['framework']} · {p.software} · {p.setting['model']}"
    ),
    excluded=_decode_excluded,
    calibration_key=lambda p: (p.integer("batch"), p.integer("num_gpus")),
    naive=lambda p: _decode_value(p, _gpu(p), 0.0, physical=False),
    model=lambda p, c: _decode_value(
        p, achievable_device(_gpu(p), _decode_dtype(p)), c, physical=True
    ),
    constant="fixed cost per step",
    same_run=lambda p, c: _run(p) == _run(c),
    hi=1e-2,
)


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


def _link(p: PublishedPoint, latency: float) -> Link:
    per_link = float(p.setting["nominal_gbps"]) * 1e9 / 8 / p.integer("num_links")
    return Link(p.setting["link"], per_link, latency, p.source)


def _kv_model(p: PublishedPoint, constant: float) -> float:
    nbytes = message_bytes(p.setting["message_bytes"])
    t = kvcache.link_time(
        nbytes,
        _link(p, RDMA_LATENCY_S + constant),
        n_links=p.integer("num_links"),
        efficiency=LINK_EFFICIENCY,
    )
    return nbytes / t


def _kv_series(p: PublishedPoint) -> str:
    return f"{_gpu_key(p)} · {p.setting['link']}"


_KV = _Kind(
    series=_kv_series,
    excluded=lambda p: "",
    calibration_key=lambda p: message_bytes(p.setting["message_bytes"]),
    naive=lambda p: float(p.setting["nominal_gbps"]) * 1e9 / 8,
    model=_kv_model,
    constant="fixed cost per message",
    same_run=lambda p, c: (
        _kv_series(p) == _kv_series(c)
        and message_bytes(p.setting["message_bytes"])
        == message_bytes(c.setting["message_bytes"])
    ),
    hi=1e-3,
)


_COMPARE: dict[Kind, Callable[[Sequence[PublishedPoint]], list[Prediction]]] = {
    "gemm": lambda points: _compare(points, _GEMM),
    "peak": _peak,
    "resnet50": lambda points: _compare(points, _RESNET),
    "decode": lambda points: _compare(points, _DECODE),
    "kv_transfer": lambda points: _compare(points, _KV),
}


@cache
def compare(kind: Kind) -> tuple[Prediction, ...]:
    """The three models' predictions for every published point of ``kind``."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    return tuple(_COMPARE[kind](load(kind)))


@dataclass(frozen=True)
class ErrorSummary:
    """Error statistics of the validating points of one group (fractions, not %).

    ``constants`` counts the calibration points (one per GPU) among the
    group's predictions; ``gpus`` the GPUs its validating points are on.
    """

    group: str
    points: int
    naive_median: float
    naive_p90: float
    second_order_median: float
    second_order_p90: float
    constant_free_median: float = math.nan
    constant_free_p90: float = math.nan
    constants: int = 0
    gpus: int = 0

    def meets(
        self,
        *,
        median: float = 0.15,
        p90: float = 0.40,
        model: Literal["second_order", "constant_free"] = "second_order",
    ) -> bool:
        """Whether ``model`` meets the targets (median, 90th percentile of the absolute error)."""
        if model == "constant_free":
            return self.constant_free_median <= median and self.constant_free_p90 <= p90
        return self.second_order_median <= median and self.second_order_p90 <= p90


def summarize(
    comparisons: Iterable[Prediction], key: Callable[[Prediction], str]
) -> list[ErrorSummary]:
    """Absolute relative error statistics of the validating predictions, grouped by ``key``."""
    groups: dict[str, list[Prediction]] = defaultdict(list)
    constants: dict[str, int] = defaultdict(int)
    for c in comparisons:
        if c.role == "validation":
            groups[key(c)].append(c)
        elif c.role == "calibration":
            constants[key(c)] += 1
    out = []
    for group, items in groups.items():
        naive = np.abs([c.naive_error for c in items])
        second = np.abs([c.second_order_error for c in items])
        free = np.abs([c.constant_free_error for c in items])
        out.append(
            ErrorSummary(
                group,
                len(items),
                float(np.median(naive)),
                float(np.percentile(naive, 90)),
                float(np.median(second)),
                float(np.percentile(second, 90)),
                float(np.median(free)),
                float(np.percentile(free, 90)),
                constants[group],
                len({_gpu_key(c.point) for c in items}),
            )
        )
    return out


def with_role(comparisons: Iterable[Prediction], role: Role) -> list[Prediction]:
    """The predictions that play ``role``."""
    return [c for c in comparisons if c.role == role]


_REPORTS = (
    "summary_markdown",
    "worst_markdown",
    "calibration_markdown",
    "fractions_markdown",
    "targets_markdown",
)


_SPECS: dict[Kind, _Kind] = {
    "gemm": _GEMM,
    "resnet50": _RESNET,
    "decode": _DECODE,
    "kv_transfer": _KV,
}


def calibrated_constant(kind: Kind, gpu: str | None) -> float:
    """The one constant (s) fitted for ``gpu`` (``None``: host memory) and ``kind``; 0 if it has none."""
    if kind not in _SPECS:
        raise ValueError(f"kind must be one of {tuple(_SPECS)}, got {kind!r}")
    name = None if gpu is None else get_accelerator(gpu).name
    for c in with_role(compare(kind), "calibration"):
        if c.point.gpu == name:
            return _solve_constant(
                partial(_calibration_time, _SPECS[kind], c.point),
                _time(c.point, c.point.value),
                hi=_SPECS[kind].hi,
            )
    return 0.0


def implied_constant(point: PublishedPoint) -> float:
    """The constant (s) that would make the calibrated model reproduce ``point`` by itself.

    Evidence for what a missed target leaves out: if the points of one GPU
    imply very different constants (per framework, say), the constant is not
    a property of the GPU.
    """
    if point.kind not in _SPECS:
        raise ValueError(
            f"point.kind must be one of {tuple(_SPECS)}, got {point.kind!r}"
        )
    spec = _SPECS[point.kind]
    return _solve_constant(
        partial(_calibration_time, spec, point), _time(point, point.value), hi=spec.hi
    )


@dataclass(frozen=True)
class Workload:
    """One whole workload as the three models predict it, beside a published value where one matches.

    ``roofline`` is the first-order bound (naive); ``constant_free`` and
    ``calibrated`` the second-order models; ``published`` the dataset's
    value for exactly this setting (NaN if none). Units: those of the kind
    (images/s for ResNet-50, tokens/s or s for decode).
    """

    kind: Kind
    gpu: str
    label: str
    unit: str
    roofline: float
    constant_free: float
    calibrated: float
    published: float


def predict_workload(
    kind: Literal["resnet50", "decode"], gpu: str, **setting: object
) -> Workload:
    """The three models' prediction for a setting of ``kind`` on ``gpu``, with a matching published value.

    ``setting`` holds the kind's CSV columns: for ``resnet50`` ``batch``,
    ``precision``, ``framework`` (``"PyTorch"`` by default) and optionally
    ``image_size``; for ``decode`` ``model``, ``batch``, ``input_len``,
    ``output_len``, ``num_gpus``, ``precision``, ``quantity`` (``"throughput"``
    by default) and ``framework``. The calibrated model uses ``gpu``'s one
    constant for ``kind`` (:func:`calibrated_constant`).

    >>> w = predict_workload("resnet50", "T4", batch=64, precision="fp16")
    >>> round(w.published), round(w.roofline) > 3 * round(w.published)
    (1165, True)
    """
    name = get_accelerator(gpu).name
    cols = {k: str(v) for k, v in setting.items()}
    precision = cols.pop("precision", "fp16")
    quantity = cols.pop("quantity", "throughput")
    if kind == "resnet50":
        cols.setdefault("framework", "PyTorch")
        cols.setdefault("image_size", "224")
        unit = "images/s"
    elif kind == "decode":
        cols.setdefault("framework", "")
        cols.setdefault("num_gpus", "1")
        cols.setdefault("output_len", "")
        unit = "s" if quantity.endswith("latency") else "tokens/s"
    else:
        raise ValueError(f"kind must be 'resnet50' or 'decode', got {kind!r}")
    point = PublishedPoint(
        kind,
        name,
        precision,
        quantity,
        1.0,
        unit,
        cols,
        source="https://model.invalid",
        locator="predicted",
    )
    spec = _SPECS[kind]
    published = [
        p.value
        for p in load(kind, gpu=name)
        if (p.precision or UNSTATED_PRECISION) == precision
        and p.quantity == quantity
        and all(p.setting.get(k) == v for k, v in cols.items() if v)
    ]
    return Workload(
        kind,
        name,
        point.label,
        unit,
        spec.naive(point),
        spec.model(point, 0.0),
        spec.model(point, calibrated_constant(kind, name)),
        statistics.median(published) if published else math.nan,
    )
