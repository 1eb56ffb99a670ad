"""Routing a trace over several prefill nodes, each with its own prefix cache, against one pooled cache.

Mooncake's scheduler (FAST'25, Algorithm 1, without transfers) sends each
request to the node with the earliest estimated first token; this module
replays a trace under that rule, or round-robin, with the prefix cache of
:mod:`helpers.cachesim` on every node, and sets the result beside one cache
pooled across the nodes (the paper's Fig. 10).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import _validate, llm
from .cachesim import (
    StackDistances,
    _capacity_blocks,
    _group,
    _PrefixLRU,
    stack_distances,
)
from .traces import TRACE_BLOCK_TOKENS, Trace, check_trace, trace_prefill_flops


@dataclass(frozen=True, eq=False)
class LocalGlobal:
    """Hit rates of ``n_nodes`` separate caches against one cache pooled across them.

    Attributes
    ----------
    trace : Trace
        The replayed trace.
    n_nodes : int
    capacity_tokens : float
        Cache per node, tokens.
    local_hit_rate : float
        Token-weighted hit rate when each node reads only its own cache.
    global_hit_rate : float
        Token-weighted hit rate of one LRU cache of ``n_nodes * capacity_tokens``.
    load_imbalance : float
        Prompt tokens sent to the busiest node ÷ the mean per node (1 = even),
        under the local routing.
    local_hit_tokens, global_hit_tokens : numpy.ndarray of int64, shape (n_requests,)
        Each request's prompt tokens served from the cache, local and pooled.
    nodes : numpy.ndarray of int64, shape (n_requests,)
        The node each request was sent to under the local routing (0 to ``n_nodes - 1``).
    """

    trace: Trace
    n_nodes: int
    capacity_tokens: float
    local_hit_rate: float
    global_hit_rate: float
    load_imbalance: float
    local_hit_tokens: np.ndarray
    global_hit_tokens: np.ndarray
    nodes: np.ndarray

    def prefill_flops_ratio(self, model: str | llm.ModelConfig) -> float:
        """Prefill FLOP left to compute with the pooled cache ÷ with the local caches (< 1: pooling saves).

        Both are :func:`helpers.traces.trace_prefill_flops` less :func:`helpers.llm.prefill_flops_saved`
        by each request's hit; at a fixed FLOP/s the same ratio holds for prefill GPU time.
        """
        total = trace_prefill_flops(self.trace, model)
        left_global = (
            total - llm.prefill_flops_saved(model, self.global_hit_tokens).sum()
        )
        left_local = total - llm.prefill_flops_saved(model, self.local_hit_tokens).sum()
        return float(left_global / left_local)

    @property
    def ratio(self) -> float:
        """``global_hit_rate / local_hit_rate`` (``inf`` if the local caches never hit)."""
        if self.local_hit_rate == 0:
            return math.inf
        return self.global_hit_rate / self.local_hit_rate


def local_vs_global(
    trace: Trace,
    n_nodes: int,
    capacity_tokens: float,
    *,
    prefill_tokens_per_s: float,
    routing: str = "cache-aware",
    block_tokens: int = TRACE_BLOCK_TOKENS,
    distances: StackDistances | None = None,
) -> LocalGlobal:
    """Replay ``trace`` over ``n_nodes`` nodes, each with a private LRU prefix cache, and pooled.

    Local: each request goes to the node with the earliest estimated first
    token, ``queue + (prompt - cached prefix) / prefill_tokens_per_s``, the
    rule of Mooncake's scheduler (FAST'25, Algorithm 1, without transfers):
    a node that holds a longer prefix wins unless its queue outweighs the
    prefill it saves; ties go to the lowest-numbered node. Each node
    prefills one request at a time at ``prefill_tokens_per_s``, starting
    at the request's arrival (``trace.arrival_s``) or when its previous one
    ends. With ``routing="round-robin"`` request ``i`` goes to node
    ``i % n_nodes`` instead, blind to caches and load. The node serves the hit from its own cache and then holds all the
    request's blocks (touched last block first, LRU, as in
    :func:`helpers.cachesim.simulate_prefix_cache`). Global: one LRU cache of
    ``n_nodes * capacity_tokens`` that every node reads
    (:func:`helpers.cachesim.hit_rate_curve`), transfers not modelled.

    Parameters
    ----------
    trace : Trace
    n_nodes : int
        Nodes, >= 1.
    capacity_tokens : float
        Cache per node, tokens, > 0.
    prefill_tokens_per_s : float
        Prompt tokens one node prefills per second, > 0: sets how much load
        the routing weighs against cache affinity.
    routing : {"cache-aware", "round-robin"}
    block_tokens : int
        Tokens per block, a multiple of the trace's.
    distances : StackDistances, optional
        ``stack_distances(trace, block_tokens=block_tokens)`` if already
        computed (saves recomputing it for the pooled cache).

    Returns
    -------
    LocalGlobal
    """
    trace = check_trace(trace)
    n_nodes = _validate.positive_int("n_nodes", n_nodes)
    rate = _validate.positive("prefill_tokens_per_s", prefill_tokens_per_s)
    routing = _validate.name("routing", routing)
    if routing not in ("cache-aware", "round-robin"):
        raise ValueError(
            f"routing {routing!r} is not supported; choose 'cache-aware' or 'round-robin'"
        )
    block_tokens, ids, offsets = _group(trace, block_tokens)
    capacity = _capacity_blocks("capacity_tokens", capacity_tokens, block_tokens)
    lengths = trace.input_lengths.tolist()
    arrivals = trace.arrival_s.tolist()
    ids_list = ids.tolist()
    off = offsets.tolist()
    caches = [_PrefixLRU(capacity) for _ in range(n_nodes)]
    free_at = [0.0] * n_nodes  # s, when each node finishes its queue
    load = [0] * n_nodes
    hits = np.zeros(trace.n_requests, dtype=np.int64)
    sent_to = np.zeros(trace.n_requests, dtype=np.int64)
    for r in range(trace.n_requests):
        blocks = ids_list[off[r] : off[r + 1]]
        now, length = arrivals[r], lengths[r]
        best, best_ttft, best_hit = 0, math.inf, 0
        nodes = range(n_nodes) if routing == "cache-aware" else (r % n_nodes,)
        for node in nodes:  # in node order, and only a strictly earlier TTFT wins a tie
            hit = min(caches[node].hit(blocks) * block_tokens, length)
            ttft = max(free_at[node] - now, 0.0) + (length - hit) / rate
            if ttft < best_ttft:
                best, best_ttft, best_hit = node, ttft, hit
        hits[r], sent_to[r] = best_hit, best
        load[best] += length
        free_at[best] = now + best_ttft
        caches[best].touch(blocks)
    pooled = n_nodes * float(capacity_tokens)
    if distances is None:
        distances = stack_distances(trace, block_tokens=block_tokens)
    elif (
        not isinstance(distances, StackDistances)
        or distances.block_tokens != block_tokens
        or distances.n_requests != trace.n_requests
        or distances.input_tokens != trace.input_tokens
    ):
        raise ValueError(
            "distances must be stack_distances(trace, block_tokens=block_tokens) of this trace"
        )
    global_hits = distances.request_hit_tokens(pooled)
    return LocalGlobal(
        trace=trace,
        n_nodes=n_nodes,
        capacity_tokens=float(capacity_tokens),
        local_hit_rate=float(hits.sum()) / trace.input_tokens,
        global_hit_rate=float(global_hits.sum()) / trace.input_tokens,
        load_imbalance=max(load) / (sum(load) / n_nodes),
        local_hit_tokens=hits,
        global_hit_tokens=global_hits,
        nodes=sent_to,
    )


__all__ = ["LocalGlobal", "local_vs_global"]
