"""Serving a transformer: prefill and decode step times, how many sequences fit, batches under a latency target.

The one home of every serving quantity in the book. Everything here is the
roofline model (:func:`helpers.roofline.breakdown`) applied to the FLOP and
bytes that :mod:`helpers.llm` counts; no new cost formula is introduced. Two
assumptions are added, both stated where used:

* on ``n_gpus`` devices the work and the bytes split evenly, and the devices
  form one Megatron-style tensor-parallel group that pays two all-reduces of
  the activations per layer (:func:`tp_allreduce_time`) over the GPUs' link
  (:func:`helpers.parallel.tp_link`), not overlapped with compute; pass
  ``link=None`` for the ideal split without communication;
* a decode batch fits when the weights plus every sequence's KV cache fit in
  the devices' memory less a ``reserve`` fraction (activations, allocator
  slack, the CUDA context). The default, :data:`RESERVE` = 0.1, is
  everything vLLM's default ``gpu_memory_utilization=0.9`` does *not* give to
  its engine (Kwon et al. 2023): vLLM's 90 % budget holds the weights, its
  profiled activation peak and its CUDA graphs as well as the KV cache, so
  ``reserve`` is an upper bound on KV memory, and a real engine's KV pool is
  smaller by its activation peak. One value is used everywhere in the book.
  Memory capacities are what the driver reports: the datasheet's figures
  read as GiB for HBM parts, less for GDDR parts with ECC on (T4, L4, A10G;
  see :func:`helpers.hardware.datasheet_memory`).
* with ``n_gpus > 1`` every byte of KV cache is stored once across the
  devices. That holds for MHA/GQA heads sharded by tensor parallelism, and for
  MLA only with data-parallel attention (each device holds whole sequences);
  under head-sharded TP an MLA latent is replicated on every device, which
  divides the batch that fits by ``n_gpus``.

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

import dataclasses
import math
from dataclasses import dataclass
from typing import Literal

from . import _args, parallel
from ._search import last_true, root
from .hardware import Accelerator, Link, dtype_bytes, get_accelerator
from .llm import (
    ModelConfig,
    decode_cost,
    get_model,
    kv_cache_bytes,
    prefill_cost,
    weight_bytes,
    weights_read_bytes,
)
from .published import PublishedPoint, load
from .roofline import TimeBreakdown, breakdown, crossing_batch, ridge_point

RESERVE = 0.1
"""Share of device memory not given to weights and KV cache: 1 - vLLM's default ``gpu_memory_utilization`` of 0.9."""

AUTO = "auto"
"""``link=AUTO``: the tensor-parallel group talks over :func:`helpers.parallel.tp_link` of the GPU."""


def tp_allreduce_time(
    model: str | ModelConfig,
    tokens: int,
    acc: str | Accelerator,
    *,
    n_gpus: int,
    dtype: str = "bf16",
    link: str | Link | None = AUTO,
    algorithm: str = "ring",
) -> float:
    """Seconds of the tensor-parallel all-reduces of one forward pass over ``tokens`` tokens on ``n_gpus`` GPUs.

    Megatron-LM tensor parallelism (Shoeybi et al. 2019, "Megatron-LM", section 3)
    splits each attention block by heads and each MLP by its hidden columns,
    so each of the two blocks of every layer ends with one all-reduce of its
    output activations, ``tokens * d_model`` elements. The forward pass
    therefore costs ``2 * n_layers`` all-reduces of ``tokens * d_model * w``
    bytes (``w``: the activation width, 2 bytes for 16-bit and for 8-bit or
    4-bit weights, whose activations are 16-bit), each
    :func:`helpers.parallel.allreduce_time` over ``link`` (``AUTO``: the
    GPU's :func:`helpers.parallel.tp_link`; ``None``: no communication).
    The all-reduces are taken as not overlapped with compute, as in Megatron's
    and vLLM's tensor-parallel layers, where the next matmul needs the sum.
    Expert, pipeline, sequence and context parallelism are not modelled.
    1 GPU costs 0.

    Examples
    --------
    Llama-3-70B, 8 x H100, a decode step of 355 sequences: 160 ring
    all-reduces of 355 * 8192 * 2 = 5.8 MB each, 5.9 ms in all:

    >>> round(tp_allreduce_time("llama-3-70b", 355, "H100", n_gpus=8) * 1e3, 1)
    5.9
    """
    m = get_model(model)
    tokens = _args.positive_int("tokens", tokens)
    n_gpus = _args.positive_int("n_gpus", n_gpus)
    if n_gpus == 1 or link is None:
        return 0.0
    spec = parallel.tp_link(acc) if link == AUTO else link
    width = max(dtype_bytes(dtype), 2)
    nbytes = tokens * m.d_model * width
    return (
        2
        * m.n_layers
        * parallel.allreduce_time(nbytes, n_gpus, spec, algorithm=algorithm)
    )


