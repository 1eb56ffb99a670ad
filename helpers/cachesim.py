"""Replay request traces through a prefix KV cache: hit rates, LRU stack distances, tiers.

The traces (:class:`helpers.traces.Trace`, loaded by
:func:`helpers.traces.load_trace`) name each request's 512-token prefix
blocks: two requests whose block ids start with the same ids share that
prefix, so the KV cache of those blocks can be reused instead of recomputed.
Routing a trace over several nodes' caches is :mod:`helpers.routing`.

Cache model used throughout (a prefix cache, as in vLLM or Mooncake):

* the cache holds whole blocks, ``floor(capacity_tokens / block_tokens)`` of them;
* a request *hits* the longest prefix of its blocks that is in the cache when
  it arrives (prefix semantics: the first missing block ends the hit, because
  the KV of later blocks depends on every earlier token);
* after the request, all its blocks are in the cache: they are touched in
  reverse order, last block first, so the request's first block ends up the
  most recently used and, under LRU, a prefix's tail is evicted before its head;
* eviction is least-recently-used (LRU).

Because every block is inserted whatever the outcome, the cache *contents*
never depend on hits, and LRU has the inclusion property
(Mattson et al., 1970): the cache of ``c`` blocks holds exactly the
``c`` most recently touched distinct blocks. So one pass over the trace that
records stack distances gives the hit rate at every capacity
(:func:`stack_distances`, :func:`hit_rate_curve`, :func:`tier_hit_fractions`);
:func:`simulate_prefix_cache` is the direct, one-capacity simulation that
the tests check the curve against; it and :func:`helpers.routing.local_vs_global`
share one cache, :class:`helpers._prefix_cache.PrefixLRU`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from . import _args, llm
from ._moved import forwarder
from ._prefix_cache import (
    PrefixLRU,
    block_weights,
    capacities_blocks,
    capacity_blocks,
    group_blocks,
)
from .traces import TRACE_BLOCK_TOKENS, Trace
from .traces import check_trace as _check_trace
from .traces import trace_prefill_flops as _trace_prefill_flops

# ---------------------------------------------------------------------------
# Blocks at a chosen granularity
# ---------------------------------------------------------------------------


# ---------------------------------------------------------------------------
# Direct simulation
# ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class CacheStats:
    """Outcome of replaying a trace through a prefix cache of one capacity.

    Attributes
    ----------
    capacity_tokens : float
        Cache size in tokens (``math.inf`` for unlimited).
    block_tokens : int
        Tokens per cache block.
    hit_tokens : numpy.ndarray of int64, shape (n_requests,)
        Prompt tokens of each request served from the cache (its hit prefix).
    input_tokens : int
        Prompt tokens of all requests.
    hit_blocks, total_blocks : int
        Blocks found in the cache (within hit prefixes) and blocks referenced.
    """

    capacity_tokens: float
    block_tokens: int
    hit_tokens: np.ndarray
    input_tokens: int
    hit_blocks: int
    total_blocks: int

    @property
    def hit_rate(self) -> float:
        """Token-weighted hit rate: hit prompt tokens / prompt tokens."""
        return float(self.hit_tokens.sum()) / self.input_tokens

    @property
    def block_hit_rate(self) -> float:
        """Hit blocks / referenced blocks."""
        return self.hit_blocks / self.total_blocks


def simulate_prefix_cache(
    trace: Trace,
    capacity_tokens: float,
    *,
    block_tokens: int = TRACE_BLOCK_TOKENS,
) -> CacheStats:
    """Replay ``trace`` through a prefix cache of ``capacity_tokens`` tokens, directly.

    Each request hits the longest prefix of its blocks present when it
    arrives; then all its blocks are touched, last block first (see the
    module docstring), and least-recently-used blocks are evicted down to
    ``floor(capacity_tokens / block_tokens)`` blocks.

    Parameters
    ----------
    trace : Trace
    capacity_tokens : float
        Cache size in tokens, > 0 (``math.inf`` for unlimited).
    block_tokens : int
        Tokens per cache block: a multiple of the trace's 512-token blocks
        (a larger block is ``k`` consecutive trace blocks, shared only when
        all ``k`` match).

    Returns
    -------
    CacheStats
    """
    trace = _check_trace(trace)
    block_tokens, ids, offsets = group_blocks(trace, block_tokens)
    capacity = capacity_blocks("capacity_tokens", capacity_tokens, block_tokens)
    lengths = trace.input_lengths.tolist()
    ids_list = ids.tolist()
    off = offsets.tolist()
    cache = PrefixLRU(capacity)
    hit_tokens = np.empty(trace.n_requests, dtype=np.int64)
    hit_blocks = 0
    for r in range(trace.n_requests):
        blocks = ids_list[off[r] : off[r + 1]]
        k = cache.hit(blocks)
        hit_blocks += k
        hit_tokens[r] = min(k * block_tokens, lengths[r])
        cache.touch(blocks)
    return CacheStats(
        capacity_tokens=float(capacity_tokens),
        block_tokens=block_tokens,
        hit_tokens=hit_tokens,
        input_tokens=trace.input_tokens,
        hit_blocks=hit_blocks,
        total_blocks=len(ids_list),
    )


# ---------------------------------------------------------------------------
# One pass: LRU stack distances
# ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class StackDistances:
    """Per-block prefix stack distances of a trace: every capacity's hits in one array.

    Attributes
    ----------
    trace_name : str
    block_tokens : int
    distances : numpy.ndarray of float64, shape (total blocks,)
        For block ``j`` of a request, ``max(d_0, ..., d_j)`` where ``d_i`` is
        the LRU stack distance of the request's block ``i`` when the request
        arrives (distinct blocks touched since it was last touched; ``inf``
        for a first reference). The block hits in a cache of ``c`` blocks iff
        ``distances[j] < c``.
    weights : numpy.ndarray of int64, shape (total blocks,)
        Prompt tokens of each block (the last block of a prompt may be partial).
    request : numpy.ndarray of int64, shape (total blocks,)
        Request index of each block.
    n_requests, input_tokens : int
    distinct_blocks : int
        Distinct blocks in the trace: a cache this large never evicts.
    """

    trace_name: str
    block_tokens: int
    distances: np.ndarray
    weights: np.ndarray
    request: np.ndarray
    n_requests: int
    input_tokens: int
    distinct_blocks: int
    _sorted: np.ndarray = field(init=False, repr=False)
    _cum_tokens: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("distances", "weights", "request"):
            getattr(self, name).setflags(write=False)
        order = np.argsort(self.distances, kind="stable")
        object.__setattr__(self, "_sorted", self.distances[order])
        object.__setattr__(
            self, "_cum_tokens", np.concatenate([[0], np.cumsum(self.weights[order])])
        )

    def hit_tokens(self, capacities_tokens: object) -> np.ndarray:
        """Prompt tokens served from a cache of each capacity (tokens; ``inf`` allowed)."""
        blocks = capacities_blocks(capacities_tokens, self.block_tokens)
        return self._cum_tokens[
            np.searchsorted(self._sorted, blocks, side="left")
        ].astype(np.int64)

    def request_hit_tokens(self, capacity_tokens: float) -> np.ndarray:
        """Prompt tokens of each request served from a cache of ``capacity_tokens``."""
        capacity = capacity_blocks(
            "capacity_tokens", capacity_tokens, self.block_tokens
        )
        hit = self.distances < capacity
        return np.bincount(
            self.request, weights=self.weights * hit, minlength=self.n_requests
        ).astype(np.int64)


def stack_distances(
    trace: Trace, *, block_tokens: int = TRACE_BLOCK_TOKENS
) -> StackDistances:
    """LRU stack distances of every block reference, in one pass (Mattson et al. 1970).

    Why one pass gives the prefix-semantics hit of every capacity (LRU):

    1. The cache's contents do not depend on hits: every request's blocks are
       touched whether they hit or not. With LRU, the cache of ``c`` blocks
       therefore holds exactly the ``c`` most recently touched distinct blocks
       (the inclusion property of Mattson et al., 1970).
    2. So when a request arrives, its block ``i`` is in a cache of ``c``
       blocks iff its stack distance ``d_i`` (distinct blocks touched since
       ``i`` was last touched) is ``< c``; ``d_i = inf`` if never touched.
       All ``d_i`` are taken at the request's arrival, before it touches
       anything.
    3. Prefix semantics: the request hits blocks ``0..k-1`` where ``k`` is the
       first ``i`` with ``d_i >= c``. Block ``j`` is among the hits iff
       ``d_0, ..., d_j`` are all ``< c``, i.e. iff ``m_j = max(d_0..d_j) < c``.
       ``m_j`` does not depend on ``c``, so the hit tokens at capacity ``c``
       are the total weight of blocks with ``m_j < c``: one sort of ``m``
       gives the whole curve.

    The distances are computed offline with a merge-sort tree: the stack
    distance of a reference at arrival time ``q`` whose block was last touched
    at position ``p`` is the number of touch positions ``i`` in ``(p, q)``
    whose block is not touched again before ``q``.

    Parameters
    ----------
    trace : Trace
    block_tokens : int
        Tokens per cache block, a multiple of the trace's block size.

    Returns
    -------
    StackDistances
    """
    trace = _check_trace(trace)
    block_tokens, ids, offsets = group_blocks(trace, block_tokens)
    n_req = trace.n_requests
    counts = np.diff(offsets)
    request, weights = block_weights(trace, offsets, block_tokens)
    n = len(ids)
    # Touch order: each request's blocks reversed (last block first).
    position_in_request = np.arange(n) - offsets[request]
    # touch index of reference j
    touch_of_ref = offsets[request] + (counts[request] - 1 - position_in_request)
    touched = np.empty(n, dtype=np.int64)
    touched[touch_of_ref] = ids
    touch_request = request  # requests occupy the same index ranges in both orders
    arrival = offsets[touch_request]  # q: first touch index of the request
    # previous and next touch of the same block
    order = np.lexsort((np.arange(n), touched))
    same = touched[order][1:] == touched[order][:-1]
    prev = np.full(n, -1, dtype=np.int64)
    nxt = np.full(n, n, dtype=np.int64)
    prev[order[1:][same]] = order[:-1][same]
    nxt[order[:-1][same]] = order[1:][same]
    # For a block referenced twice in one request, use the touch before the request.
    depth = np.full(n, np.inf)
    first = prev < arrival
    p = prev[first]
    q = arrival[first]
    known = p >= 0
    depth_first = np.full(len(p), np.inf)
    depth_first[known] = _count_distinct(nxt, prev, p[known], q[known])
    depth[first] = depth_first
    for i in np.flatnonzero(
        ~first
    ):  # repeated within its own request: same block, same depth
        depth[i] = depth[prev[i]]
    d_ref = depth[touch_of_ref]  # back to prompt order
    # prefix maximum within each request: shift request r by r * big, accumulate, shift back
    finite_max = float(np.max(d_ref[np.isfinite(d_ref)], initial=0.0))
    big = finite_max + 2.0
    code = np.where(np.isfinite(d_ref), d_ref, finite_max + 1.0) + request * big
    prefix = np.maximum.accumulate(code) - request * big
    prefix[prefix > finite_max] = np.inf
    return StackDistances(
        trace_name=trace.name,
        block_tokens=block_tokens,
        distances=prefix,
        weights=weights,
        request=request,
        n_requests=n_req,
        input_tokens=trace.input_tokens,
        distinct_blocks=int(ids.max()) + 1 if n else 0,
    )


def _count_distinct(
    nxt: np.ndarray, prev: np.ndarray, p: np.ndarray, q: np.ndarray
) -> np.ndarray:
    """For each query, ``#{i : p < i < q and nxt[i] >= q}`` (vectorised merge-sort tree).

    That is the number of distinct blocks touched strictly between positions
    ``p`` and ``q``: each is counted once, at its last touch before ``q``.
    Computed as ``F(q) - F(p + 1)`` with ``F(x) = #{i < x : nxt[i] >= q}``.
    ``F(q)`` is the number of distinct blocks touched before ``q`` (a running
    count of first touches); ``F(p + 1)`` splits ``[0, p + 1)`` into one
    sorted segment per set bit of ``p + 1``, counted with a binary search.
    """
    n = len(nxt)
    if n == 0 or len(p) == 0:
        return np.zeros(len(p))
    distinct_before = np.concatenate([[0], np.cumsum(prev < 0)])
    counts = distinct_before[q].astype(np.int64)
    x = p + 1
    span = n + 2
    level = 0
    while (1 << level) <= n:
        size = 1 << level
        keys = np.sort((np.arange(n) >> level) * span + nxt)
        has = np.flatnonzero(x & size)
        if len(has):
            seg = (
                x[has] >> (level + 1)
            ) * 2  # the segment [x - x % 2size, + size) at this level
            needles = seg * span + q[has]
            order = np.argsort(needles, kind="stable")  # sorted needles search faster
            below = np.empty(len(has), dtype=np.int64)
            below[order] = np.searchsorted(keys, needles[order], side="left")
            counts[has] -= np.minimum((seg + 1) * size, n) - below
        level += 1
    return counts.astype(float)


def _as_distances(trace_or_distances: object, block_tokens: int) -> StackDistances:
    if isinstance(trace_or_distances, StackDistances):
        if block_tokens != trace_or_distances.block_tokens:
            raise ValueError(
                f"block_tokens ({block_tokens}) differs from the precomputed distances' "
                f"({trace_or_distances.block_tokens})"
            )
        return trace_or_distances
    return stack_distances(_check_trace(trace_or_distances), block_tokens=block_tokens)


def hit_rate_curve(
    trace: Trace | StackDistances,
    capacities_tokens: Sequence[float] | np.ndarray,
    *,
    block_tokens: int = TRACE_BLOCK_TOKENS,
) -> np.ndarray:
    """Token-weighted prefix-cache hit rate of an LRU cache at each capacity, from one pass.

    Equal, capacity by capacity, to ``simulate_prefix_cache(trace, c, block_tokens=b).hit_rate``
    (see :func:`stack_distances` for the proof; the tests check it).

    Parameters
    ----------
    trace : Trace or StackDistances
        A trace, or its precomputed :func:`stack_distances` (fast for calculators).
    capacities_tokens : sequence of float
        Cache sizes in tokens, each > 0 (``inf`` allowed).
    block_tokens : int

    Returns
    -------
    numpy.ndarray of float, same shape as ``capacities_tokens``
        Hit prompt tokens / prompt tokens.
    """
    sd = _as_distances(trace, block_tokens)
    return sd.hit_tokens(capacities_tokens) / sd.input_tokens


def capacity_for_fraction(
    trace: Trace | StackDistances,
    fraction: float,
    *,
    block_tokens: int = TRACE_BLOCK_TOKENS,
) -> float:
    """Smallest LRU capacity, in tokens, whose hit rate reaches ``fraction`` of the trace's ceiling.

    The ceiling is the hit rate of an infinite cache (``hit_rate_curve(trace,
    [inf])``). The curve is a step function of the capacity in whole blocks,
    so the answer is exact: a whole number of blocks, ``(m + 1) *
    block_tokens`` where ``m`` is the largest stack distance among the
    blocks needed. ``fraction = 1`` gives the capacity from which the cache
    never misses a block it could hit; 0 if the trace has no hits at all.

    Parameters
    ----------
    trace : Trace or StackDistances
    fraction : float
        Share of the ceiling to reach, in (0, 1].
    block_tokens : int
    """
    fraction = _args.fraction("fraction", fraction)
    sd = _as_distances(trace, block_tokens)
    ceiling = float(sd.hit_tokens([math.inf])[0])
    if ceiling == 0:
        return 0.0
    needed = int(np.searchsorted(sd._cum_tokens, fraction * ceiling, side="left"))
    largest = sd._sorted[needed - 1]
    return float((math.floor(largest) + 1) * sd.block_tokens)


def tier_hit_fractions(
    trace: Trace | StackDistances,
    capacities_tokens: Sequence[float] | np.ndarray,
    *,
    block_tokens: int = TRACE_BLOCK_TOKENS,
) -> np.ndarray:
    """Fractions of prompt tokens served by each tier of an inclusive LRU hierarchy, and the miss.

    Tier ``i`` (e.g. HBM, DRAM, remote) holds the ``C_i`` most recently used
    blocks, ``C_0 < C_1 < ...`` (inclusive: each tier contains the faster
    ones). A prompt token is served by tier ``i`` when its prefix is complete
    within tiers ``0..i`` but not within tiers ``0..i-1``; so the first ``i + 1``
    fractions add up to ``hit_rate_curve(trace, [C_i])``.

    Parameters
    ----------
    trace : Trace or StackDistances
    capacities_tokens : sequence of float
        Strictly increasing capacities in tokens, one per tier (``inf`` allowed last).
    block_tokens : int

    Returns
    -------
    numpy.ndarray of float, shape (len(capacities_tokens) + 1,)
        Served fraction per tier, then the miss fraction; the sum is 1.
    """
    caps = (
        np.asarray(capacities_tokens, dtype=float)
        if not isinstance(capacities_tokens, str)
        else None
    )
    if caps is None or caps.ndim != 1:
        raise TypeError(
            "capacities_tokens must be a one-dimensional sequence of numbers"
        )
    if caps.size > 1 and np.any(np.diff(caps) <= 0):
        raise ValueError(
            f"capacities_tokens must be strictly increasing, got {caps.tolist()}"
        )
    sd = _as_distances(trace, block_tokens)
    cumulative = sd.hit_tokens(caps) / sd.input_tokens
    served = np.diff(np.concatenate([[0.0], cumulative]))
    return np.concatenate([served, [1.0 - cumulative[-1]]])


# ---------------------------------------------------------------------------
# Hit-rate definitions
# ---------------------------------------------------------------------------


def hit_rate_definitions(trace: Trace | StackDistances) -> dict[str, float]:
    """The hit rate of an infinite prefix cache, by four definitions a paper might use.

    All four count a block as hit when its whole prefix was seen before
    (prefix semantics, unlimited capacity); they differ in what is averaged:

    ``"blocks"``
        hit block references ÷ block references (every block weighs 1);
    ``"full blocks"``
        the same, counting only full blocks (a prompt's partial last block is left out);
    ``"tokens"``
        hit prompt tokens ÷ prompt tokens, aggregated over the trace: the
        book's hit rate, :func:`hit_rate_curve` at ``inf``;
    ``"mean per request"``
        the mean over requests of each request's hit tokens ÷ its prompt tokens.

    Parameters
    ----------
    trace : Trace or StackDistances
        At the trace's own block size.

    Returns
    -------
    dict of str to float
        Each definition's value, a fraction in [0, 1].
    """
    sd = _as_distances(trace, TRACE_BLOCK_TOKENS)
    hit = np.isfinite(sd.distances)
    full = sd.weights == sd.block_tokens
    per_request = sd.request_hit_tokens(math.inf)
    lengths = np.bincount(sd.request, weights=sd.weights, minlength=sd.n_requests)
    return {
        "blocks": float(hit.mean()),
        "full blocks": float(hit[full].mean()),
        "tokens": float(sd.hit_tokens([math.inf])[0] / sd.input_tokens),
        "mean per request": float(np.mean(per_request / lengths)),
    }


# ---------------------------------------------------------------------------
# Prefill compute a prefix hit saves
# ---------------------------------------------------------------------------


def prompt_saved_fraction(
    model: str | llm.ModelConfig, prompt_tokens: int, hit_tokens: object
) -> np.ndarray:
    """Share of one prompt's prefill FLOP that a cached prefix of ``hit_tokens`` saves.

    :func:`helpers.llm.prefill_flops_saved` of the prefix over
    :func:`helpers.llm.prefill_cost` of the whole ``prompt_tokens``-token prompt:

    ``(p f + F p (p + 1) / 2) / (n f + F n (n + 1) / 2 + lm_head)``

    with ``f`` the weight-matmul FLOP per token and ``F`` the attention FLOP
    per query-key pair. It is *below* ``p / n`` for every ``0 < p < n``: the
    prefix holds the cheap early rows of the causal triangle, and the lm_head
    of the last token is never saved.

    Parameters
    ----------
    model : str or ModelConfig
    prompt_tokens : int
        The prompt's length ``n``, tokens (>= 1).
    hit_tokens : int or array of int
        Cached prefix lengths ``p``, tokens, ``0 <= p <= n``.

    Returns
    -------
    numpy.ndarray of float
        The saved fraction of the prompt's prefill FLOP, in [0, 1), shape of ``hit_tokens``.
    """
    n = _args.positive_int("prompt_tokens", prompt_tokens)
    saved = llm.prefill_flops_saved(model, hit_tokens)
    if np.any(np.asarray(hit_tokens, dtype=float) > n):
        raise ValueError(f"hit_tokens must not exceed prompt_tokens ({n})")
    return saved / llm.prefill_cost(model, n).flops


@dataclass(frozen=True)
class PrefillSaving:
    """What a cache of one capacity saves over a whole trace (both shares aggregate).

    Attributes
    ----------
    token_fraction : float
        Prompt tokens served from the cache ÷ all prompt tokens (the hit rate, :func:`hit_rate_curve`).
    flop_fraction : float
        Prefill FLOP saved ÷ the trace's prefill FLOP with no cache
        (:func:`helpers.traces.trace_prefill_flops`).
    """

    token_fraction: float
    flop_fraction: float


def prefill_saving(
    trace: Trace,
    model: str | llm.ModelConfig,
    capacity_tokens: float,
    *,
    distances: StackDistances | None = None,
) -> PrefillSaving:
    """Share of a trace's prompt tokens, and of its prefill FLOP, that a cache of ``capacity_tokens`` saves.

    Each request's hit is its cached prefix at that capacity
    (:meth:`StackDistances.request_hit_tokens`), costed by
    :func:`helpers.llm.prefill_flops_saved`. One prompt's saved FLOP share is
    below its hit share (:func:`prompt_saved_fraction`), but a cached token of
    a long prefix saves more FLOP than one of a short prefix, so over a trace
    the FLOP share can come out above or below the token share.

    Parameters
    ----------
    trace : Trace
    model : str or ModelConfig
    capacity_tokens : float
        Cache capacity, tokens (``math.inf`` for an unlimited cache).
    distances : StackDistances, optional
        ``stack_distances(trace)``, if already computed (it is otherwise computed here).

    Returns
    -------
    PrefillSaving
    """
    t = _check_trace(trace)
    sd = stack_distances(t) if distances is None else distances
    if not isinstance(sd, StackDistances) or sd.n_requests != t.n_requests:
        raise ValueError(
            "distances must be the StackDistances of trace (same number of requests)"
        )
    hits = sd.request_hit_tokens(capacity_tokens)
    saved = llm.prefill_flops_saved(model, hits).sum()
    return PrefillSaving(
        token_fraction=float(hits.sum() / t.input_tokens),
        flop_fraction=float(saved / _trace_prefill_flops(t, model)),
    )


__getattr__ = forwarder(__name__)

__all__ = [
    "CacheStats",
    "PrefillSaving",
    "StackDistances",
    "capacity_for_fraction",
    "hit_rate_curve",
    "hit_rate_definitions",
    "prefill_saving",
    "prompt_saved_fraction",
    "simulate_prefix_cache",
    "stack_distances",
    "tier_hit_fractions",
]
