"""Serving a transformer: prefill and decode step times, how many sequences fit, batches under a latency target.

The one home of every serving quantity in the book. Everything here is the
roofline model (:func:`helpers.roofline.breakdown`) applied to the FLOP and
bytes that :mod:`helpers.llm` counts; no new cost formula is introduced. Two
assumptions are added, both stated where used:

* on ``n_gpus`` devices the work and the bytes split evenly (ideal tensor
  parallelism, communication ignored);
* a decode batch fits when the weights plus every sequence's KV cache fit in
  the devices' memory less a ``reserve`` fraction (activations, allocator
  slack, the CUDA context). The default, :data:`RESERVE` = 0.1, matches
  vLLM's default ``gpu_memory_utilization=0.9`` (Kwon et al. 2023) and is the
  one used everywhere in the book. Memory capacities are the datasheet's
  figures read as GiB (see :class:`helpers.hardware.Accelerator`).

Calling convention (as everywhere in :mod:`helpers`): what is computed on
(``model``), how big (``tokens`` or ``context``), where (``acc``), then
keyword-only options (``batch``, ``dtype``, ``n_gpus``, ``mfu``, ``reserve``).

Examples
--------
>>> from helpers import inference
>>> inference.max_decode_batch("llama-3-70b", 4096, "H100", n_gpus=8)
355
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from . import _validate
from ._search import last_true, root
from .hardware import Accelerator, get_accelerator
from .llm import (
    ModelConfig,
    decode_cost,
    get_model,
    kv_cache_bytes,
    prefill_cost,
    weight_bytes,
    weights_read_bytes,
)
from .roofline import TimeBreakdown, breakdown, crossing_batch, ridge_point

RESERVE = 0.1
"""Share of device memory kept free in every capacity computation (vLLM's default)."""


def prefill_step(
    model: str | ModelConfig,
    tokens: int,
    acc: str | Accelerator,
    *,
    batch: int = 1,
    dtype: str = "bf16",
    n_gpus: int = 1,
    mfu: float = 1.0,
) -> TimeBreakdown:
    """Roofline bound of prefilling ``batch`` prompts of ``tokens`` tokens (:func:`helpers.llm.prefill_cost`).

    Recomputing a prefix's KV cache is prefilling it, so this is also the
    recompute time of :mod:`helpers.kvcache`.

    Parameters
    ----------
    model : str or ModelConfig
    tokens : int
        Prompt length in tokens.
    acc : str or Accelerator
    batch : int
        Prompts prefilled together (they share one read of the weights).
    dtype : str
        Storage dtype of weights and KV cache, and which peak FLOP/s to use.
    n_gpus : int
        Devices sharing the work evenly (communication ignored).
    mfu : float
        Fraction of the peak FLOP/s reached, in (0, 1]; 1 gives the datasheet bound.
    """
    cost = prefill_cost(model, tokens, batch=batch, dtype=dtype)
    return breakdown(cost.flops, cost.bytes, acc, dtype=dtype, n_gpus=n_gpus, mfu=mfu)


def prefill_time(
    model: str | ModelConfig,
    tokens: int,
    acc: str | Accelerator,
    *,
    batch: int = 1,
    dtype: str = "bf16",
    n_gpus: int = 1,
    mfu: float = 1.0,
) -> float:
    """Seconds (lower bound) to prefill ``batch`` prompts of ``tokens`` tokens; see :func:`prefill_step`.

    Examples
    --------
    >>> round(prefill_time("llama-3-70b", 4096, "H100", n_gpus=8) * 1e3, 1)  # ms
    73.6
    """
    return prefill_step(
        model, tokens, acc, batch=batch, dtype=dtype, n_gpus=n_gpus, mfu=mfu
    ).seconds


def decode_step(
    model: str | ModelConfig,
    context: int,
    acc: str | Accelerator,
    *,
    batch: int = 1,
    dtype: str = "bf16",
    n_gpus: int = 1,
    mfu: float = 1.0,
) -> TimeBreakdown:
    """Roofline bound of one decode step: ``batch`` sequences with ``context`` cached tokens each emit one token.

    Costs from :func:`helpers.llm.decode_cost`: the weights are read once per
    step whatever the batch, each sequence's KV cache once per step.
    Parameters as in :func:`prefill_step`, with ``context`` (tokens already
    cached per sequence, >= 0) in place of ``tokens``.
    """
    cost = decode_cost(model, context, batch=batch, dtype=dtype)
    return breakdown(cost.flops, cost.bytes, acc, dtype=dtype, n_gpus=n_gpus, mfu=mfu)


def decode_step_time(
    model: str | ModelConfig,
    context: int,
    acc: str | Accelerator,
    *,
    batch: int = 1,
    dtype: str = "bf16",
    n_gpus: int = 1,
    mfu: float = 1.0,
) -> float:
    """Seconds (lower bound) of one decode step; see :func:`decode_step`."""
    return decode_step(
        model, context, acc, batch=batch, dtype=dtype, n_gpus=n_gpus, mfu=mfu
    ).seconds


def free_kv_bytes(
    model: str | ModelConfig,
    acc: str | Accelerator,
    *,
    n_gpus: int = 1,
    dtype: str = "bf16",
    reserve: float = RESERVE,
    holds_weights: bool = True,
) -> float:
    """Bytes left for KV caches: ``n_gpus * capacity * (1 - reserve) - weights`` (negative if the weights do not fit).

    Parameters
    ----------
    model : str or ModelConfig
    acc : str or Accelerator
    n_gpus : int
        Devices whose memory is pooled (weights and KV sharded across them).
    dtype : str
        Storage dtype of the weights.
    reserve : float
        Fraction of memory in [0, 1) kept free for activations and allocator
        slack (:data:`RESERVE` by default).
    holds_weights : bool
        ``False`` for devices that hold only KV caches (the memory devices of
        attention offload, :mod:`helpers.offload`).
    """
    device = get_accelerator(acc)
    n_gpus = _validate.positive_int("n_gpus", n_gpus)
    reserve = _validate.fraction_below_one("reserve", reserve)
    weights = (
        weight_bytes(model, dtype=dtype)
        if _validate.boolean("holds_weights", holds_weights)
        else 0.0
    )
    return n_gpus * device.memory_capacity * (1 - reserve) - weights


def weights_fit(
    model: str | ModelConfig,
    acc: str | Accelerator,
    *,
    n_gpus: int = 1,
    dtype: str = "bf16",
    reserve: float = RESERVE,
) -> bool:
    """Whether the weights fit in ``n_gpus`` devices' memory less the ``reserve`` (``free_kv_bytes > 0``).

    Fitting the weights is necessary, not sufficient, for serving: a sequence
    also needs room for its KV cache (:func:`max_decode_batch`).
    """
    return free_kv_bytes(model, acc, n_gpus=n_gpus, dtype=dtype, reserve=reserve) > 0


def max_decode_batch(
    model: str | ModelConfig,
    context: int,
    acc: str | Accelerator,
    *,
    n_gpus: int = 1,
    dtype: str = "bf16",
    reserve: float = RESERVE,
    holds_weights: bool = True,
) -> int:
    """Largest decode batch whose KV caches fit beside the weights (0 if none does).

    Each sequence holds ``context + 1`` tokens of KV cache (its context and
    the token being generated); the weights are stored once across the
    ``n_gpus`` devices. Options as in :func:`free_kv_bytes`.

    Returns
    -------
    int
        ``floor(free_kv_bytes / kv_cache_bytes(context + 1))``, at least 0.
    """
    context = _validate.non_negative_int("context", context)
    free = free_kv_bytes(
        model,
        acc,
        n_gpus=n_gpus,
        dtype=dtype,
        reserve=reserve,
        holds_weights=holds_weights,
    )
    if free <= 0:
        return 0
    return int(free // kv_cache_bytes(model, context + 1, dtype=dtype))


def critical_decode_batch(
    model: str | ModelConfig,
    context: int,
    acc: str | Accelerator,
    *,
    dtype: str = "bf16",
    mfu: float = 1.0,
) -> float:
    """Batch at which a decode step's compute time catches up with its memory time (``inf`` if never).

    :func:`helpers.roofline.crossing_batch` of :func:`helpers.llm.decode_cost`:
    a decode step's FLOP grow as ``b f`` and its bytes as ``W + b k`` (weights
    ``W`` read once, each sequence's KV cache ``k``), so it is compute-bound
    once ``b >= r W / (f - r k)`` with ``r = mfu * peak / bandwidth``; if
    ``f <= r k`` (long contexts: attention reads more than it computes) it
    never is. Splitting over several devices leaves this batch unchanged.

    Mixture of experts: ``W`` is no longer fixed. A step reads the experts
    its ``b`` tokens touch (:func:`helpers.llm.weights_read_bytes`), which grow
    with ``b`` until all are touched, while its FLOP follow the active
    parameters only; the crossing, found by bisection on the (real) batch, is
    therefore far larger than for a dense model of the same active size.
    """
    context = _validate.non_negative_int("context", context)
    m = get_model(model)
    if m.moe is None:
        return crossing_batch(
            lambda b: decode_cost(m, context, batch=b, dtype=dtype),
            acc,
            dtype=dtype,
            mfu=mfu,
        )
    mfu = _validate.fraction("mfu", mfu)
    ridge = mfu * ridge_point(acc, dtype=dtype)
    one = decode_cost(m, context, batch=1, dtype=dtype)
    per_seq = one.bytes - weights_read_bytes(m, 1, dtype=dtype)
    if one.flops <= ridge * per_seq:
        return math.inf

    def surplus(
        b: float,
    ) -> float:  # compute time minus memory time, in units of 1/bandwidth
        return (
            b * one.flops / ridge - weights_read_bytes(m, b, dtype=dtype) - b * per_seq
        )

    hi = 1.0
    while surplus(hi) < 0:  # convex in b and negative at 0: one crossing
        hi *= 2
    return root(surplus, 0.0, hi, rel_tol=1e-6)


@dataclass(frozen=True)
class SloBatch:
    """The largest decode batch that meets a time-between-tokens (TBT) target.

    Attributes
    ----------
    batch : int
        Sequences per step (0 when even one sequence misses the target or does not fit).
    step_s : float
        Seconds per decode step at that batch (at batch 1 when ``batch == 0``).
    tokens_per_s : float
        ``batch / step_s``: output tokens per second of the whole deployment.
    limited_by : {'slo', 'memory', 'max_batch'}
        What stopped the batch from growing.
    """

    batch: int
    step_s: float
    tokens_per_s: float
    limited_by: Literal["slo", "memory", "max_batch"]


def max_batch_under_slo(
    model: str | ModelConfig,
    context: int,
    acc: str | Accelerator,
    *,
    tbt_s: float,
    n_gpus: int = 1,
    dtype: str = "bf16",
    mfu: float = 1.0,
    overhead: float = 0.0,
    reserve: float = RESERVE,
    max_batch: int | None = None,
) -> SloBatch:
    """Largest continuous batch whose decode step takes at most ``tbt_s`` seconds.

    The step time is :func:`decode_step_time` plus a fixed ``overhead`` per
    step; it grows with the batch, so the largest batch is found by
    bisection. With continuous batching the sequences of a batch have
    different lengths; ``context`` stands for their mean (the KV bytes read
    are linear in it). The batch is also capped by :func:`max_decode_batch`
    (same ``reserve``) and by ``max_batch`` if given.
    """
    tbt_s = _validate.positive("tbt_s", tbt_s)
    overhead = _validate.non_negative("overhead", overhead)
    cap = max_decode_batch(
        model, context, acc, n_gpus=n_gpus, dtype=dtype, reserve=reserve
    )
    reason: Literal["slo", "memory", "max_batch"] = "memory"
    if max_batch is not None:
        max_batch = _validate.positive_int("max_batch", max_batch)
        if max_batch < cap:
            cap, reason = max_batch, "max_batch"

    def step(b: int) -> float:
        return overhead + decode_step_time(
            model, context, acc, batch=b, dtype=dtype, n_gpus=n_gpus, mfu=mfu
        )

    if cap == 0:
        return SloBatch(0, step(1), 0.0, "memory")
    if step(1) > tbt_s:
        return SloBatch(0, step(1), 0.0, "slo")
    if step(cap) <= tbt_s:
        return SloBatch(cap, step(cap), cap / step(cap), reason)
    lo = last_true(lambda b: step(b) <= tbt_s, 1, cap)  # step(1) <= tbt < step(cap)
    return SloBatch(lo, step(lo), lo / step(lo), "slo")


__all__ = [
    "RESERVE",
    "SloBatch",
    "critical_decode_batch",
    "decode_step",
    "decode_step_time",
    "free_kv_bytes",
    "max_batch_under_slo",
    "max_decode_batch",
    "prefill_step",
    "prefill_time",
    "weights_fit",
]