KERNELS_PER_LAYER = 9
"""Kernels one decoder layer launches in a decode or prefill step, as vLLM's Llama layer runs them.

``vllm/model_executor/models/llama.py``, ``LlamaDecoderLayer.forward``: the
input RMSNorm (fused with the residual add), the QKV projection, rotary
embedding, attention, the output projection, the post-attention RMSNorm
(fused add), the gate-up projection, SiluAndMul and the down projection: 9.
The tensor-parallel all-reduces are costed separately (:func:`tp_allreduce_time`).
"""


def kernels_per_step(model: str | ModelConfig) -> int:
    """Kernels of one forward pass: :data:`KERNELS_PER_LAYER` per layer, plus the embedding, final norm and lm_head (3).

    Each pays the GPU-side floor of :func:`helpers.dispatch.kernel_floor`.

    >>> kernels_per_step("llama-3-70b")
    723
    """
    return KERNELS_PER_LAYER * get_model(model).n_layers + 3


def with_comm(parts: TimeBreakdown, comm_s: float) -> TimeBreakdown:
    """``parts`` with ``comm_s`` seconds of communication added after the roofline (no overlap).

    The one place a step bound takes its collectives: ``comm_s`` is set and added to ``seconds``.
    """
    if comm_s == 0:
        return parts
    return dataclasses.replace(parts, comm_s=comm_s, seconds=parts.seconds + comm_s)


def mean_decode_context(prompt_tokens: int, generated_tokens: int) -> int:
    """Mean cached tokens per decode step of a request: ``prompt + generated // 2``.

    The prefill emits the first token; the step that emits token ``k + 1``
    (``k = 1 .. g - 1``) runs with ``prompt + k`` tokens cached. A decode
    step's cost is linear in its context (:func:`helpers.llm.decode_cost`), so
    the mean step is the step at the mean context, ``prompt + g / 2``; this
    rounds ``g / 2`` down to whole tokens. The one home of this rule
    (:mod:`helpers.serving`, :mod:`helpers.validation`).

    >>> mean_decode_context(1000, 201)
    1100
    """
    prompt = _args.non_negative_int("prompt_tokens", prompt_tokens)
    generated = _args.non_negative_int("generated_tokens", generated_tokens)
    return prompt + generated // 2


