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

import functools
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _args
from ._moved import forwarder
from .hardware import Accelerator, Link
from .inference import (
    AUTO,
    decode_step_time,
    mean_decode_context,
    suffix_prefill_time,
    tp_allreduce_time,
    with_comm,
)
from .llm import (
    ModelConfig,
    attention_flops,
    decode_cost,
    get_model,
    kv_cache_bytes_per_token,
    prefill_cost,
    weights_read_bytes,
)
from .roofline import TimeBreakdown, breakdown

if TYPE_CHECKING:
    from .steps import StepTime


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
        return with_comm(parts, comm)
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
    return with_comm(parts, comm)


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
    return with_comm(parts, comm)


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


# ---------------------------------------------------------------------------
# Measured efficiency: the terms a roofline leaves out, one switch each
# ---------------------------------------------------------------------------

EFFICIENCY_TERMS: tuple[str, ...] = (
    "achievable_compute",
    "achievable_bandwidth",
    "collectives",
    "step_floor",
    "tail_headroom",
)
"""The measured-efficiency terms, in the order chapter ``latency_targets``'s gap table adds them.

* ``"achievable_compute"``: prefill (and every step's FLOP) at the best
  published matmul share of the datasheet peak (:func:`helpers.achievable.fractions`);
* ``"achievable_bandwidth"``: decode (and every step's bytes) at the best
  published share of the datasheet bandwidth (same function);
* ``"collectives"``: the tensor-parallel all-reduces
  (:func:`helpers.inference.tp_allreduce_time`) and, for mixture-of-experts
  layers under expert parallelism, DeepEP's measured all-to-alls
  (:data:`helpers.multigpu.DEEPEP_LOW_LATENCY_S`);
* ``"step_floor"``: every kernel of a step pays the GPU's fixed time per kernel
  (:func:`helpers.inference.kernels_per_step` times :func:`helpers.dispatch.kernel_floor`);
* ``"tail_headroom"``: a percentile TBT target (Mooncake's mean of the slowest
  10 % of intervals, or a p90) is met by the slow steps, whose sequences hold
  more context than the mean (:func:`tail_context`).
"""

TAIL_Z = 1.2816
"""Standard normal quantile of 0.9: the p90 of a sum of many independent contexts (central limit)."""


KERNEL_SUM = "kernel_sum"
"""The term that prices a dense step as the sum of its kernels (:func:`helpers.steps.mixed_step`).

Not one of :data:`EFFICIENCY_TERMS` (chapter ``latency_targets``'s gap table
adds those to one whole-step roofline); :data:`STEP_TERMS` adds it. With it
on, a dense step is the engine simulator's price (:mod:`helpers.engine`):
every kernel at its own measured roof and floor, back to back on one stream,
so a prompt chunk's compute-bound GEMMs no longer hide the decodes'
memory-bound attention as ``max(FLOP / peak, bytes / bandwidth)`` lets them.
It replaces ``"achievable_compute"``, ``"achievable_bandwidth"`` and
``"step_floor"`` for such a step (the kernels carry their own shares and
floors); ``"collectives"`` still switches the all-reduces. A mixture of
experts is priced kernel by kernel with or without it.
"""

STEP_TERMS: tuple[str, ...] = (*EFFICIENCY_TERMS, KERNEL_SUM)
"""Every term :func:`measured_step_time` knows: :data:`EFFICIENCY_TERMS` and :data:`KERNEL_SUM` (the planner's set)."""


def _terms(terms: Collection[str]) -> frozenset[str]:
    chosen = frozenset(terms)
    unknown = chosen - set(STEP_TERMS)
    if unknown:
        raise ValueError(
            f"terms: unknown {sorted(unknown)}; choose from {list(STEP_TERMS)}"
        )
    return chosen


def efficiency_device(
    acc: str | Accelerator,
    *,
    dtype: str = "bf16",
    terms: Collection[str] = EFFICIENCY_TERMS,
) -> Accelerator:
    """``acc`` derated by the achievable shares that ``terms`` switch on (the datasheet otherwise).

    Catalog GPUs are derated once per (GPU, dtype, terms) and the result reused
    (the planner prices thousands of steps); an :class:`Accelerator` that is not
    the catalog's own entry is derated afresh every call.
    """
    from .hardware import get_accelerator

    chosen = _terms(terms)
    device = get_accelerator(acc)
    if get_accelerator(device.name) is device:
        return _catalog_efficiency_device(device.name, dtype, chosen)
    return _derate(device, dtype, chosen)


def _derate(acc: str | Accelerator, dtype: str, chosen: frozenset[str]) -> Accelerator:
    from .achievable import fractions
    from .roofline import achievable

    compute, memory = fractions(acc, dtype)
    return achievable(
        acc,
        compute_fraction=compute if "achievable_compute" in chosen else 1.0,
        memory_fraction=memory if "achievable_bandwidth" in chosen else 1.0,
    )


@functools.lru_cache(maxsize=256)
def _catalog_efficiency_device(
    name: str, dtype: str, chosen: frozenset[str]
) -> Accelerator:
    return _derate(name, dtype, chosen)


def tail_context(mean_context: float, context_std: float, batch: int) -> float:
    """Per-sequence context of a slow (p90) decode step of ``batch`` sequences, tokens.

    A step reads the KV cache of all its sequences, so its time follows their
    *sum* of contexts. With contexts drawn independently (mean ``mu``,
    standard deviation ``sigma``), the sum's p90 is ``b mu + z sqrt(b) sigma``
    (central limit, ``z`` = :data:`TAIL_Z`), so the p90 step sees a mean
    context of ``mu + z sigma / sqrt(b)``: large batches average the spread
    away, small ones do not.
    """
    mean_context = _args.non_negative("mean_context", mean_context)
    context_std = _args.non_negative("context_std", context_std)
    batch = _args.positive_int("batch", batch)
    return mean_context + TAIL_Z * context_std / math.sqrt(batch)


