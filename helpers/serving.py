"""Serving under latency targets: co-located steps, goodput and the prefill-to-decode ratio.

A serving system is judged on two latencies per request (Zhong et al.,
DistServe, OSDI'24; Qin et al., Mooncake, FAST'25):

* **TTFT**, time to first token: queueing plus the prompt's prefill (plus
  fetching its cached prefix);
* **TBT**, time between tokens (also called TPOT): the duration of each
  decode step the request's sequence takes part in.

Speculative decoding changes the TBT arithmetic: one verify step emits
several tokens on average (:func:`speculative_tokens_per_step`,
:func:`speculative_step`).

A request counts only if both meet their targets; *goodput* is the rate of
such requests (DistServe's term; Mooncake's "effective request capacity" is
the same count as a share of all requests).

No new cost formula lives here: step times are the roofline bounds of
:mod:`helpers.inference` applied to the FLOP and bytes that
:mod:`helpers.llm` counts. Units: seconds, tokens, requests.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _args
from ._moved import forwarder
from .hardware import Accelerator, Link
from .inference import (
    AUTO,
    _with_comm,
    decode_step_time,
    mean_decode_context,
    suffix_prefill_time,
    tp_allreduce_time,
)
from .llm import (
    ModelConfig,
    attention_flops,
    decode_cost,
    kv_cache_bytes_per_token,
    prefill_cost,
    weights_read_bytes,
)
from .roofline import TimeBreakdown, breakdown


def colocated_step(
    model: str | ModelConfig,
    context: int,
    acc: str | Accelerator,
    *,
    batch: int,
    chunk: int,
    prefix: int = 0,
    dtype: str = "bf16",
    n_gpus: int = 1,
    mfu: float = 1.0,
    link: str | Link | None = AUTO,
) -> TimeBreakdown:
    """Roofline bound of one step of a co-located server: a decode batch plus a chunk of a prompt.

    Continuous batching without disaggregation runs a waiting prompt's
    prefill (whole, or a ``chunk`` of it with chunked prefill, as in
    Sarathi-Serve and vLLM) in the same forward pass as the decode batch.
    The step's FLOP are the sum of :func:`helpers.llm.decode_cost` (``batch``
    sequences at ``context`` tokens) and :func:`helpers.llm.prefill_cost`
    (``chunk`` tokens); its bytes are their sum less one read of the weights,
    which the two share (:func:`helpers.llm.weights_read_bytes`).

    A chunk that is not the prompt's first attends to the ``prefix`` tokens
    of its prompt that earlier chunks prefilled: ``chunk * prefix`` more
    query-key pairs (:func:`helpers.llm.attention_flops`), and those tokens'
    KV cache read once (``prefix *``
    :func:`helpers.llm.kv_cache_bytes_per_token`). The ``k``-th chunk
    (from 0) of size ``c`` has ``prefix = k c``. ``prefix = 0`` costs the chunk
    as the start of a prompt. On ``n_gpus > 1`` the step pays the
    tensor-parallel all-reduces of its ``batch + chunk`` tokens
    (:func:`helpers.inference.tp_allreduce_time`).

    Parameters
    ----------
    model : str or ModelConfig
    context : int
        Cached tokens per decoding sequence (>= 0).
    acc : str or Accelerator
    batch : int
        Decoding sequences in the step (>= 1).
    chunk : int
        Prompt tokens prefilled in the same step (>= 0; 0 is a plain decode step).
    prefix : int
        Tokens of the chunk's prompt already prefilled by earlier chunks (>= 0).
    dtype, n_gpus, mfu, link
        As in :func:`helpers.inference.decode_step`.
    """
    chunk = _args.non_negative_int("chunk", chunk)
    prefix = _args.non_negative_int("prefix", prefix)
    if prefix and not chunk:
        raise ValueError("prefix must be 0 when chunk is 0")
    dec = decode_cost(model, context, batch=batch, dtype=dtype)
    comm = tp_allreduce_time(
        model, batch + chunk, acc, n_gpus=n_gpus, dtype=dtype, link=link
    )
    if chunk == 0:
        parts = breakdown(
            dec.flops, dec.bytes, acc, dtype=dtype, n_gpus=n_gpus, mfu=mfu
        )
        return _with_comm(parts, comm)
    pre = prefill_cost(model, chunk, dtype=dtype)
    shared = (
        weights_read_bytes(model, batch, dtype=dtype)
        + weights_read_bytes(model, chunk, dtype=dtype)
        - weights_read_bytes(model, batch + chunk, dtype=dtype)
    )
    earlier_flops = float(attention_flops(model, chunk * prefix))
    earlier_bytes = prefix * kv_cache_bytes_per_token(model, dtype=dtype)
    parts = breakdown(
        dec.flops + pre.flops + earlier_flops,
        dec.bytes + pre.bytes - shared + earlier_bytes,
        acc,
        dtype=dtype,
        n_gpus=n_gpus,
        mfu=mfu,
    )
    return _with_comm(parts, comm)


def colocated_step_time(
    model: str | ModelConfig,
    context: int,
    acc: str | Accelerator,
    *,
    batch: int,
    chunk: int,
    prefix: int = 0,
    dtype: str = "bf16",
    n_gpus: int = 1,
    mfu: float = 1.0,
    link: str | Link | None = AUTO,
) -> float:
    """Seconds (lower bound) of one co-located step; see :func:`colocated_step`.

    Examples
    --------
    A 2,048-token chunk makes a 64-sequence decode step of Llama-3-70B on
    8 x H100 four times longer (a chunk of 0 tokens is a plain decode step):

    >>> from helpers import serving
    >>> alone = serving.colocated_step_time("llama-3-70b", 4096, "H100", batch=64, chunk=0, n_gpus=8, link=None)
    >>> mixed = serving.colocated_step_time("llama-3-70b", 4096, "H100", batch=64, chunk=2048, n_gpus=8, link=None)
    >>> round(mixed / alone, 1)
    4.4
    """
    return colocated_step(
        model,
        context,
        acc,
        batch=batch,
        chunk=chunk,
        prefix=prefix,
        dtype=dtype,
        n_gpus=n_gpus,
        mfu=mfu,
        link=link,
    ).seconds


def speculative_tokens_per_step(acceptance: float, drafted: int) -> float:
    """Mean tokens a speculative-decoding step emits: ``(1 - a**(k + 1)) / (1 - a)``.

    A draft proposes ``k = drafted`` tokens; the target model verifies them in
    one step, keeps the longest accepted prefix and adds one token of its own.
    With each drafted token accepted independently with probability ``a``,
    the mean number emitted is ``1 + a + ... + a**k`` (Leviathan et al.,
    "Fast Inference from Transformers via Speculative Decoding", ICML'23,
    Eq. 1). ``drafted = 0`` is plain decoding (1 token).

    Parameters
    ----------
    acceptance : float
        ``a``, the chance that one drafted token is accepted, in [0, 1].
    drafted : int
        ``k``, drafted tokens verified per step (>= 0).

    Examples
    --------
    >>> round(speculative_tokens_per_step(0.8, 4), 3)
    3.362
    """
    a = _args.non_negative("acceptance", acceptance)
    if a > 1:
        raise ValueError(f"acceptance must be in [0, 1], got {a}")
    k = _args.non_negative_int("drafted", drafted)
    if a == 1:
        return float(k + 1)
    return (1 - a ** (k + 1)) / (1 - a)


def speculative_step(
    model: str | ModelConfig,
    context: int,
    acc: str | Accelerator,
    *,
    batch: int,
    drafted: int,
    dtype: str = "bf16",
    n_gpus: int = 1,
    mfu: float = 1.0,
    link: str | Link | None = AUTO,
) -> TimeBreakdown:
    """Roofline bound of the target model's verify step: ``batch`` sequences, ``drafted + 1`` query tokens each.

    :func:`helpers.llm.decode_cost` with ``query_tokens = drafted + 1``: the
    FLOP grow with the query tokens, the weights and each sequence's KV cache
    are still read once. The draft model's own time is left out (it is small
    for a draft head or a much smaller model, but not zero). On
    ``n_gpus > 1`` the step pays the tensor-parallel all-reduces of its
    ``batch * (drafted + 1)`` tokens (:func:`helpers.inference.tp_allreduce_time`).
    ``drafted = 0`` is :func:`helpers.inference.decode_step`'s plain step.
    Divide by :func:`speculative_tokens_per_step` for the mean time between tokens.
    """
    drafted = _args.non_negative_int("drafted", drafted)
    cost = decode_cost(
        model, context, batch=batch, dtype=dtype, query_tokens=drafted + 1
    )
    comm = tp_allreduce_time(
        model, batch * (drafted + 1), acc, n_gpus=n_gpus, dtype=dtype, link=link
    )
    parts = breakdown(cost.flops, cost.bytes, acc, dtype=dtype, n_gpus=n_gpus, mfu=mfu)
    return _with_comm(parts, comm)


@dataclass(frozen=True)
class Goodput:
    """Requests that met both latency targets.

    Attributes
    ----------
    attained : float
        Share of requests with TTFT <= its target and TBT <= its target, in [0, 1]
        (Mooncake's "effective request capacity" is this share).
    per_s : float
        Those requests per second of the trace's duration (DistServe's goodput).
    """

    attained: float
    per_s: float


def goodput(
    ttft_s: Sequence[float] | np.ndarray,
    tbt_s: Sequence[float] | np.ndarray,
    duration_s: float,
    *,
    ttft_slo_s: float,
    tbt_slo_s: float,
) -> Goodput:
    """Share and rate of requests whose TTFT and TBT both meet their targets.

    Parameters
    ----------
    ttft_s, tbt_s : sequence of float
        Each request's time to first token and time between tokens, seconds
        (same length; for TBT, whatever statistic the targets are set on:
        Mooncake uses the mean of the slowest 10 % of a request's intervals).
    duration_s : float
        Seconds the requests arrived over, > 0.
    ttft_slo_s, tbt_slo_s : float
        The targets, seconds, > 0.

    Examples
    --------
    >>> g = goodput([1.0, 2.0, 40.0], [0.05, 0.5, 0.05], 10.0, ttft_slo_s=30, tbt_slo_s=0.1)
    >>> round(g.attained, 3), g.per_s
    (0.333, 0.1)
    """
    ttft = _args.positive_array("ttft_s", ttft_s)
    tbt = _args.positive_array("tbt_s", tbt_s)
    if ttft.shape != tbt.shape:
        raise ValueError(
            f"ttft_s and tbt_s must have the same length, got {ttft.size} and {tbt.size}"
        )
    duration_s = _args.positive("duration_s", duration_s)
    ok = (ttft <= _args.positive("ttft_slo_s", ttft_slo_s)) & (
        tbt <= _args.positive("tbt_slo_s", tbt_slo_s)
    )
    return Goodput(attained=float(ok.mean()), per_s=float(ok.sum()) / duration_s)


@dataclass(frozen=True)
class PdRatio:
    """Prefill and decode work per request, and the instance ratio that balances them.

    Attributes
    ----------
    prefill_s : float
        Seconds of one prefill instance per request (its uncached prompt tokens).
    decode_s : float
        Seconds of one decode instance per request: its output tokens times
        the step time, shared among the ``batch`` sequences of a step.
    ratio : float
        ``prefill_s / decode_s``: prefill instances per decode instance that
        keep both pools equally busy (``G_P : G_D``).
    """

    prefill_s: float
    decode_s: float
    ratio: float


def pd_ratio(
    model: str | ModelConfig,
    input_tokens: int,
    output_tokens: int,
    acc: str | Accelerator,
    *,
    batch: int,
    hit_tokens: int = 0,
    dtype: str = "bf16",
    n_gpus: int = 1,
    mfu: float = 1.0,
    link: str | Link | None = AUTO,
) -> PdRatio:
    """Prefill instances per decode instance for requests of ``input_tokens`` in, ``output_tokens`` out.

    Each request costs the prefill pool ``R(input) - R(hit)`` seconds
    (:func:`helpers.inference.prefill_time`; a cached prefix of ``hit_tokens``
    is not recomputed, its fetch is assumed hidden) and the decode pool
    ``output_tokens * t_step / batch`` seconds, with ``t_step`` the
    :func:`helpers.inference.decode_step_time` of ``batch`` sequences at the
    mean context ``input_tokens + output_tokens / 2``. Both instances are
    ``n_gpus`` devices of type ``acc``. Queueing and latency targets are left
    out: the ratio balances work, and the batch is where the TBT target enters.

    Parameters
    ----------
    model : str or ModelConfig
    input_tokens, output_tokens : int
        Prompt and generated tokens of a (mean) request, >= 1.
    acc : str or Accelerator
    batch : int
        Sequences per decode step (e.g. the largest under the TBT target,
        :func:`helpers.inference.max_batch_under_slo`).
    hit_tokens : int
        Cached prefix tokens, 0 <= hit_tokens < input_tokens.
    dtype, n_gpus, mfu
        As in :func:`helpers.inference.prefill_time`.
    """
    input_tokens = _args.positive_int("input_tokens", input_tokens)
    output_tokens = _args.positive_int("output_tokens", output_tokens)
    hit_tokens = _args.non_negative_int("hit_tokens", hit_tokens)
    if hit_tokens >= input_tokens:
        raise ValueError(
            f"hit_tokens must be below input_tokens ({input_tokens}), got {hit_tokens}"
        )
    batch = _args.positive_int("batch", batch)
    opts: dict[str, Any] = {"dtype": dtype, "n_gpus": n_gpus, "mfu": mfu, "link": link}
    prefill_s = suffix_prefill_time(model, hit_tokens, input_tokens, acc, **opts)
    context = mean_decode_context(input_tokens, output_tokens)
    step = decode_step_time(model, context, acc, batch=batch, **opts)
    decode_s = output_tokens * step / batch
    return PdRatio(prefill_s=prefill_s, decode_s=decode_s, ratio=prefill_s / decode_s)


__all__ = [
    "Goodput",
    "PdRatio",
    "colocated_step",
    "colocated_step_time",
    "goodput",
    "pd_ratio",
    "speculative_step",
    "speculative_tokens_per_step",
]

__getattr__ = forwarder(__name__)