def suffix_prefill_time(
    model: str | ModelConfig,
    start: int,
    stop: int,
    acc: str | Accelerator,
    *,
    dtype: str = "bf16",
    n_gpus: int = 1,
    mfu: float = 1.0,
    link: str | Link | None = AUTO,
) -> float:
    """Seconds to compute tokens ``start .. stop - 1`` of a prompt whose first ``start`` tokens are cached.

    ``prefill_time(stop) - prefill_time(start)``: the FLOP of two
    prefills differ by exactly the work of the span (its tokens' weight
    matmuls and causal attention over ``stop (stop + 1) / 2 - start (start + 1) / 2``
    query-key pairs), so while prefill is compute-bound, which it is for all
    but the shortest prompts, the difference of the times is the span's time.
    ``start = 0`` gives :func:`prefill_time`; ``start = stop`` gives 0.
    """
    m = get_model(model)
    start = _args.non_negative_int("start", start)
    stop = _args.non_negative_int("stop", stop)
    if stop < start:
        raise ValueError(f"stop ({stop}) must be >= start ({start})")
    opts = dict(dtype=dtype, n_gpus=n_gpus, mfu=mfu, link=link)

    def whole(tokens: int) -> float:
        return prefill_time(m, tokens, acc, **opts) if tokens else 0.0  # type: ignore[arg-type]

    return whole(stop) - whole(start)


def prefill_step(
    model: str | ModelConfig,
    tokens: int,
    acc: str | Accelerator,
    *,
    batch: int = 1,
    dtype: str = "bf16",
    n_gpus: int = 1,
    mfu: float = 1.0,
    link: str | Link | None = AUTO,
    kv_dtype: str | None = None,
) -> TimeBreakdown:
    """Roofline bound of prefilling ``batch`` prompts of ``tokens`` tokens (:func:`helpers.llm.prefill_cost`).

    Recomputing a prefix's KV cache is prefilling it, so this is also the
    recompute time of :mod:`helpers.kvcache`.

    This is the whole-step **bound** (one roofline over the whole pass);
    :func:`helpers.steps.prefill_step` is the kernel-by-kernel **prediction**.

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
        Devices sharing the work evenly, as one tensor-parallel group.
    mfu : float
        Fraction of the peak FLOP/s reached, in (0, 1]; 1 gives the datasheet bound.
    link : str, Link or None
        What the group's all-reduces cross (:func:`tp_allreduce_time`, in
        ``comm_s``); ``None`` leaves communication out.
    kv_dtype : str or None
        Storage of the KV cache written (:data:`helpers.kv_formats.KV_FORMATS`);
        ``None``: ``dtype``.

    """
    cost = prefill_cost(model, tokens, batch=batch, dtype=dtype, kv_dtype=kv_dtype)
    parts = breakdown(cost.flops, cost.bytes, acc, dtype=dtype, n_gpus=n_gpus, mfu=mfu)
    comm = tp_allreduce_time(
        model, batch * tokens, acc, n_gpus=n_gpus, dtype=dtype, link=link
    )
    return with_comm(parts, comm)


def prefill_time(
    model: str | ModelConfig,
    tokens: int,
    acc: str | Accelerator,
    *,
    batch: int = 1,
    dtype: str = "bf16",
    n_gpus: int = 1,
    mfu: float = 1.0,
    link: str | Link | None = AUTO,
    kv_dtype: str | None = None,
) -> float:
    """Seconds (lower bound) to prefill ``batch`` prompts of ``tokens`` tokens; see :func:`prefill_step`.

    Examples
    --------
    >>> round(prefill_time("llama-3-70b", 4096, "H100", n_gpus=8, link=None) * 1e3, 1)  # ms
    73.6
    """
    return prefill_step(
        model,
        tokens,
        acc,
        batch=batch,
        dtype=dtype,
        n_gpus=n_gpus,
        mfu=mfu,
        link=link,
        kv_dtype=kv_dtype,
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
    link: str | Link | None = AUTO,
    kv_dtype: str | None = None,
) -> TimeBreakdown:
    """Roofline bound of one decode step: ``batch`` sequences with ``context`` cached tokens each emit one token.

    Costs from :func:`helpers.llm.decode_cost`: the weights are read once per
    step whatever the batch, each sequence's KV cache once per step.
    Parameters as in :func:`prefill_step`, with ``context`` (tokens already
    cached per sequence, >= 0) in place of ``tokens``; the all-reduces carry
    ``batch`` tokens; ``kv_dtype`` the cache's storage (``None``: ``dtype``).

    This is the whole-step **bound**: one roofline over all FLOP and bytes,
    as if the weight GEMMs hid under attention's KV reads.
    :func:`helpers.steps.decode_step` is the **prediction**, the sum of the
    step's kernels, each at its own roof and measured efficiency.
    """
    cost = decode_cost(model, context, batch=batch, dtype=dtype, kv_dtype=kv_dtype)
    parts = breakdown(cost.flops, cost.bytes, acc, dtype=dtype, n_gpus=n_gpus, mfu=mfu)
    comm = tp_allreduce_time(model, batch, acc, n_gpus=n_gpus, dtype=dtype, link=link)
    return with_comm(parts, comm)