def step_floor_time(model: str | ModelConfig, acc: str | Accelerator) -> float:
    """Seconds every step pays before any work: kernels per step times the GPU's fixed time per kernel."""
    from .dispatch import kernel_floor
    from .inference import kernels_per_step

    return kernels_per_step(model) * kernel_floor(acc)


def _moe_expert_bytes(m: ModelConfig, tokens: float, dtype: str) -> float:
    """Routed-expert bytes ``tokens`` tokens touch in all MoE layers (0 for a dense model)."""
    if m.moe is None:
        return 0.0
    return weights_read_bytes(m, tokens, dtype=dtype) - weights_read_bytes(
        m, 0, dtype=dtype
    )


def _ep_comm(
    m: ModelConfig,
    tokens_per_rank: float,
    ep: int,
    link: Link,
    *,
    decode: bool,
    nvlink: Link | None = None,
) -> float:
    """Dispatch plus combine seconds of all MoE layers of one step, per rank.

    Decode: DeepEP's low-latency kernels (one copy per expert), measured.
    Prefill: one copy per expert over ``link`` (:func:`helpers.multigpu.ep_alltoall_times`),
    or, given ``nvlink``, one copy per server reached over ``link`` and the
    fan-out over ``nvlink`` (:func:`helpers.multigpu.ep_prefill_alltoall_times`).
    """
    from .multigpu import (
        DEEPEP_LOW_LATENCY_S,
        ep_alltoall_times,
        ep_prefill_alltoall_times,
    )

    if m.moe is None or ep <= 1 or tokens_per_rank <= 0:
        return 0.0
    moe_layers = m.n_layers - m.moe.first_dense_layers
    if decode:
        # DeepEP's measured low-latency kernels at 128 tokens per rank,
        # scaled by the tokens (their time is mostly bytes on the wire).
        sizes = sorted(k for k in DEEPEP_LOW_LATENCY_S if k <= max(ep, 8))
        dispatch, combine = DEEPEP_LOW_LATENCY_S[sizes[-1]]
        return moe_layers * (dispatch + combine) * max(tokens_per_rank, 1) / 128
    tokens = max(int(tokens_per_rank), 1)
    if nvlink is None:
        d, c = ep_alltoall_times(m, tokens, ep, link, latency=0)
    else:
        d, c = ep_prefill_alltoall_times(m, tokens, ep, link, nvlink)
    return moe_layers * (d + c)


MLA_CORE_DTYPE = "bf16"
"""Precision of the MLA core (scores and weighted latents) in DeepSeek's serving.

DeepSeek's inference system overview (open-infra-index, Day 6, March 2025)
and the V3 report (arXiv:2412.19437, section 3.3) keep the core MLA
computation and the combine in BF16 while the matmuls and the dispatch run in
FP8; FlashMLA, the decode kernel, is BF16. So an fp8 model's attention FLOP
run at the 16-bit peak.
"""

TBO_SOURCE = "https://lmsys.org/blog/2025-05-05-large-scale-ep"
"""LMSYS / SGLang blog, 'Deploying DeepSeek with PD Disaggregation and Large-scale
Expert Parallelism on 96 H100 GPUs' (May 2025), section 'Ablation Study: Two-batch Overlap'."""

TBO_SPEEDUP: dict[str, float] = {"decode": 1.255, "prefill": 1.27}
"""Measured two-batch-overlap speedup over the same step run without it.

From :data:`TBO_SOURCE` (H100, DeepSeek-V3, EP72 decode / EP32 prefill):
decode 25.5 % at 256 tokens per GPU (22,310 against the no-overlap run);
prefill "27 % to 35 %" at the same tokens per GPU, of which the low end is
taken. Overlap hides only this much of compute plus all-to-all, not the
whole shorter term that ``max(compute, comm)`` assumes.
"""

TBO_MIN_DECODE_TOKENS = 128
"""Tokens per GPU from which two-batch overlap pays in decode.

:data:`TBO_SOURCE`: the decode speedup is "contingent on batch size
exceeding a threshold between 64 and 128 tokens"; below it overlap gave
nothing or lost (-27 % at 32 tokens), so an engine runs such steps without
it. The upper end of the range is taken.
"""


def two_batch_overlap(
    compute_s: float, comm_s: float, *, tokens: int, decode: bool
) -> float:
    """Seconds of an expert-parallel step whose compute and all-to-alls take ``compute_s`` and ``comm_s`` apart.

    Without overlap they add up. With two-batch overlap the step is the sum
    divided by the measured speedup (:data:`TBO_SPEEDUP`), never shorter
    than the longer of the two; decode steps of fewer than
    :data:`TBO_MIN_DECODE_TOKENS` tokens per GPU run without it.

    >>> two_batch_overlap(0.02, 0.0, tokens=256, decode=True)
    0.02
    >>> round(two_batch_overlap(0.03, 0.03, tokens=64, decode=True), 3)
    0.06
    >>> round(two_batch_overlap(0.03, 0.03, tokens=256, decode=True), 4)
    0.0478
    """
    compute_s = _args.non_negative("compute_s", compute_s)
    comm_s = _args.non_negative("comm_s", comm_s)
    tokens = _args.non_negative_int("tokens", tokens)
    total = compute_s + comm_s
    if comm_s == 0 or (decode and tokens < TBO_MIN_DECODE_TOKENS):
        return total
    speedup = TBO_SPEEDUP["decode" if decode else "prefill"]
    return max(compute_s, comm_s, total / speedup)


