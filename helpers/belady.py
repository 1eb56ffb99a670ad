"""Bélády's optimal replacement for a prefix KV cache: the hit rate no eviction policy can beat.

LRU (:mod:`helpers.cachesim`) evicts the block used longest ago. With the
whole trace known in advance, Bélády's rule (Bélády 1966, "MIN") evicts the
block whose **next use is farthest in the future**; on a sequence of
references with unit-size blocks it makes the fewest misses of any policy
(Mattson et al. 1970 prove it optimal). No real cache knows the future, so
the result is a *bound*: the headroom any smarter policy (LFU, reference-count
pinning as in vLLM's automatic prefix caching or SGLang's RadixAttention,
learned policies) could at most recover over LRU at the same capacity.

Cache model (the one of :mod:`helpers.cachesim`, with the freedom an optimal
policy needs):

* the cache holds at most ``floor(capacity_tokens / block_tokens)`` blocks;
* a request hits the longest prefix of its blocks present when it arrives;
* after the request, the cache keeps, out of what it held and the request's
  blocks, those whose next use comes soonest: blocks never used again are
  dropped first (a block may be used without being kept, "bypass"), and
  among blocks next used by the same request the deeper one (later in the
  prompt) goes first.

The Mooncake traces' ``hash_ids`` are prefix hashes: a block id always
follows the same id (checked on both open traces). Then a block's parent is
next used no later than the block, so the tie rule keeps every cached block's
parent and the cache is always a union of prefixes: a present block is a
hit. The rule then maximises hit *blocks*; the token hit rate differs from
the block one only through each prompt's partial last block.

References
----------
Bélády (1966), "A study of replacement algorithms for a virtual-storage
computer", IBM Systems Journal 5(2). Mattson, Gecsei, Slutz, Traiger (1970),
"Evaluation techniques for storage hierarchies", IBM Systems Journal 9(2).
"""

from __future__ import annotations

import heapq

import numpy as np

from . import _args
from ._prefix_cache import capacity_blocks
from .cachesim import CacheStats
from .traces import Trace

__all__ = ["next_use", "simulate", "hit_rate_curve"]

_NEVER = np.iinfo(np.int64).max


def _check(trace: object, block_tokens: object) -> Trace:
    if not isinstance(trace, Trace):
        raise TypeError(
            f"trace must be a Trace (from traces.load_trace), got {type(trace).__name__}"
        )
    block_tokens = _args.positive_int("block_tokens", block_tokens)
    if block_tokens != trace.block_tokens:
        raise ValueError(
            f"block_tokens must be the trace's own block size, {trace.block_tokens}, got {block_tokens}"
        )
    return trace


def next_use(trace: Trace) -> np.ndarray:
    """Index of the next request that references each block reference's id.

    Parameters
    ----------
    trace : Trace

    Returns
    -------
    numpy.ndarray of int64, shape (total blocks,)
        For position ``j`` of ``trace.block_ids`` (a block of request ``r``),
        the smallest request index ``r' > r`` whose blocks include the same
        id, or ``numpy.iinfo(numpy.int64).max`` if none does.
    """
    if not isinstance(trace, Trace):
        raise TypeError(
            f"trace must be a Trace (from traces.load_trace), got {type(trace).__name__}"
        )
    ids = trace.block_ids.tolist()
    off = trace.offsets.tolist()
    out = [_NEVER] * len(ids)
    later: dict[
        int, int
    ] = {}  # id -> the earliest request after the current one using it
    for r in range(trace.n_requests - 1, -1, -1):
        span = range(off[r], off[r + 1])
        for j in span:
            out[j] = later.get(ids[j], _NEVER)
        for j in span:
            later[ids[j]] = r
    return np.asarray(out, dtype=np.int64)


def simulate(
    trace: Trace, capacity_tokens: float, *, block_tokens: int | None = None
) -> CacheStats:
    """Replay ``trace`` through a prefix cache managed by Bélády's rule (see the module docstring).

    A max-heap keyed by (next use, depth) finds the block to evict in
    ``O(log n)``; stale heap entries (blocks used again since they were
    pushed) are skipped when popped. The full conversation trace (288,500
    block references) replays in about a second.

    Parameters
    ----------
    trace : Trace
        From :func:`helpers.traces.load_trace`.
    capacity_tokens : float
        Cache size in tokens, > 0 (``math.inf`` for unlimited).
    block_tokens : int, optional
        Tokens per block; must be the trace's own (512 for Mooncake).

    Returns
    -------
    helpers.cachesim.CacheStats
        ``hit_rate`` is token-weighted, ``block_hit_rate`` per block.
    """
    if block_tokens is None:
        block_tokens = trace.block_tokens if isinstance(trace, Trace) else 0
    trace = _check(trace, block_tokens)
    capacity = capacity_blocks("capacity_tokens", capacity_tokens, trace.block_tokens)
    ids = trace.block_ids.tolist()
    off = trace.offsets.tolist()
    nxt = next_use(trace).tolist()
    lengths = trace.input_lengths.tolist()
    cache: dict[int, tuple[int, int]] = {}  # id -> (next use, depth)
    heap: list[tuple[int, int, int]] = []  # (-next use, -depth, id)
    hit_tokens = np.empty(trace.n_requests, dtype=np.int64)
    hit_blocks = 0
    for r in range(trace.n_requests):
        start, stop = off[r], off[r + 1]
        k = 0
        for j in range(start, stop):
            if ids[j] not in cache:
                break
            k += 1
        hit_blocks += k
        hit_tokens[r] = min(k * trace.block_tokens, lengths[r])
        for j in range(start, stop):
            b, use, depth = ids[j], nxt[j], j - start
            if use == _NEVER:
                cache.pop(b, None)  # never used again: bypass
                continue
            cache[b] = (use, depth)
            heapq.heappush(heap, (-use, -depth, b))
        while len(cache) > capacity:
            use, depth, b = heapq.heappop(heap)
            if cache.get(b) == (-use, -depth):
                del cache[b]
    return CacheStats(
        capacity_tokens=float(capacity_tokens),
        block_tokens=trace.block_tokens,
        hit_tokens=hit_tokens,
        input_tokens=trace.input_tokens,
        hit_blocks=hit_blocks,
        total_blocks=len(ids),
    )


def hit_rate_curve(
    trace: Trace, capacities_tokens: object, *, block_tokens: int | None = None
) -> np.ndarray:
    """Token-weighted Bélády hit rate at each capacity (one :func:`simulate` per capacity).

    Unlike LRU, Bélády's rule has no inclusion property over capacities that
    one pass could exploit cheaply, so each capacity is a replay.

    Parameters
    ----------
    trace : Trace
    capacities_tokens : array_like of float
        Cache sizes in tokens, each > 0 (``math.inf`` allowed).
    block_tokens : int, optional
        The trace's own block size.
    """
    try:
        caps = np.atleast_1d(np.asarray(capacities_tokens, dtype=float))
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"capacities_tokens must be numbers, got {capacities_tokens!r}"
        ) from exc
    if caps.size == 0:
        raise ValueError("capacities_tokens must not be empty")
    return np.array(
        [
            simulate(trace, float(c), block_tokens=block_tokens).hit_rate
            for c in caps.tolist()
        ]
    )