def decode_step_time(
    model: str | ModelConfig,
    context: int,
    acc: str | Accelerator,
    *,
    batch: int = 1,
    dtype: str = "bf16",
    n_gpus: int = 1,
    mfu: float = 1.0,
    link: str | Link | None = AUTO,
    kv_dtype: str | None = None,
) -> float:
    """Seconds (lower bound) of one decode step; see :func:`decode_step`."""
    return decode_step(
        model,
        context,
        acc,
        batch=batch,
        dtype=dtype,
        n_gpus=n_gpus,
        mfu=mfu,
        link=link,
        kv_dtype=kv_dtype,
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
    n_gpus = _args.positive_int("n_gpus", n_gpus)
    reserve = _args.fraction_below_one("reserve", reserve)
    weights = (
        weight_bytes(model, dtype=dtype)
        if _args.boolean("holds_weights", holds_weights)
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
    kv_copies: int = 1,
    kv_dtype: str | None = None,
) -> int:
    """Largest decode batch whose KV caches fit beside the weights (0 if none does).

    Each sequence holds ``context + 1`` tokens of KV cache (its context and
    the token being generated); the weights are stored once across the
    ``n_gpus`` devices. Options as in :func:`free_kv_bytes`, and:

    kv_copies : int
        How many of the ``n_gpus`` devices store each KV byte, 1 to
        ``n_gpus``. 1 (the default) when the cache is sharded: MHA/GQA heads
        under tensor parallelism, or any attention run data-parallel (each
        device holds whole sequences, as DeepSeek and SGLang deploy MLA).
        ``n_gpus`` for an MLA latent under head-sharded tensor parallelism:
        every device's heads score the same latent, so every device holds it.
    kv_dtype : str or None
        Storage of the KV cache (:data:`helpers.kv_formats.KV_FORMATS`);
        ``None``: ``dtype``, which also stores the weights.

    Returns
    -------
    int
        ``floor(free_kv_bytes / (kv_copies * kv_cache_bytes(context + 1)))``,
        at least 0.

    >>> dp = max_decode_batch("deepseek-v3", 32768, "H200", n_gpus=8, dtype="fp8")
    >>> tp = max_decode_batch("deepseek-v3", 32768, "H200", n_gpus=8, dtype="fp8", kv_copies=8)
    >>> tp == dp // 8
    True
    """
    context = _args.non_negative_int("context", context)
    n_gpus = _args.positive_int("n_gpus", n_gpus)
    copies = _args.positive_int("kv_copies", kv_copies)
    if copies > n_gpus:
        raise ValueError(f"kv_copies must be at most n_gpus ({n_gpus}), got {copies}")
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
    per_seq = kv_cache_bytes(model, context + 1, dtype=dtype, kv_dtype=kv_dtype)
    return int(free // (copies * per_seq))


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
    context = _args.non_negative_int("context", context)
    m = get_model(model)
    if m.moe is None:
        return crossing_batch(
            lambda b: decode_cost(m, context, batch=b, dtype=dtype),
            acc,
            dtype=dtype,
            mfu=mfu,
        )
    mfu = _args.fraction("mfu", mfu)
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
    link: str | Link | None = AUTO,
) -> SloBatch:
    """Largest continuous batch whose decode step takes at most ``tbt_s`` seconds.

    The step time is :func:`decode_step_time` plus a fixed ``overhead`` per
    step; it grows with the batch, so the largest batch is found by
    bisection. With continuous batching the sequences of a batch have
    different lengths; ``context`` stands for their mean (the KV bytes read
    are linear in it). The batch is also capped by :func:`max_decode_batch`
    (same ``reserve``) and by ``max_batch`` if given. ``link`` as in
    :func:`decode_step` (the tensor-parallel all-reduces grow with the batch).
    """
    tbt_s = _args.positive("tbt_s", tbt_s)
    overhead = _args.non_negative("overhead", overhead)
    cap = max_decode_batch(
        model, context, acc, n_gpus=n_gpus, dtype=dtype, reserve=reserve
    )
    reason: Literal["slo", "memory", "max_batch"] = "memory"
    if max_batch is not None:
        max_batch = _args.positive_int("max_batch", max_batch)
        if max_batch < cap:
            cap, reason = max_batch, "max_batch"

    def step(b: int) -> float:
        return overhead + decode_step_time(
            model,
            context,
            acc,
            batch=b,
            dtype=dtype,
            n_gpus=n_gpus,
            mfu=mfu,
            link=link,
        )

    if cap == 0:
        return SloBatch(0, step(1), 0.0, "memory")
    if step(1) > tbt_s:
        return SloBatch(0, step(1), 0.0, "slo")
    if step(cap) <= tbt_s:
        return SloBatch(cap, step(cap), cap / step(cap), reason)
    lo = last_true(lambda b: step(b) <= tbt_s, 1, cap)  # step(1) <= tbt < step(cap)
    return SloBatch(lo, step(lo), lo / step(lo), "slo")


def published_decode_steps(
    model: str | ModelConfig,
    acc: str | Accelerator,
    *,
    n_gpus: int = 1,
    dtype: str = "fp16",
) -> tuple[PublishedPoint, ...]:
    """The published decode step latencies (seconds) of ``model`` on ``n_gpus`` x ``acc`` in ``dtype``.

    The points of :func:`helpers.published.load` (kind ``"decode"``,
    quantity ``"step_latency"``) whose model, GPU, GPU count and precision
    match, in the dataset's order; each point's ``setting`` holds its
    ``batch``, ``input_len`` and ``output_len`` as printed, and its
    ``source`` and ``locator`` say where it was published. Empty when none
    is. Set a point beside :func:`decode_step` at
    ``mean_decode_context(input_len, output_len)``.

    >>> steps = published_decode_steps("llama-2-7b", "A100", dtype="fp16")
    >>> [p.value for p in steps if p.setting["batch"] == "16"
    ...  and p.setting["input_len"] == "128" and p.setting["output_len"] == "2048"]
    [0.015]
    """
    name = model.name if isinstance(model, ModelConfig) else get_model(model).name
    n_gpus = _args.positive_int("n_gpus", n_gpus)
    dtype_bytes(dtype)
    return tuple(
        p
        for p in load("decode", gpu=get_accelerator(acc).name)
        if p.quantity == "step_latency"
        and p.precision == _args.name("dtype", dtype)
        and p.setting.get("model") == name
        and p.setting.get("num_gpus") == str(n_gpus)
    )


__all__ = [
    "with_comm",
    "AUTO",
    "KERNELS_PER_LAYER",
    "RESERVE",
    "SloBatch",
    "critical_decode_batch",
    "decode_step",
    "decode_step_time",
    "free_kv_bytes",
    "kernels_per_step",
    "max_batch_under_slo",
    "mean_decode_context",
    "published_decode_steps",
    "suffix_prefill_time",
    "tp_allreduce_time",
    "max_decode_batch",
    "prefill_step",
    "prefill_time",
    "weights_fit",
]