def overlap_streams(step_s: float, speedup: float) -> tuple[float, float, float]:
    """What a measured overlapped step and its measured overlap speedup say about its two streams.

    Two streams (compute and all-to-alls) run overlapped in ``step_s``
    seconds, and the same step without overlap took ``speedup`` times as
    long. Without overlap the streams add up, so their sum is
    ``speedup * step_s``; with overlap the step is at least the longer one,
    so each stream lies between ``(speedup - 1) * step_s`` (the shorter one
    once overlap is complete) and ``step_s``. Returns ``(sum_s, low_s,
    high_s)``. A model whose two streams add up to less than ``sum_s`` is
    missing time; one whose either stream exceeds ``high_s`` prices that
    stream too high, whatever the overlap.

    >>> [round(x, 1) for x in overlap_streams(92.0, 1.255)]
    [115.5, 23.5, 92.0]
    """
    step_s = _args.positive("step_s", step_s)
    speedup = _args.positive("speedup", speedup)
    if speedup < 1:
        raise ValueError(
            f"speedup must be >= 1 (overlap never slows a step), got {speedup}"
        )
    if speedup > 2:
        raise ValueError(
            f"speedup must be <= 2 (two overlapped streams at most halve a step), got {speedup}"
        )
    return speedup * step_s, (speedup - 1) * step_s, step_s


@dataclass(frozen=True)
class MoeStreams:
    """The two streams of an expert-parallel step as :func:`measured_step_time` prices them (seconds)."""

    compute_s: float
    """Everything but the all-to-alls, kernel by kernel (floors included);
    in an overlapped prefill step, on the SMs the all-to-alls leave
    (:func:`prefill_compute_device`)."""
    alltoall_s: float
    """Dispatch and combine of every MoE layer, as the step is priced: in
    prefill across servers, one copy per server reached and the fan-out over
    NVLink (DeepEP's normal kernels,
    :func:`helpers.multigpu.ep_prefill_alltoall_times`)."""
    alltoall_per_expert_s: float
    """The same with one copy of each token per expert
    (:func:`helpers.multigpu.ep_alltoall_times`), the price before DeepEP's
    forwarding; equal to ``alltoall_s`` in decode and within one server."""
    step_s: float
    """The step: :func:`two_batch_overlap` of the two streams."""
    compute_parts: Mapping[str, float] = field(default_factory=dict)
    """``compute_s`` by kernel class (:attr:`helpers.steps.StepTime.parts`)."""


def prefill_compute_device(acc: str | Accelerator) -> Accelerator:
    """The GPU an overlapped expert-parallel prefill step's compute runs on: the SMs the all-to-alls leave.

    DeepEP's normal (prefill) kernels hold streaming multiprocessors while
    they run, and with two-batch overlap they run beside the compute for most
    of the step; DeepSeek's profile gives them
    ``helpers.papers.DEEPSEEK_PREFILL_SMS["communication"]`` (24) of an
    H800's 132. The compute then has the rest: tensor and vector peaks scale
    by the share of SMs left, memory bandwidth does not (the remaining SMs
    still reach all of HBM). A GPU whose SM count the catalog lacks loses the
    share they take of an H800. Decode's low-latency kernels hold no SMs.
    """
    from dataclasses import replace

    from .papers import DEEPSEEK_PREFILL_SMS
    from .steps import accelerator

    device = accelerator(acc)
    held = DEEPSEEK_PREFILL_SMS["communication"]
    if device.sm_count is None:
        # no SM count in the catalog: the all-to-alls take the share they take of an H800
        left = 1 - held / sum(DEEPSEEK_PREFILL_SMS.values())
        sms = None
    elif held >= device.sm_count:
        raise ValueError(
            f"acc: {device.name} has {device.sm_count} SMs, not more than the {held} the all-to-alls hold"
        )
    else:
        left = (device.sm_count - held) / device.sm_count
        sms = device.sm_count - held
    return replace(
        device,
        peak_flops={k: v * left for k, v in device.peak_flops.items()},
        vector_peak_flops={k: v * left for k, v in device.vector_peak_flops.items()},
        sm_count=sms,
    )


EXPERT_ROUTING = ("uniform", "eplb", "none")
"""How a MoE deployment's tokens spread over its expert-parallel GPUs.

``"uniform"``: every token-expert pair lands on a GPU uniformly at random,
the statistical floor (:func:`helpers.steps.imbalance`); ``"eplb"``:
DeepSeek-V3's router with DeepSeek's load balancer (EPLB) placing the
experts; ``"none"``: the same router without a balancer. The last two are
measured for DeepSeek-V3's router only (:func:`expert_balance`,
:func:`eplb_decode_balance`).
"""

EPLB_SPARE_SHARE = 1 / 8
"""Spare expert copies EPLB is given, as a share of the routed experts.

DeepSeek-V3's 256 experts get 32 spares (288 slots) in SGLang's blog and in
DeepSeek's EPLB example; the share is kept for other expert counts."""


def eplb_spares(model: str | ModelConfig, ep: int) -> int:
    """Spare expert copies for EPLB over ``ep`` GPUs: at least :data:`EPLB_SPARE_SHARE` of the
    routed experts, raised until the slots (experts plus spares) divide evenly over the GPUs.

    >>> eplb_spares("deepseek-v3", 32)
    32
    >>> eplb_spares("deepseek-v3", 64)
    64
    """
    m = get_model(model)
    if m.moe is None:
        raise ValueError(f"model: {m.name!r} has no experts")
    ep = _args.positive_int("ep", ep)
    n = m.moe.n_routed
    r = math.ceil(n * EPLB_SPARE_SHARE)
    return r + (-(n + r)) % ep


