"""The kinds of :mod:`helpers.validation`: how each published point is predicted.

One section per kind, each its naive model, its second-order model with the
constant added where it has its floor, and the rule that leaves points out:
GEMM, the achievable peaks (no constant: leave-one-architecture-out), ResNet-50,
LLM decode and KV transfer. :func:`compare` runs a kind's points through the
engine (``helpers.validation._engine``); :func:`calibrated_constant` and
:func:`implied_constant` read a kind's fitted constant back.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import cache, partial

from .. import convnets, dispatch, inference, kvcache, ops, roofline
from ..achievable import (
    achievable_device,
    fractions,
    peak_fraction,
    point_gpu,
    point_precision,
)
from ..hardware import Accelerator, Link, get_accelerator
from ..published import KINDS, Kind, PublishedPoint, load
from . import LINK_EFFICIENCY, RDMA_LATENCY_S, UNSTATED_PRECISION, _serving
from ._engine import (
    Prediction,
    _calibration_time,
    _compare,
    _gpu_key,
    _Kind,
    _solve_constant,
    _time,
    with_role,
)

# --- GEMM -----------------------------------------------------------------------


def _gemm_out(p: PublishedPoint) -> str | None:
    return "bf16" if p.precision == "fp8" else None


def _gemm_cost(p: PublishedPoint) -> ops.Cost:
    """One GEMM's :func:`helpers.ops.matmul_cost`, times its ``batch`` (independent products)."""
    one = ops.matmul_cost(
        p.integer("m"),
        p.integer("k"),
        p.integer("n"),
        dtype=point_precision(p),
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
        achievable_device(point_gpu(p), point_precision(p)),
        dtype=point_precision(p),
        batch=p.integer("batch"),
        out_dtype=_gemm_out(p),
        overhead=dispatch.kernel_floor(point_gpu(p)) + constant,
    )
    return _gemm_value(p, seconds)


def _gemm_naive(p: PublishedPoint) -> float:
    cost = _gemm_cost(p)
    seconds = roofline.roofline_time(
        cost.flops, cost.bytes, point_gpu(p), dtype=point_precision(p)
    )
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
        acc = get_accelerator(point_gpu(p))
        f = peak_fraction(p)
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
        point_gpu(p),
        batch,
        point_precision(p),
        _resnet_fused(p),
        p.integer("image_size"),
    )
    seconds = dispatch.stream_time(
        kernels, dispatch_s, kernel_floor_s=dispatch.kernel_floor(point_gpu(p))
    )
    return batch / seconds


def _resnet_naive(p: PublishedPoint) -> float:
    batch = p.integer("batch")
    return batch / convnets.resnet50_step_time(
        batch,
        point_gpu(p),
        dtype=point_precision(p),
        image_size=p.integer("image_size"),
    )


_PRECISION_ORDER = ("fp16", "bf16", "fp8", "int8", "tf32", "fp32")

_RESNET = _Kind(
    series=lambda p: f"{p.gpu} · {p.setting['framework']}",
    excluded=lambda p: "",
    calibration_key=lambda p: (
        p.integer("batch"),
        _PRECISION_ORDER.index(point_precision(p)),
    ),
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
        inference.kernels_per_step(model) * dispatch.kernel_floor(point_gpu(p))
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
    acc = get_accelerator(point_gpu(p))
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
        p.setting["model"],
        context,
        point_gpu(p),
        n_gpus=p.integer("num_gpus"),
        dtype=dtype,
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
    naive=lambda p: _decode_value(p, point_gpu(p), 0.0, physical=False),
    model=lambda p, c: _decode_value(
        p, achievable_device(point_gpu(p), _decode_dtype(p)), c, physical=True
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
    "serving": _serving.compare_serving,
    "ttft": _serving.compare_ttft,
    "attention": _serving.compare_attention,
}


@cache
def compare(kind: Kind) -> tuple[Prediction, ...]:
    """The three models' predictions for every published point of ``kind``."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    return tuple(_COMPARE[kind](load(kind)))


_SPECS: dict[Kind, _Kind] = {
    "gemm": _GEMM,
    "resnet50": _RESNET,
    "decode": _DECODE,
    "kv_transfer": _KV,
    "serving": _serving.SERVING,
    "ttft": _serving.TTFT,
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
                iterations=_SPECS[kind].iterations,
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
        partial(_calibration_time, spec, point),
        _time(point, point.value),
        hi=spec.hi,
        iterations=spec.iterations,
    )
