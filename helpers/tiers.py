"""A tiered KV cache (HBM -> DRAM -> remote pool / SSD), prefetching, and batching under a latency target.

Each tier is a capacity, a bandwidth and a latency (:class:`Tier`). A request
whose prefix is cached finds its blocks in one tier or another; for each
chunk the rule of :mod:`helpers.kvcache` decides, with the same inequality:
**fetch the chunk from its tier iff its transfer time is less than the time
to recompute it** (:func:`prefill_time`). Prefetching overlaps the fetches
with computation (:func:`pipelined_time`). :func:`max_batch_under_slo` picks
the largest decode batch whose step meets a time-per-output-token target.

Conventions: SI units; a tier's bandwidth is what one request's fetch gets;
recompute and prefill times are roofline times (:func:`helpers.kvcache.recompute_time`).

References
----------
Qin et al. (2025), "Mooncake: Trading More Storage for Less Computation",
FAST'25 (tiered KV cache pool, layer-wise prefill overlapping KV loads).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, Sequence

import numpy as np

from . import _validate
from .hardware import Accelerator, Link, get_link
from .kvcache import recompute_time, transfer_time
from .llm import ModelConfig, get_model, kv_cache_bytes_per_token
from .offload import colocated_step_time, max_batch_colocated

Verdict = Literal["transfer", "recompute"]


@dataclass(frozen=True)
class Tier:
    """One level of a KV cache hierarchy.

    Attributes
    ----------
    name : str
        Display name, e.g. ``"DRAM (PCIe 5.0 x16)"``.
    capacity_bytes : float
        Bytes of KV cache the tier can hold.
    bandwidth : float
        Bytes/s a fetch from this tier into the GPU gets.
    latency : float
        Seconds before the first byte arrives (added once per fetch).
    source : str
        Where the figures come from (a catalog link, a datasheet, or "assumption").
    """

    name: str
    capacity_bytes: float
    bandwidth: float
    latency: float = 0.0
    source: str = ""

    def __post_init__(self) -> None:
        _validate.name("name", self.name)
        _validate.positive("capacity_bytes", self.capacity_bytes)
        _validate.positive("bandwidth", self.bandwidth)
        _validate.non_negative("latency", self.latency)

    def capacity_tokens(self, model: str | ModelConfig, dtype: str = "bf16") -> int:
        """Tokens of ``model``'s KV cache the tier holds: ``capacity_bytes // kv_cache_bytes_per_token``."""
        return int(self.capacity_bytes // kv_cache_bytes_per_token(model, dtype))

    def as_link(self) -> Link:
        """The tier as a :class:`~helpers.hardware.Link`, so :mod:`helpers.kvcache` can time fetches from it."""
        return Link(self.name, self.bandwidth, self.latency, self.source or "user-supplied")

    @classmethod
    def from_link(cls, name: str, capacity_bytes: float, link: str | Link, n_links: int = 1) -> "Tier":
        """A tier reached through ``n_links`` catalog links (bandwidth adds up, latency is the link's)."""
        chosen = get_link(link)
        n_links = _validate.positive_int("n_links", n_links)
        return cls(name, capacity_bytes, n_links * chosen.bandwidth, chosen.latency, chosen.source)


def fetch_time(model: str | ModelConfig, tokens: int, tier: Tier, dtype: str = "bf16") -> float:
    """Seconds to fetch ``tokens`` tokens of KV cache from ``tier``: ``latency + bytes / bandwidth``."""
    _check_tier(tier)
    return transfer_time(model, tokens, tier.as_link(), dtype)


def _check_tier(tier: object) -> None:
    if not isinstance(tier, Tier):
        raise TypeError(f"tier must be a Tier, got {type(tier).__name__}")


def _prefill(model: ModelConfig, tokens: int, acc: str | Accelerator, dtype: str, n_gpus: int, mfu: float) -> float:
    return 0.0 if tokens == 0 else recompute_time(model, tokens, acc, dtype, n_gpus, mfu)


def span_compute_time(
    model: str | ModelConfig,
    start: int,
    stop: int,
    acc: str | Accelerator,
    dtype: str = "bf16",
    n_gpus: int = 1,
    mfu: float = 1.0,
) -> float:
    """Seconds to compute tokens ``start .. stop - 1`` of a prompt whose first ``start`` tokens are cached.

    ``recompute_time(stop) - recompute_time(start)``: the FLOP of two
    prefills differ by exactly the work of the span (its tokens' weight
    matmuls and causal attention over ``stop (stop + 1) / 2 - start (start + 1) / 2``
    query-key pairs), so while prefill is compute-bound, which it is for all
    but the shortest prompts, the difference of the times is the span's time.
    ``start = 0`` gives :func:`helpers.kvcache.recompute_time`.
    """
    m = get_model(model)
    start = _validate.non_negative_int("start", start)
    stop = _validate.non_negative_int("stop", stop)
    if stop < start:
        raise ValueError(f"stop ({stop}) must be >= start ({start})")
    return _prefill(m, stop, acc, dtype, n_gpus, mfu) - _prefill(m, start, acc, dtype, n_gpus, mfu)


@dataclass(frozen=True)
class Chunk:
    """The part of a request's prefix found in one tier, and what to do with it.

    Attributes
    ----------
    tier : str
        The tier's name.
    start, stop : int
        Token positions ``[start, stop)`` of the chunk in the prompt.
    fetch_s, recompute_s : float
        Seconds to fetch it from its tier / to recompute it in place.
    verdict : {'transfer', 'recompute'}
        ``'transfer'`` iff ``fetch_s < recompute_s``.
    """

    tier: str
    start: int
    stop: int
    fetch_s: float
    recompute_s: float
    verdict: Verdict

    @property
    def tokens(self) -> int:
        """Tokens in the chunk."""
        return self.stop - self.start


@dataclass(frozen=True)
class PrefillEstimate:
    """Time to prefill one request whose prefix is spread over tiers.

    Attributes
    ----------
    chunks : tuple of Chunk
        One per tier that holds part of the prefix, in prompt order.
    fetch_s : float
        Sum of the fetch times of the chunks whose verdict is ``'transfer'``.
    compute_s : float
        Recomputed chunks plus the uncached rest of the prompt.
    n_layers : int
        The model's layers (the stages a layer-wise prefetch pipelines over).
    """

    chunks: tuple[Chunk, ...]
    fetch_s: float
    compute_s: float
    n_layers: int

    @property
    def serial_s(self) -> float:
        """Fetch everything first, then compute: ``fetch_s + compute_s``."""
        return self.fetch_s + self.compute_s

    @property
    def prefetched_s(self) -> float:
        """Layer-wise prefetch: fetch layer ``l + 1``'s KV while layer ``l`` computes (:func:`pipelined_time`)."""
        return pipelined_time(self.fetch_s, self.compute_s, self.n_layers)

    @property
    def hidden_s(self) -> float:
        """Fetch fully hidden (started during the previous request): ``max(fetch_s, compute_s)``."""
        return max(self.fetch_s, self.compute_s)


def pipelined_time(fetch_s: float, compute_s: float, stages: int) -> float:
    """Time of fetch and compute pipelined over ``stages`` equal stages (e.g. layers).

    Stage ``i``'s compute needs stage ``i``'s fetch; the fetch of stage
    ``i + 1`` overlaps the compute of stage ``i``. With per-stage times
    ``f = fetch_s / stages`` and ``c = compute_s / stages`` the total is
    ``f + c + (stages - 1) * max(f, c)``: the serial sum for one stage,
    approaching ``max(fetch_s, compute_s)`` as the stages multiply. Assumes
    equal stages and that fetching does not slow computing (separate engines).
    """
    fetch_s = _validate.non_negative("fetch_s", fetch_s)
    compute_s = _validate.non_negative("compute_s", compute_s)
    stages = _validate.positive_int("stages", stages)
    f, c = fetch_s / stages, compute_s / stages
    return f + c + (stages - 1) * max(f, c)


def prefill_time(
    model: str | ModelConfig,
    input_tokens: int,
    tiers: Sequence[Tier],
    cached_tokens: Sequence[int],
    acc: str | Accelerator,
    dtype: str = "bf16",
    n_gpus: int = 1,
    mfu: float = 1.0,
) -> PrefillEstimate:
    """Prefill time of a request whose prefix lies in tiers, deciding per chunk: fetch or recompute.

    The prompt's first ``cached_tokens[0]`` tokens are in ``tiers[0]``, the
    next ``cached_tokens[1]`` in ``tiers[1]``, and so on (list the tiers
    fastest first: the oldest, most shared blocks of a prefix are the
    hottest); the rest is not cached. A chunk ``[a, b)`` is fetched iff
    ``fetch_time(b - a) < span_compute_time(a, b)``, the inequality of
    :func:`helpers.kvcache.breakeven` (for the first chunk, ``a = 0``, it is
    exactly that function's verdict). Fetches of different chunks add up
    (they share the GPU's input link).

    Parameters
    ----------
    model : str or ModelConfig
    input_tokens : int
        Prompt length.
    tiers : sequence of Tier
    cached_tokens : sequence of int
        Tokens of the prefix found in each tier (same length as ``tiers``);
        their sum must not exceed ``input_tokens``.
    acc, dtype, n_gpus, mfu
        The prefill hardware, as in :func:`helpers.kvcache.recompute_time`.
    """
    m = get_model(model)
    input_tokens = _validate.positive_int("input_tokens", input_tokens)
    tiers = tuple(tiers)
    counts = [_validate.non_negative_int(f"cached_tokens[{i}]", c) for i, c in enumerate(cached_tokens)]
    if len(counts) != len(tiers):
        raise ValueError(f"cached_tokens has {len(counts)} entries but tiers has {len(tiers)}")
    for tier in tiers:
        _check_tier(tier)
    if sum(counts) > input_tokens:
        raise ValueError(f"cached_tokens add up to {sum(counts)}, more than input_tokens ({input_tokens})")
    chunks = []
    start = 0
    fetch_s = compute_s = 0.0
    for tier, count in zip(tiers, counts):
        if count == 0:
            continue
        stop = start + count
        fetch = fetch_time(m, count, tier, dtype)
        recompute = span_compute_time(m, start, stop, acc, dtype, n_gpus, mfu)
        verdict: Verdict = "transfer" if fetch < recompute else "recompute"
        chunks.append(Chunk(tier.name, start, stop, fetch, recompute, verdict))
        if verdict == "transfer":
            fetch_s += fetch
        else:
            compute_s += recompute
        start = stop
    compute_s += span_compute_time(m, start, input_tokens, acc, dtype, n_gpus, mfu)
    return PrefillEstimate(tuple(chunks), fetch_s, compute_s, m.n_layers)


def cached_tokens_from_fractions(input_tokens: int, fractions: Sequence[float]) -> list[int]:
    """Turn per-tier fractions of the input (hit rates) into whole token counts for :func:`prefill_time`.

    ``fractions[i]`` is the share of input tokens served from tier ``i``
    (e.g. from :func:`helpers.cachesim.tier_hit_fractions`); the rest,
    ``1 - sum(fractions)``, is the miss fraction. Counts are rounded down.
    """
    input_tokens = _validate.positive_int("input_tokens", input_tokens)
    values = [_validate.non_negative(f"fractions[{i}]", f) for i, f in enumerate(fractions)]
    if sum(values) > 1 + 1e-9:
        raise ValueError(f"fractions add up to {sum(values):.6g} > 1")
    return [int(math.floor(f * input_tokens + 1e-9)) for f in values]


def expected_prefill_time(
    model: str | ModelConfig,
    input_tokens: int,
    tiers: Sequence[Tier],
    fractions: Sequence[float],
    acc: str | Accelerator,
    dtype: str = "bf16",
    n_gpus: int = 1,
    mfu: float = 1.0,
) -> PrefillEstimate:
    """Prefill estimate for a request of ``input_tokens`` whose tokens hit the tiers in the given fractions.

    ``fractions`` has one entry per tier, optionally followed by the miss
    fraction (as :func:`helpers.cachesim.tier_hit_fractions` returns it; the
    miss is then ignored: it is whatever the tiers do not serve).

    A mean-field estimate: the typical request is given the workload's mean
    hit fractions (its prefix is ``fractions[0] * n`` tokens from the first
    tier, then ``fractions[1] * n`` from the second, ...). It is not the mean
    of per-request times, which would need each request's own hits.
    """
    values = list(fractions)
    tiers = tuple(tiers)
    if len(values) == len(tiers) + 1:
        values = values[:-1]
    counts = cached_tokens_from_fractions(input_tokens, values)
    return prefill_time(model, input_tokens, tiers, counts, acc, dtype, n_gpus, mfu)


def tier_verdicts(
    model: str | ModelConfig,
    prefix_tokens: int,
    tiers: Sequence[Tier],
    acc: str | Accelerator,
    dtype: str = "bf16",
    n_gpus: int = 1,
    mfu: float = 1.0,
) -> list[Chunk]:
    """For a whole prefix of ``prefix_tokens`` found in each tier in turn: fetch or recompute?

    One :class:`Chunk` per tier, each ``[0, prefix_tokens)``: the verdict of
    :func:`helpers.kvcache.breakeven` with the tier as the link.
    """
    prefix_tokens = _validate.positive_int("prefix_tokens", prefix_tokens)
    recompute = recompute_time(model, prefix_tokens, acc, dtype, n_gpus, mfu)
    out = []
    for tier in tiers:
        _check_tier(tier)
        fetch = fetch_time(model, prefix_tokens, tier, dtype)
        out.append(Chunk(tier.name, 0, prefix_tokens, fetch, recompute, "transfer" if fetch < recompute else "recompute"))
    return out


def trace_fractions(
    trace: object, tiers: Sequence[Tier], model: str | ModelConfig, dtype: str = "bf16", block_tokens: int = 512
) -> np.ndarray:
    """Fractions of a trace's prompt tokens served by each tier, then the miss fraction.

    Replays ``trace`` (a :class:`helpers.cachesim.Trace` or its stack
    distances) through an inclusive LRU hierarchy with
    :func:`helpers.cachesim.tier_hit_fractions`. Inclusive means each tier
    also holds what the faster ones hold, so list the tiers fastest first
    with strictly growing capacities; each tier's capacity in tokens is
    :meth:`Tier.capacity_tokens` for ``model``.
    """
    from . import cachesim  # imported lazily: the simulator is only needed with a trace

    for tier in tiers:
        _check_tier(tier)
    capacities = [tier.capacity_tokens(model, dtype) for tier in tiers]
    return cachesim.tier_hit_fractions(trace, capacities, block_tokens=block_tokens)


@dataclass(frozen=True)
class SloBatch:
    """The largest decode batch that meets a time-per-output-token (TPOT) target.

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
    tpot_s: float,
    n_gpus: int = 1,
    dtype: str = "bf16",
    overhead: float = 0.0,
    max_batch: int | None = None,
) -> SloBatch:
    """Largest continuous batch whose decode step takes at most ``tpot_s`` seconds.

    The step time is the roofline time of :func:`helpers.llm.decode_cost` on
    ``n_gpus`` devices (:func:`helpers.offload.colocated_step_time`) plus a
    fixed ``overhead`` per step; it grows with the batch, so the largest
    batch is found by bisection. With continuous batching the sequences of a
    batch have different lengths; ``context`` stands for their mean (the
    KV bytes read are linear in it). The batch is also capped by the KV cache
    that fits beside the weights (:func:`helpers.offload.max_batch_colocated`)
    and by ``max_batch`` if given.
    """
    tpot_s = _validate.positive("tpot_s", tpot_s)
    overhead = _validate.non_negative("overhead", overhead)
    memory_cap = max_batch_colocated(model, context, acc, n_gpus, dtype)
    cap, reason = memory_cap, "memory"
    if max_batch is not None:
        max_batch = _validate.positive_int("max_batch", max_batch)
        if max_batch < cap:
            cap, reason = max_batch, "max_batch"

    def step(b: int) -> float:
        return colocated_step_time(model, context, b, acc, n_gpus, dtype) + overhead

    if cap == 0:
        one = step(1)
        return SloBatch(0, one, 0.0, "memory")
    if step(1) > tpot_s:
        return SloBatch(0, step(1), 0.0, "slo")
    if step(cap) <= tpot_s:
        return SloBatch(cap, step(cap), cap / step(cap), reason)  # type: ignore[arg-type]
    lo, hi = 1, cap  # step(lo) <= tpot < step(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if step(mid) <= tpot_s:
            lo = mid
        else:
            hi = mid
    return SloBatch(lo, step(lo), lo / step(lo), "slo")