def routing_spares(model: str | ModelConfig, ep: int, routing: str | float) -> int:
    """Spare expert copies a deployment holds over ``ep`` GPUs: :func:`eplb_spares` under
    ``"eplb"`` routing with experts spread over more than one GPU, none otherwise.

    >>> routing_spares("deepseek-v3", 32, "eplb"), routing_spares("deepseek-v3", 32, "uniform")
    (32, 0)
    """
    m = get_model(model)
    ep = _args.positive_int("ep", ep)
    if checked_routing(routing) != "eplb" or ep <= 1 or m.moe is None:
        return 0
    return eplb_spares(m, ep)


def expert_balance(ep: int, routing: str | float) -> float:
    """Balancedness of an expert-parallel MoE layer over ``ep`` GPUs: mean GPU load over the busiest's (0-1].

    SGLang's simulation of DeepSeek-V3's router
    (:data:`helpers.papers.SGLANG_EPLB_BALANCEDNESS`), with (``"eplb"``) or
    without (``"none"``) DeepSeek's load balancer, interpolated linearly in
    the logarithm of ``ep`` from 1.0 at one GPU through the simulated sizes
    (8 to 72), and held at the last value past them (nothing is simulated
    past 72 GPUs with the balancer, or past 64 without; the with-EPLB curve
    is flat from 32 to 72). ``"uniform"`` and ``ep = 1``: 1.0 (no skew
    beyond the statistics :func:`helpers.steps.imbalance` prices). A number
    in (0, 1] is taken as a measured balancedness over GPUs, at any ``ep``.

    >>> expert_balance(32, "eplb")
    0.8
    >>> expert_balance(144, "eplb")
    0.81
    >>> round(expert_balance(24, "none"), 3)
    0.577
    """
    from .papers import SGLANG_EPLB_BALANCEDNESS

    ep = _args.positive_int("ep", ep)
    routing = checked_routing(routing)
    if not isinstance(routing, str):
        return routing
    if routing == "uniform" or ep == 1:
        return 1.0
    # one GPU has nothing to balance: from 1.0 there to the first simulated size
    points = ((1, 1.0), *SGLANG_EPLB_BALANCEDNESS[routing])
    sizes = [math.log(n) for n, _ in points]
    values = [b for _, b in points]
    return float(np.interp(math.log(ep), sizes, values))


EPLB_CASE_STUDY_EP = 72
"""GPUs of SGLang's decode case study (:data:`helpers.papers.SGLANG_EPLB_CASE_STUDY`): its decode pool, EP72."""


def eplb_decode_balance() -> tuple[float, float]:
    """SGLang's measured decode balancedness with EPLB beside what uniform routing gives at its size.

    ``(measured, uniform)``. ``measured``: the case study's balancedness
    (:data:`helpers.papers.SGLANG_EPLB_CASE_STUDY`, over expert slots) as a
    run's throughput sees it, ``1 / mean(1 / b)`` over its steps, since a
    step lasts ``1 / b`` of a balanced one; ``uniform``: the balancedness
    over the same slots that uniform routing gives
    (:func:`helpers.steps.imbalance` of 256 sequences x 72 GPUs x 8 experts
    over 288 slots, one over it). A measured value at or above it means the
    balancer left only the step's random spread. (That extreme-value
    approximation gives 0.871; drawing the same 147,456 pairs into 288
    slots at random gives 0.885 on average, 0.86 to 0.91 in nine draws of
    ten, so the balancer left at most about 1 % beyond the random spread.)

    >>> b, floor = eplb_decode_balance()
    >>> round(b, 3), round(floor, 3)
    (0.874, 0.871)
    """
    from .papers import SGLANG_EPLB_CASE_STUDY
    from .steps import imbalance

    m = get_model("deepseek-v3")
    assert m.moe is not None
    b = [row[1] for row in SGLANG_EPLB_CASE_STUDY]
    measured = len(b) / sum(1 / x for x in b)
    slots = m.moe.n_routed + eplb_spares(m, EPLB_CASE_STUDY_EP)
    pairs = 256 * EPLB_CASE_STUDY_EP * m.moe.top_k
    return measured, 1 / imbalance(pairs, slots)


def expert_skew(
    ep: int, routing: str | float, *, assignments: float, decode: bool = False
) -> float:
    """How much longer the busiest expert-parallel GPU's share takes than uniform routing gives it (>= 1).

    An expert-parallel step waits for its busiest GPU, in the expert GEMMs
    and in the all-to-alls that fill and drain them (SGLang's blog: the
    imbalance "forces the system to wait for the slowest GPU computation or
    communication"; DeepSeek's balancer aims to "minimize the maximum
    dispatch receive load across all GPUs"). That GPU carries ``1 / b`` of
    the mean load, with ``b`` the router's balancedness
    (:func:`expert_balance`); uniform routing of ``assignments`` token-expert
    pairs (over the whole group, one step) already gives it
    :func:`helpers.steps.imbalance` ``= u`` of the mean, which the kernel
    prices include. The skew is ``1 / (b u)``, never below 1: a balancer
    places experts, it cannot remove the step's own random spread. (Read
    as including no random spread, the simulated ``b`` would give ``1 / b``
    instead, up to ``u`` more: 1 % in prefill, 6-10 % in decode.) In
    prefill DeepEP's kernels cross the network once per server reached, so
    strictly the servers' balance sets that leg; none is published, and
    SGLang's two prefill profiles (EPLB placement and perfect balance,
    1.18 times apart) support stretching the whole all-to-all: so priced the
    model gives 1.16, with the all-to-alls left alone about 1.06.

    ``decode`` with ``"eplb"``: SGLang's decode case study measured the
    balancer's result directly (:func:`eplb_decode_balance`), so that
    measurement replaces the simulation: the skew is its uniform value over
    its measured one, never below 1.

    >>> expert_skew(72, "uniform", assignments=256 * 72 * 8)
    1.0
    >>> round(expert_skew(32, "eplb", assignments=16_384 * 32 * 8), 3)
    1.241
    >>> expert_skew(72, "eplb", assignments=256 * 72 * 8, decode=True)
    1.0
    """
    from .steps import imbalance

    routing = checked_routing(routing)
    ep = _args.positive_int("ep", ep)
    if ep == 1 or routing == "uniform":
        return 1.0
    if decode and routing == "eplb":
        measured, floor = eplb_decode_balance()
        return max(1.0, floor / measured)
    b = expert_balance(ep, routing)
    return max(1.0, 1.0 / (b * imbalance(assignments, ep)))


