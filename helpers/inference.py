"""Lower bounds on serving a transformer: prefill time, decode step time, and how many sequences fit.

Everything here is the roofline model (:mod:`helpers.roofline`) applied to the
FLOP and bytes that :mod:`helpers.llm` counts; no new formula for a cost is
introduced. Two assumptions are added, both stated where used:

* on ``n_gpus`` devices the work and the bytes split evenly (ideal tensor
  parallelism, communication ignored), as in :func:`helpers.kvcache.recompute_time`;
* a decode batch fits when the weights plus every sequence's KV cache fit in
  the devices' memory less a ``reserve`` fraction (activations, allocator
  slack, the CUDA context; vLLM's default ``gpu_memory_utilization=0.9``
  corresponds to ``reserve=0.1``, Kwon et al. 2023).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from . import _validate
from .hardware import Accelerator, Link, get_accelerator
from .kvcache import breakeven_tokens, kv_bytes, recompute_time, transfer_time
from .llm import ModelConfig, decode_cost, prefill_cost, weight_bytes
from .ops import Cost
from .roofline import Bound, bound, roofline_time


@dataclass(frozen=True)
class StepTime:
    """Roofline lower bound of one prefill or decode step.

    Attributes
    ----------
    seconds : float
        ``max(compute_s, memory_s)``: the bound itself.
    compute_s, memory_s : float
        FLOP / (peak FLOP/s) and bytes / (memory bandwidth), per device.
    regime : {'compute', 'memory'}
        Which term sets the bound.
    cost : Cost
        FLOP and bytes of the whole step (all devices together).
    """

    seconds: float
    compute_s: float
    memory_s: float
    regime: Bound
    cost: Cost


def _fraction_below_one(name: str, value: object) -> float:
    value = _validate.non_negative(name, value)
    if value >= 1:
        raise ValueError(f"{name} must be in [0, 1), got {value}")
    return value


def _step(cost: Cost, acc: str | Accelerator, dtype: str, n_gpus: int, mfu: float) -> StepTime:
    device = get_accelerator(acc)
    n_gpus = _validate.positive_int("n_gpus", n_gpus)
    mfu = _validate.fraction("mfu", mfu)
    flops = cost.flops / (n_gpus * mfu)
    bytes_ = cost.bytes / n_gpus
    seconds = roofline_time(flops, bytes_, device, dtype)
    regime = bound(flops, bytes_, device, dtype)
    return StepTime(seconds, flops / device.flops(dtype), bytes_ / device.memory_bandwidth, regime, cost)


def prefill_step(
    model: str | ModelConfig,
    acc: str | Accelerator,
    tokens: int,
    batch: int = 1,
    dtype: str = "bf16",
    n_gpus: int = 1,
    mfu: float = 1.0,
) -> StepTime:
    """Roofline bound of prefilling ``batch`` prompts of ``tokens`` tokens (:func:`helpers.llm.prefill_cost`).

    Parameters
    ----------
    model : str or ModelConfig
    acc : str or Accelerator
    tokens : int
        Prompt length in tokens.
    batch : int
        Prompts prefilled together (they share one read of the weights).
    dtype : str
        Storage dtype of weights and KV cache, and which peak FLOP/s to use.
    n_gpus : int
        Devices sharing the work evenly (communication ignored).
    mfu : float
        Fraction of the peak FLOP/s reached, in (0, 1]; 1 gives the datasheet bound.
    """
    return _step(prefill_cost(model, tokens, batch, dtype), acc, dtype, n_gpus, mfu)


def prefill_time(
    model: str | ModelConfig,
    acc: str | Accelerator,
    tokens: int,
    batch: int = 1,
    dtype: str = "bf16",
    n_gpus: int = 1,
    mfu: float = 1.0,
) -> float:
    """Seconds (lower bound) to prefill ``batch`` prompts of ``tokens`` tokens; see :func:`prefill_step`."""
    return prefill_step(model, acc, tokens, batch, dtype, n_gpus, mfu).seconds


def decode_step(
    model: str | ModelConfig,
    acc: str | Accelerator,
    context: int,
    batch: int = 1,
    dtype: str = "bf16",
    n_gpus: int = 1,
    mfu: float = 1.0,
) -> StepTime:
    """Roofline bound of one decode step: ``batch`` sequences with ``context`` cached tokens each emit one token.

    Costs from :func:`helpers.llm.decode_cost`: the weights are read once per
    step whatever the batch, each sequence's KV cache once per step.
    Parameters as in :func:`prefill_step`, with ``context`` (tokens already
    cached per sequence, >= 0) in place of ``tokens``.
    """
    return _step(decode_cost(model, context, batch, dtype), acc, dtype, n_gpus, mfu)


def decode_step_time(
    model: str | ModelConfig,
    acc: str | Accelerator,
    context: int,
    batch: int = 1,
    dtype: str = "bf16",
    n_gpus: int = 1,
    mfu: float = 1.0,
) -> float:
    """Seconds (lower bound) of one decode step; see :func:`decode_step`."""
    return decode_step(model, acc, context, batch, dtype, n_gpus, mfu).seconds


def decode_tokens_per_second(
    model: str | ModelConfig,
    acc: str | Accelerator,
    context: int,
    batch: int = 1,
    dtype: str = "bf16",
    n_gpus: int = 1,
    mfu: float = 1.0,
) -> float:
    """Upper bound on generated tokens per second: ``batch / decode_step_time``."""
    return _validate.positive_int("batch", batch) / decode_step_time(model, acc, context, batch, dtype, n_gpus, mfu)


def max_decode_batch(
    model: str | ModelConfig,
    acc: str | Accelerator,
    context: int,
    dtype: str = "bf16",
    n_gpus: int = 1,
    reserve: float = 0.1,
) -> int:
    """Largest decode batch whose weights and KV caches fit in memory (0 if the weights alone do not).

    Each sequence holds ``context + 1`` tokens of KV cache (its context and
    the token being generated, :func:`helpers.kvcache.kv_bytes`); the weights
    are stored once across the ``n_gpus`` devices.

    Parameters
    ----------
    model : str or ModelConfig
    acc : str or Accelerator
    context : int
        Tokens cached per sequence (>= 0).
    dtype : str
        Storage dtype of weights and KV cache.
    n_gpus : int
        Devices whose memory is pooled (weights and KV sharded across them).
    reserve : float
        Fraction of memory in [0, 1) kept free for activations and allocator slack
        (0.1 matches vLLM's default ``gpu_memory_utilization=0.9``).

    Returns
    -------
    int
        ``floor((n_gpus * capacity * (1 - reserve) - weights) / kv_per_sequence)``, at least 0.
    """
    device = get_accelerator(acc)
    context = _validate.non_negative_int("context", context)
    n_gpus = _validate.positive_int("n_gpus", n_gpus)
    reserve = _fraction_below_one("reserve", reserve)
    free = n_gpus * device.memory_capacity * (1 - reserve) - weight_bytes(model, dtype)
    if free <= 0:
        return 0
    return int(free // kv_bytes(model, context + 1, dtype))


def critical_decode_batch(
    model: str | ModelConfig,
    acc: str | Accelerator,
    context: int,
    dtype: str = "bf16",
    mfu: float = 1.0,
) -> float:
    """Batch at which a decode step's compute time catches up with its memory time (``inf`` if never).

    A decode step's FLOP and bytes are both affine in the batch ``b``
    (:func:`helpers.llm.decode_cost`): ``F(b) = b f`` and ``M(b) = W + b k``
    with ``W`` the weight bytes and ``k`` the bytes each sequence adds (its KV
    cache). The step is compute-bound once ``b f / P >= (W + b k) / B``, i.e.
    ``b >= (W / B) / (f / P - k / B)``; if ``f / P <= k / B`` (long contexts:
    attention reads more than it computes) it never is. Splitting over several
    devices scales both sides equally and leaves this batch unchanged.
    """
    device = get_accelerator(acc)
    mfu = _validate.fraction("mfu", mfu)
    one = decode_cost(model, context, 1, dtype)
    two = decode_cost(model, context, 2, dtype)
    per_seq_flops = two.flops - one.flops
    per_seq_bytes = two.bytes - one.bytes
    shared_bytes = one.bytes - per_seq_bytes
    gain = per_seq_flops / (device.flops(dtype) * mfu) - per_seq_bytes / device.memory_bandwidth
    if gain <= 0:
        return math.inf
    return (shared_bytes / device.memory_bandwidth) / gain


def recompute_window(
    model: str | ModelConfig,
    acc: str | Accelerator,
    link: str | Link,
    dtype: str = "bf16",
    n_gpus: int = 1,
    n_links: int = 1,
    mfu: float = 1.0,
    max_tokens: int = 1 << 20,
) -> tuple[int, int] | None:
    """Prefix lengths (first, last; inclusive) for which recomputing a KV cache beats fetching it, or ``None``.

    Compares :func:`helpers.kvcache.recompute_time` with
    :func:`helpers.kvcache.transfer_time` (same arguments) for prefixes of 1 to
    ``max_tokens`` tokens. ``recompute - transfer`` is convex in the prefix
    length, so recomputing wins on at most one interval: it ends where
    :func:`helpers.kvcache.breakeven_tokens` says fetching wins for good
    (``last + 1``), and starts (``first``, found here by bisection) where a
    lone prefill stops being so short that reading every weight for a handful
    of tokens makes it slower than the fetch.

    Returns
    -------
    (int, int) or None
        ``None`` when fetching is at least as fast for every length up to ``max_tokens``.
    """
    max_tokens = _validate.positive_int("max_tokens", max_tokens)
    end = breakeven_tokens(model, acc, link, dtype, n_gpus, n_links, mfu, max_tokens)
    if end == 1:
        return None
    last = max_tokens if math.isinf(end) else int(end) - 1

    def recompute_wins(n: int) -> bool:
        return recompute_time(model, n, acc, dtype, n_gpus, mfu) < transfer_time(model, n, link, dtype, n_links)

    if not recompute_wins(last):
        return None
    lo, hi = 1, last  # recomputing wins on one interval ending at ``last``: find its first length
    while lo < hi:
        mid = (lo + hi) // 2
        if recompute_wins(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo, last


__all__ = [
    "StepTime",
    "critical_decode_batch",
    "decode_step",
    "decode_step_time",
    "decode_tokens_per_second",
    "max_decode_batch",
    "prefill_step",
    "prefill_time",
    "recompute_window",
]
