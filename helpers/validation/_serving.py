"""The engine kinds of :mod:`helpers.validation`: serving throughput, time to first token, attention kernels.

Each point is predicted by the book's serving engine (:func:`helpers.engine.serve`)
or, for an attention kernel, by the attention pricing the engine uses
(:func:`helpers.efficiency.attention_fractions` and
:func:`helpers.steps.prefill_attention_efficiency`). Nothing here is fitted
to these points; the calibrated model adds **one** constant per GPU and kind,
a CPU time per engine iteration (the engine preset's ``host_s``), fitted on
the point a rule picks before any error is computed:

* ``serving``: the GPU's run on the fewest GPUs, then of the smallest model,
  then the shortest request (prompt plus output), then the shortest output;
* ``ttft``: the same order, then the fewest clients;
* ``attention``: no constant (a published kernel rate with an unstated batch
  carries no fixed time to fit): every point validates.

Points are left out only by rules about what the engine can represent, fixed
with the data (before any error was computed): a precision the engine prices
as weight-only although the GPU computes in it (FP4, where the engine has no
FP4 path), a mixture-of-experts run whose expert-parallel size the source does
not state, a model the catalog lacks, a setting the engine refuses (it raises:
a GPU without the SM count its GEMM tiling needs, a model that does not fit).
The naive model has no engine counterpart (the engine has no datasheet-peak
mode): its column is NaN for these kinds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from functools import cache

from ..hardware import get_accelerator
from ..published import PublishedPoint
from ._engine import Prediction, _compare, _Kind

_SERVING_UNITS = ("output_throughput", "output_throughput_per_gpu")


def _engine():  # type: ignore[no-untyped-def]
    from .. import engine  # imported late: the engine module imports the catalogs

    return engine


def _opt_int(p: PublishedPoint, column: str) -> int | None:
    text = p.setting.get(column, "")
    return int(text) if text else None


def _gpus(p: PublishedPoint) -> int:
    return p.integer("tp") * (_opt_int(p, "replicas") or 1)


def _serve(p: PublishedPoint, host_extra_s: float):  # type: ignore[no-untyped-def]
    """:func:`helpers.engine.serve` of ``p``'s setting, ``host_extra_s`` added to every iteration's CPU time."""
    key = (p.gpu, p.precision, p.quantity, tuple(sorted(p.setting.items())))
    return _serve_setting(key, host_extra_s)


@cache
def _serve_setting(key: tuple, host_extra_s: float):  # type: ignore[no-untyped-def]
    gpu, precision, _, items = key
    s = dict(items)

    def opt(column: str) -> int | None:
        return int(s[column]) if s.get(column) else None

    eng = _engine()
    preset = eng.preset(s["engine"])
    if host_extra_s:
        preset = replace(preset, host_s=preset.host_s + host_extra_s)
    kwargs: dict[str, object] = {}
    for column in ("requests", "concurrency"):
        if opt(column) is not None:
            kwargs[column] = opt(column)
    return eng.serve(
        s["model"],
        gpu,
        tp=int(s["tp"]),
        replicas=opt("replicas") or 1,
        weight_dtype=precision or "bf16",
        kv_dtype=s.get("kv_precision") or None,
        input_len=int(s["input_len"]),
        output_len=int(s["output_len"]),
        engine=preset,
        ep=opt("ep") or 1,
        dp_attention=s.get("dp_attention", "") == "true",
        **kwargs,
    )


def _serving_value(p: PublishedPoint, constant: float) -> float:
    r = _serve(p, constant)
    if p.quantity == "output_throughput_per_gpu":
        return float(r.output_tokens_per_s) / _gpus(p)
    if p.quantity == "output_throughput":
        return float(r.output_tokens_per_s)
    raise ValueError(f"serving quantity {p.quantity!r} is not one of {_SERVING_UNITS}")


def _ttft_value(p: PublishedPoint, constant: float) -> float:
    if p.quantity != "ttft":
        raise ValueError(f"ttft quantity must be 'ttft', got {p.quantity!r}")
    return float(_serve(p, constant).ttft_s)


def _excluded(p: PublishedPoint) -> str:
    """Why the engine cannot represent ``p`` ("" if it can): rules on the setting, not on errors."""
    from .. import llm, steps

    try:
        model = llm.get_model(p.setting["model"])
    except KeyError:
        return f"{p.setting['model']} is not in the model catalog"
    precision = p.precision or "bf16"
    if precision == "fp4":
        computes = steps.compute_dtype(p.gpu or "", "fp4", "fp4")
        if computes != "fp4":
            return (
                "fp4 runs on the GPU's FP4 tensor cores; the engine prices fp4 weights "
                f"as weight-only (dequantised to {computes})"
            )
    if model.moe is not None and not p.setting.get("ep", ""):
        return (
            "a mixture of experts whose expert-parallel size the source does not state"
        )
    try:
        _serve(p, 0.0)
    except (KeyError, ValueError) as err:
        return f"the engine cannot price it: {str(err).split(' (')[0]}"
    return ""


def _calibration_key(p: PublishedPoint) -> tuple[float, ...]:
    from .. import llm

    try:
        params = float(llm.param_count(p.setting["model"]))
    except KeyError:
        params = math.inf
    return (
        _gpus(p),
        params,
        p.integer("input_len") + p.integer("output_len"),
        p.integer("output_len"),
        _opt_int(p, "concurrency") or 0,
    )


def _setting(p: PublishedPoint) -> tuple[str, ...]:
    return (p.software, p.precision or "", *sorted(p.setting.items()))  # type: ignore[arg-type]


def _series(p: PublishedPoint) -> str:
    return f"{p.gpu} · {p.setting['engine']} · {p.software.split(',')[0]}"


SERVING = _Kind(
    series=_series,
    excluded=_excluded,
    calibration_key=_calibration_key,
    naive=lambda p: math.nan,
    model=_serving_value,
    constant="CPU time per engine iteration",
    same_run=lambda p, c: _setting(p) == _setting(c),
    hi=1e-2,
    iterations=12,
    predict_excluded=False,
)

TTFT = replace(SERVING, model=_ttft_value)


# --- attention kernels --------------------------------------------------------------


def attention_flops(p: PublishedPoint) -> float:
    """FLOP the source counts for one attention forward: ``4 b h s_q s_k d``, halved when causal.

    The convention of the FlashAttention benchmarks (and so of the published
    TFLOP/s); a batch or head count the source leaves blank counts as 1 (the
    rate does not depend on it).
    """
    s = p.setting
    flops = 4.0 * (_opt_int(p, "batch") or 1) * (_opt_int(p, "n_heads") or 1)
    flops *= p.integer("seq_q") * p.integer("seq_k") * p.integer("head_dim")
    return flops / 2 if s["causal"] == "true" else flops


def _attention_rate(p: PublishedPoint) -> float:
    """Predicted FLOP/s: the 16-bit peak x the engine's prefill attention share x what causal tiling keeps.

    The engine's share (:func:`helpers.efficiency.attention_fractions`) is
    its generation's published FlashAttention rate over the peak; a causal
    kernel also computes the diagonal tiles whole
    (:func:`helpers.steps.prefill_attention_efficiency`). The source states
    no batch or head count, so the thread blocks are taken to fill every SM
    in whole waves (as many heads as SMs).
    """
    from .. import efficiency, steps

    acc = get_accelerator(p.gpu or "")
    share = efficiency.attention_fractions(acc).prefill_compute
    if p.setting["causal"] == "true":
        share *= steps.prefill_attention_efficiency(p.integer("seq_q"), acc.sms(), acc)
    return acc.flops(p.precision or "fp16") * share


def _attention(points: Sequence[PublishedPoint]) -> list[Prediction]:
    out = []
    for p in points:
        try:
            rate = _attention_rate(p)
            role, reason = "validation", "no constant: every point validates"
        except (KeyError, ValueError) as err:
            rate, role, reason = math.nan, "excluded", str(err)
        acc = get_accelerator(p.gpu or "")
        naive = (
            acc.flops(p.precision or "fp16")
            if p.precision in acc.peak_flops
            else math.nan
        )
        out.append(
            Prediction(
                p,
                naive,
                rate,
                role,  # type: ignore[arg-type]
                f"{p.gpu} · {p.setting['kernel']}",
                reason,
                constant_free=rate,
            )
        )
    return out


def compare_serving(points: Sequence[PublishedPoint]) -> list[Prediction]:
    """Predictions of the ``serving`` points (one constant per GPU)."""
    return _compare(points, SERVING)


def compare_ttft(points: Sequence[PublishedPoint]) -> list[Prediction]:
    """Predictions of the ``ttft`` points (one constant per GPU)."""
    return _compare(points, TTFT)


def compare_attention(points: Sequence[PublishedPoint]) -> list[Prediction]:
    """Predictions of the ``attention`` points (no constant)."""
    return _attention(points)