def _moe_step(
    m: ModelConfig,
    ctx: int,
    acc: str | Accelerator,
    *,
    batch: int,
    chunk: int,
    prefix: int,
    prompts: int,
    dtype: str,
    ep: int,
    ep_link: str | Link,
    collectives: bool,
    routing: str | float = "uniform",
) -> MoeStreams:
    """One expert-parallel rank's step, its two streams apart (arguments checked by the callers).

    The busiest GPU's expert GEMMs and all-to-alls stretch by
    :func:`expert_skew` under ``routing``.
    """
    from .hardware import get_link
    from .parallel import tp_link

    tokens = batch + chunk
    prefill = chunk > 0
    # DeepEP's normal kernels (one copy per server, SMs held) serve a pure
    # prefill step; a step that also decodes runs the kernels a co-located
    # engine with data-parallel attention can use, one copy per expert
    # (SGLang's blog: its normal and low-latency modes cannot share one
    # data-parallel-attention group without disaggregation)
    normal = prefill and batch == 0
    assert m.moe is not None
    pairs = tokens * ep * m.moe.top_k
    skew = expert_skew(ep, routing, assignments=pairs, decode=not prefill)
    if batch and chunk:
        # a mixed step: each kind of token carries its own phase's skew
        decode_skew = expert_skew(ep, routing, assignments=pairs, decode=True)
        skew = (batch * decode_skew + chunk * skew) / tokens
    comm = per_expert = 0.0
    if collectives:
        link = tp_link(acc) if ep <= 8 else get_link(ep_link)
        per_expert = skew * _ep_comm(m, tokens, ep, link, decode=not prefill)
        comm = (
            skew * _ep_comm(m, tokens, ep, link, decode=False, nvlink=tp_link(acc))
            if normal and ep > 8
            else per_expert
        )
    # the SMs are DeepSeek's figure for its internode (EP32) prefill kernels
    device = prefill_compute_device(acc) if normal and ep > 8 and comm > 0 else acc
    parts = moe_compute_parts(
        m,
        ctx,
        device,
        batch=batch,
        chunk=chunk,
        prefix=prefix,
        prompts=prompts,
        dtype=dtype,
        ep=ep,
        expert_skew=skew,
    )
    step = two_batch_overlap(parts.seconds, comm, tokens=tokens, decode=not prefill)
    return MoeStreams(parts.seconds, comm, per_expert, step, parts.parts)


def moe_streams(
    model: str | ModelConfig,
    context: float,
    acc: str | Accelerator,
    *,
    batch: int,
    chunk: int = 0,
    prefix: int = 0,
    prompts: int = 1,
    dtype: str = "fp8",
    ep: int,
    ep_link: str | Link = "cx7",
    routing: str | float = "uniform",
) -> MoeStreams:
    """Compute and all-to-all streams of one rank's expert-parallel step (``tp = 1``, ``ep > 8``).

    The diagnostic beside :func:`overlap_streams`: the same step as
    :func:`measured_step_time`, its two streams apart. A prefill step's
    all-to-all is priced as DeepEP's normal kernels send it, one copy per
    server reached, and beside it with one copy per expert; its compute runs
    on the SMs the all-to-alls leave (:func:`prefill_compute_device`).
    ``routing``: one of :data:`EXPERT_ROUTING` or a balancedness (:func:`expert_skew`).
    """
    m = get_model(model)
    if m.moe is None:
        raise ValueError(f"model: {m.name!r} has no experts")
    ep = _args.positive_int("ep", ep)
    if ep <= 8:
        raise ValueError(f"ep must span more than one server (> 8), got {ep}")
    batch = _args.non_negative_int("batch", batch)
    chunk = _args.non_negative_int("chunk", chunk)
    prompts = _args.positive_int("prompts", prompts)
    if chunk and chunk < prompts:
        raise ValueError(
            f"prompts: {prompts} prompts need at least as many chunk tokens, got {chunk}"
        )
    ctx = int(round(_args.non_negative("context", context)))
    return _moe_step(
        m,
        ctx,
        acc,
        batch=batch,
        chunk=chunk,
        prefix=prefix,
        prompts=prompts,
        dtype=dtype,
        ep=ep,
        ep_link=ep_link,
        collectives=True,
        routing=checked_routing(routing),
    )


def checked_routing(routing: str | float, *, name: str = "routing") -> str | float:
    """``routing`` checked: a name in :data:`EXPERT_ROUTING`, or a number in (0, 1].

    A number is a balancedness over GPUs (mean GPU load over the busiest's,
    the step's random spread included, as SGLang's simulation counts it).
    ``name``: the parameter named in the error (``"expert_routing"`` for the planner).
    """
    choices = f"choose one of {EXPERT_ROUTING} or a balancedness in (0, 1]"
    if isinstance(routing, str):
        if routing not in EXPERT_ROUTING:
            raise ValueError(f"{name}: {choices}, got {routing!r}")
        return routing
    if isinstance(routing, bool) or not isinstance(routing, int | float):
        raise ValueError(f"{name}: {choices}, got {routing!r}")
    b = _args.positive(name, routing)
    if b > 1:
        raise ValueError(f"{name}: a balancedness is at most 1, got {routing!r}")
    return b


def measured_step_time(
    model: str | ModelConfig,
    context: float,
    acc: str | Accelerator,
    *,
    batch: int,
    chunk: int = 0,
    prefix: int = 0,
    dtype: str = "bf16",
    tp: int = 1,
    ep: int = 1,
    ep_link: str | Link = "cx7",
    terms: Collection[str] = EFFICIENCY_TERMS,
    prompts: int = 1,
    routing: str | float = "uniform",
) -> float:
    """Seconds of one step at measured efficiency: ``batch`` decoding sequences and a ``chunk`` of prompt.

    Dense models (``ep = 1``): :func:`colocated_step` on ``tp`` GPUs of
    :func:`efficiency_device`, with the tensor-parallel all-reduces when
    ``"collectives"`` is on, plus :func:`step_floor_time` when
    ``"step_floor"`` is on; with :data:`KERNEL_SUM` in ``terms``, the sum
    of the step's kernels instead (:func:`helpers.steps.mixed_step`, one
    chunk of ``chunk`` tokens after ``prefix`` cached ones).

    Mixture of experts with data-parallel attention and expert parallelism
    over ``ep`` GPUs (DeepSeek's and SGLang's layout; ``tp`` must be 1): the
    time of one rank, which holds ``batch`` sequences and the chunk. Its
    compute is priced kernel by kernel as the engine simulator prices it
    (:func:`moe_compute_parts`, :func:`helpers.steps.mixed_step`: measured shares,
    per-kernel floors, the MLA core at the 16-bit rate of
    :data:`MLA_CORE_DTYPE`), whatever ``terms`` says about shares and
    floors. The all-to-alls (``_ep_comm``; in prefill across servers one copy
    per server reached, as DeepEP's normal kernels send it) overlap that
    compute only as much as two-batch overlap was measured to hide
    (:func:`two_batch_overlap`), and an overlapped prefill step's compute
    runs on the SMs they leave (:func:`prefill_compute_device`);
    a rank's ``chunk`` may hold ``prompts`` equal prompts, each after
    ``prefix`` cached tokens (prefill at a published tokens-per-GPU batch).
    ``routing`` (one of :data:`EXPERT_ROUTING`, or a measured balancedness): how the router loads the
    busiest GPU (:func:`expert_skew`). ``context`` may be fractional (a mean).
    """
    m = get_model(model)
    chosen = _terms(terms)
    batch = _args.non_negative_int("batch", batch)
    chunk = _args.non_negative_int("chunk", chunk)
    tp = _args.positive_int("tp", tp)
    ep = _args.positive_int("ep", ep)
    prompts = _args.positive_int("prompts", prompts)
    if batch == 0 and chunk == 0:
        raise ValueError("batch and chunk cannot both be 0")
    if prompts > 1 and (m.moe is None or ep == 1):
        raise ValueError(
            "prompts: several prompts per chunk are priced for MoE ranks only"
        )
    if chunk and chunk < prompts:
        raise ValueError(
            f"prompts: {prompts} prompts need at least as many chunk tokens, got {chunk}"
        )
    device = efficiency_device(acc, dtype=dtype, terms=chosen)
    floor = step_floor_time(m, acc) if "step_floor" in chosen else 0.0
    ctx = int(round(_args.non_negative("context", context)))
    if m.moe is None or ep == 1:
        link: str | None = AUTO if "collectives" in chosen else None
        if KERNEL_SUM in chosen:
            from . import steps

            return steps.mixed_step(
                m,
                acc,
                decode_batch=batch,
                decode_context=ctx,
                chunks=[(chunk, prefix)] if chunk else [],
                tp=tp,
                weight_dtype=dtype,
                kv_dtype=dtype,
                link=link,
            ).seconds
        if batch == 0:
            t = suffix_prefill_time(
                m, prefix, prefix + chunk, device, dtype=dtype, n_gpus=tp, link=link
            )
            return t + floor
        t = colocated_step_time(
            m,
            ctx,
            device,
            batch=batch,
            chunk=chunk,
            prefix=prefix,
            dtype=dtype,
            n_gpus=tp,
            link=link,
        )
        return t + floor
    if tp != 1:
        raise ValueError("tp must be 1 with ep > 1: attention runs data-parallel")
    return _moe_step(
        m,
        ctx,
        acc,
        batch=batch,
        chunk=chunk,
        prefix=prefix,
        prompts=prompts,
        dtype=dtype,
        ep=ep,
        ep_link=ep_link,
        collectives="collectives" in chosen,
        routing=checked_routing(routing),
    ).step_s


def moe_compute_parts(
    model: str | ModelConfig,
    context: float,
    acc: str | Accelerator,
    *,
    batch: int,
    chunk: int = 0,
    prefix: int = 0,
    prompts: int = 1,
    dtype: str = "fp8",
    ep: int,
    expert_skew: float = 1.0,
) -> StepTime:
    """One expert-parallel rank's step without its all-to-alls, kernel by kernel (a :class:`helpers.steps.StepTime`).

    :func:`helpers.steps.mixed_step` for a replica of ``ep`` GPUs with
    data-parallel attention, every rank holding ``batch`` sequences (at
    ``context`` cached tokens each) and ``prompts`` prompts of the
    ``chunk``: the engine simulator's pricing (measured shares per kernel,
    per-kernel floors, the busiest GPU's experts), so the planner and the
    simulator price a MoE step alike. Its ``parts`` say where the time goes.
    ``expert_skew``: the busiest GPU's extra expert load (:func:`expert_skew`).
    """
    from . import steps

    m = get_model(model)
    if m.moe is None:
        raise ValueError(f"model: {m.name!r} has no experts")
    batch = _args.non_negative_int("batch", batch)
    chunk = _args.non_negative_int("chunk", chunk)
    prompts = _args.positive_int("prompts", prompts)
    ep = _args.positive_int("ep", ep)
    ctx = int(round(_args.non_negative("context", context)))

    chunks: list[tuple[int, int]] = []
    if chunk:
        each = chunk // prompts
        chunks = [
            (each + (1 if i < chunk - each * prompts else 0), prefix)
            for i in range(prompts)
        ]
    st = steps.mixed_step(
        m,
        acc,
        decode_batch=batch * ep,
        decode_context=ctx,
        chunks=chunks * ep,
        tp=ep,
        ep=ep,
        dp_attention=True,
        weight_dtype=dtype,
        kv_dtype=dtype,
        link=None,
        expert_skew=expert_skew,
    )
    return st


def chunking_cost(
    model: str | ModelConfig,
    input_tokens: int,
    acc: str | Accelerator,
    *,
    chunk: int,
    dtype: str = "bf16",
    tp: int = 1,
    terms: Collection[str] = STEP_TERMS,
) -> float:
    """Prefill time of a prompt run in ``chunk``-token pieces over its time run whole (a ratio, >= ~1).

    Each piece is one :func:`measured_step_time` step with no decodes, after
    the pieces before it as its cached prefix; the whole prompt is one step.
    The ratio is what chunked prefill costs in prefill time alone: every
    piece reads the weights again and attends to the prefix before it, and
    a smaller GEMM fills the GPU less. Under one whole-step roofline
    (``terms=EFFICIENCY_TERMS``) little of that shows; the kernel sum
    (:data:`KERNEL_SUM`) charges each piece's kernels their own roofs and floors.

    >>> chunking_cost("llama-3-8b", 4096, "H100", chunk=4096)
    1.0
    """
    input_tokens = _args.positive_int("input_tokens", input_tokens)
    chunk = _args.positive_int("chunk", chunk)
    opts: dict[str, Any] = {"dtype": dtype, "tp": tp, "terms": terms}
    whole = measured_step_time(model, 0, acc, batch=0, chunk=input_tokens, **opts)
    pieces, done = 0.0, 0
    while done < input_tokens:
        size = min(chunk, input_tokens - done)
        pieces += measured_step_time(
            model, 0, acc, batch=0, chunk=size, prefix=done, **opts
        )
        done += size
    return pieces / whole


def moe_rank_kv_bytes(
    model: str | ModelConfig,
    acc: str | Accelerator,
    *,
    ep: int,
    dtype: str = "bf16",
    reserve: float = 0.1,
    spares: int = 0,
) -> float:
    """Bytes one rank of an expert-parallel group of ``ep`` GPUs has for KV caches.

    ``capacity * (1 - reserve)`` less the non-expert weights (held whole by every
    rank, as data-parallel attention needs) and ``1/ep`` of the routed experts,
    with ``spares`` extra expert copies over the group (EPLB's, :func:`eplb_spares`).
    """
    from .hardware import get_accelerator

    m = get_model(model)
    ep = _args.positive_int("ep", ep)
    experts = _moe_expert_bytes(m, 1e12, dtype)
    from .llm import weight_bytes

    spares = _args.non_negative_int("spares", spares)
    copies = 1 + spares / m.moe.n_routed if m.moe is not None else 1.0
    resident = weight_bytes(m, dtype=dtype) - experts + experts * copies / ep
    return get_accelerator(acc).memory_capacity * (1 - reserve) - resident


def measured_max_batch(
    model: str | ModelConfig,
    mean_context: float,
    acc: str | Accelerator,
    *,
    tbt_s: float,
    context_std: float = 0.0,
    dtype: str = "bf16",
    tp: int = 1,
    ep: int = 1,
    ep_link: str | Link = "cx7",
    terms: Collection[str] = EFFICIENCY_TERMS,
    reserve: float = 0.1,
    routing: str | float = "uniform",
) -> tuple[int, float, str]:
    """Largest decode batch (per instance, or per rank under EP) whose slow step meets ``tbt_s``.

    ``routing``: as in :func:`measured_step_time` (MoE under expert parallelism).
    The slow step is :func:`measured_step_time` at :func:`tail_context` when
    ``"tail_headroom"`` is on (the mean context otherwise). The batch is also
    capped by the KV caches that fit (at the tail context plus one token).

    Returns
    -------
    (batch, step_s, limited_by)
        ``batch`` 0 when one sequence misses the target or does not fit;
        ``step_s`` the mean-context step at that batch (the throughput step);
        ``limited_by`` ``"tbt"`` or ``"memory"``.
    """
    from .inference import max_decode_batch

    m = get_model(model)
    tbt_s = _args.positive("tbt_s", tbt_s)
    chosen = _terms(terms)
    opts: dict[str, Any] = {
        "dtype": dtype,
        "tp": tp,
        "ep": ep,
        "ep_link": ep_link,
        "terms": chosen,
        "routing": checked_routing(routing),
    }

    def slow_context(b: int) -> float:
        if "tail_headroom" in chosen:
            return tail_context(mean_context, context_std, b)
        return mean_context

    def fits(b: int) -> bool:
        ctx = int(math.ceil(slow_context(b)))
        if m.moe is not None and ep > 1:
            free = moe_rank_kv_bytes(
                m,
                acc,
                ep=ep,
                dtype=dtype,
                reserve=reserve,
                spares=routing_spares(m, ep, routing),
            )
            return b * kv_cache_bytes_per_token(m, dtype=dtype) * (ctx + 1) <= free
        return (
            max_decode_batch(m, ctx, acc, n_gpus=tp, dtype=dtype, reserve=reserve) >= b
        )

    def meets(b: int) -> bool:
        return measured_step_time(m, slow_context(b), acc, batch=b, **opts) <= tbt_s

    if not fits(1) or not meets(1):
        return (
            0,
            measured_step_time(m, mean_context, acc, batch=1, **opts),
            ("memory" if not fits(1) else "tbt"),
        )
    hi = 2
    while fits(hi) and meets(hi) and hi < 1 << 20:
        hi *= 2
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid) and meets(mid):
            lo = mid
        else:
            hi = mid
    limited = "memory" if not fits(lo + 1) else "tbt"
    return lo, measured_step_time(m, mean_context, acc, batch=lo, **opts), limited


def pd_ratio_measured(
    model: str | ModelConfig,
    input_tokens: int,
    output_tokens: int,
    acc: str | Accelerator,
    *,
    tbt_s: float,
    hit_tokens: int = 0,
    context_std: float = 0.0,
    dtype: str = "bf16",
    n_gpus: int = 1,
    terms: Collection[str] = EFFICIENCY_TERMS,
) -> PdRatio:
    """:func:`pd_ratio` at measured efficiency: the batch re-solved under ``tbt_s`` with the chosen terms.

    Prefill: the uncached span (:func:`measured_step_time` with ``batch=0``
    and the whole span as one chunk after the ``hit_tokens`` prefix). Decode:
    the largest batch whose slow step meets ``tbt_s``
    (:func:`measured_max_batch`), each request's ``output_tokens`` steps
    shared among that batch. Every term that slows decode also shrinks the
    batch under the target, which is how the terms move the ratio towards
    decode. ``terms=()`` is the roofline of :func:`pd_ratio` (with the batch
    under the target found the same way). Dense models on ``n_gpus`` as one
    tensor-parallel instance.
    """
    input_tokens = _args.positive_int("input_tokens", input_tokens)
    output_tokens = _args.positive_int("output_tokens", output_tokens)
    hit_tokens = _args.non_negative_int("hit_tokens", hit_tokens)
    if hit_tokens >= input_tokens:
        raise ValueError(
            f"hit_tokens must be below input_tokens ({input_tokens}), got {hit_tokens}"
        )
    chosen = _terms(terms)
    prefill_s = measured_step_time(
        model,
        0,
        acc,
        batch=0,
        chunk=input_tokens - hit_tokens,
        prefix=hit_tokens,
        dtype=dtype,
        tp=n_gpus,
        terms=chosen,
    )
    context = mean_decode_context(input_tokens, output_tokens)
    batch, step, _ = measured_max_batch(
        model,
        context,
        acc,
        tbt_s=tbt_s,
        context_std=context_std,
        dtype=dtype,
        tp=n_gpus,
        terms=chosen,
    )
    if batch == 0:
        raise ValueError(
            f"tbt_s: not even one sequence meets {tbt_s} s on this instance"
        )
    decode_s = output_tokens * step / batch
    return PdRatio(prefill_s=prefill_s, decode_s=decode_s, ratio=prefill_s / decode_s)


def pd_ratio_gap(
    model: str | ModelConfig,
    input_tokens: int,
    output_tokens: int,
    acc: str | Accelerator,
    *,
    tbt_s: float,
    hit_tokens: int = 0,
    context_std: float = 0.0,
    dtype: str = "bf16",
    n_gpus: int = 1,
) -> list[tuple[str, PdRatio]]:
    """:func:`pd_ratio_measured` with the :data:`STEP_TERMS` switched on one at a time, cumulatively.

    The first row, ``"roofline"``, has no term; each later row adds its term
    to those above it, the last (:data:`KERNEL_SUM`) pricing the step as the
    planner does. Read down the ratio column to see how much of a gap to a
    measured ratio each term closes.
    """
    rows = []
    for i in range(len(STEP_TERMS) + 1):
        chosen = STEP_TERMS[:i]
        label = "roofline" if i == 0 else STEP_TERMS[i - 1]
        rows.append(
            (
                label,
                pd_ratio_measured(
                    model,
                    input_tokens,
                    output_tokens,
                    acc,
                    tbt_s=tbt_s,
                    hit_tokens=hit_tokens,
                    context_std=context_std,
                    dtype=dtype,
                    n_gpus=n_gpus,
                    terms=chosen,
                ),
            )
        )
    return rows


__all__ = [
    "EFFICIENCY_TERMS",
    "EXPERT_ROUTING",
    "KERNEL_SUM",
    "chunking_cost",
    "MLA_CORE_DTYPE",
    "STEP_TERMS",
    "TAIL_Z",
    "TBO_MIN_DECODE_TOKENS",
    "TBO_SOURCE",
    "TBO_SPEEDUP",
    "Goodput",
    "MoeStreams",
    "PdRatio",
    "colocated_step",
    "colocated_step_time",
    "efficiency_device",
    "expert_balance",
    "expert_skew",
    "checked_routing",
    "eplb_decode_balance",
    "eplb_spares",
    "routing_spares",
    "EPLB_CASE_STUDY_EP",
    "EPLB_SPARE_SHARE",
    "measured_max_batch",
    "measured_step_time",
    "moe_compute_parts",
    "moe_rank_kv_bytes",
    "moe_streams",
    "prefill_compute_device",
    "overlap_streams",
    "pd_ratio_gap",
    "pd_ratio_measured",
    "step_floor_time",
    "tail_context",
    "two_batch_overlap",
    "goodput",
    "pd_ratio",
    "speculative_step",
    "speculative_tokens_per_step",
]

__getattr__ = forwarder(__name__)
