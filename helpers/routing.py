"""Routing a trace over several prefill nodes, each with its own prefix cache, against one pooled cache.

Mooncake's scheduler (FAST'25, Algorithm 1, without transfers) sends each
request to the node with the earliest estimated first token; this module
replays a trace under that rule, or round-robin, with the prefix cache of
:mod:`helpers.cachesim` on every node, and sets the result beside one cache
pooled across the nodes (the paper's Fig. 10).

Hot-block replication (:func:`replicated_routing`): :func:`local_vs_global`
serves hits from the chosen node's own cache only. Mooncake's scheduler can also
*copy* a prefix: when the node that holds
the longest prefix is busy, the request goes to another node and the blocks it
lacks are transferred there first, so hot prefixes end up replicated on
several nodes (Qin et al., FAST'25, Algorithm 1 and §6.2, Fig. 11).
:func:`replicated_routing` replays a trace with that choice added:

* for every node, the reusable prefix is the longest prefix held *anywhere*
  (``k_best`` blocks): its own ``k_node`` blocks are read locally and the
  other ``k_best - k_node`` are copied in at ``transfer_tokens_per_s``;
* the estimated first token on the node is
  ``queue + (prompt - reused) / prefill_tokens_per_s + copied / transfer_tokens_per_s``,
  and the request goes to the node where it is earliest (ties: lowest index);
* the chosen node then holds all the request's blocks (touched last block
  first, LRU), the copied ones included: that is the replication.

With ``transfer_tokens_per_s=0`` nothing is copied and the routing is
:func:`local_vs_global`'s cache-aware rule.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from . import _args, llm, papers
from ._prefix_cache import PrefixLRU, capacity_blocks, group_blocks
from .cachesim import (
    StackDistances,
    hit_rate_curve,
    hit_rate_definitions,
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
    n_nodes = _args.positive_int("n_nodes", n_nodes)
    rate = _args.positive("prefill_tokens_per_s", prefill_tokens_per_s)
    routing = _args.name("routing", routing)
    if routing not in ("cache-aware", "round-robin"):
        raise ValueError(
            f"routing {routing!r} is not supported; choose 'cache-aware' or 'round-robin'"
        )
    block_tokens, ids, offsets = group_blocks(trace, block_tokens)
    capacity = capacity_blocks("capacity_tokens", capacity_tokens, block_tokens)
    lengths = trace.input_lengths.tolist()
    arrivals = trace.arrival_s.tolist()
    ids_list = ids.tolist()
    off = offsets.tolist()
    caches = [PrefixLRU(capacity) for _ in range(n_nodes)]
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


# ---------------------------------------------------------------------------
# The paper's cache figures beside the book's replays
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class PaperComparison:
    """Mooncake's Table 2, Fig. 9 and Fig. 10 beside this module's replays of the same traces.

    Attributes
    ----------
    rows : list of list of str
        One row per figure and trace: quantity, the paper's value, the book's,
        the difference, and why they may differ (a table's body).
    largest_gap : float
        The largest gap, as a fraction, between the paper and the book over
        Table 2's cache ratio and Fig. 9's share at 3 M tokens.
    bracketed : dict of str to bool
        Per trace: whether both of Fig. 10's measured ratios (hit rate and
        prefill time, global over local) lie between the round-robin and the
        cache-aware replays.
    """

    rows: list[list[str]]
    largest_gap: float
    bracketed: dict[str, bool]


def _between(value: float, low: float, high: float) -> str:
    return "paper between the two" if low <= value <= high else "outside the bracket"


def paper_comparison(
    distances: Mapping[str, StackDistances],
    routed: Mapping[tuple[str, str], LocalGlobal],
    model: str | llm.ModelConfig,
) -> PaperComparison:
    """Set Mooncake's cache figures (:mod:`helpers.papers`) beside the book's replays.

    Parameters
    ----------
    distances : mapping of trace name to StackDistances
        Each trace's :func:`helpers.cachesim.stack_distances` at its own block size;
        the names are keys of :data:`helpers.papers.MOONCAKE_TABLE2`.
    routed : mapping of (trace name, routing) to LocalGlobal
        :func:`local_vs_global` of each trace with ``routing`` ``"round-robin"``
        and ``"cache-aware"``, at Fig. 10's setup.
    model : str or ModelConfig
        The model whose prefill FLOP stand in for Fig. 10's prefill GPU time.

    Returns
    -------
    PaperComparison
    """

    rows: list[list[str]] = []
    gaps: list[float] = []
    for name, sd in distances.items():
        at3, at50, top = hit_rate_curve(
            sd,
            [
                papers.MOONCAKE_FIG9_LOCAL_TOKENS,
                papers.MOONCAKE_FIG9_NEAR_MAX_TOKENS,
                math.inf,
            ],
        )
        paper = papers.MOONCAKE_TABLE2[name]["cache_ratio"]
        d = hit_rate_definitions(sd)
        rows.append(
            [
                f"Table 2 cache ratio, {name}",
                f"{paper:.0%}",
                f"{d['tokens']:.1%} ($H_\\infty$)",
                f"{100 * (d['tokens'] - paper):+.1f} pts",
                f"definition not given; blocks {d['blocks']:.1%}, full blocks "
                f"{d['full blocks']:.1%}, per-request mean {d['mean per request']:.1%}",
            ]
        )
        share = papers.MOONCAKE_FIG9_SHARE_AT_3M[name]
        gaps += [abs(at3 / top - share), abs(d["tokens"] - paper)]
        rows.append(
            [
                f"Fig. 9, {name}: hit rate at 3 M tokens ÷ maximum",
                f"{share:.0%}",
                f"{at3 / top:.1%}",
                f"{100 * (at3 / top - share):+.1f} pts",
                "labels rounded to 1 %; the paper's block size and hit definition are not stated",
            ]
        )
        rows.append(
            [
                f"Fig. 9, {name}: at 50 M tokens",
                '"nearly reaches" the maximum',
                f"{at50 / top:.1%}",
                "agrees",
                "50 M tokens hold almost every reused block",
            ]
        )
    bracketed: dict[str, bool] = {}
    for name in distances:
        rr, aware = routed[(name, "round-robin")], routed[(name, "cache-aware")]
        ratio = papers.MOONCAKE_FIG10_GLOBAL_OVER_LOCAL[name]
        rows.append(
            [
                f"Fig. 10, {name}: global ÷ local hit rate",
                f"{ratio:.2f}x",
                f"{rr.ratio:.2f}x (round-robin), {aware.ratio:.2f}x (cache-aware)",
                _between(ratio, aware.ratio, rr.ratio),
                f"local {rr.local_hit_rate:.1%} / {aware.local_hit_rate:.1%}, global "
                f"{rr.global_hit_rate:.1%}; routing decides the local hit rate",
            ]
        )
        t_ratio = papers.MOONCAKE_FIG10_PREFILL_TIME_RATIO[name]
        t_rr, t_aware = rr.prefill_flops_ratio(model), aware.prefill_flops_ratio(model)
        bracketed[name] = (
            aware.ratio <= ratio <= rr.ratio and t_rr <= t_ratio <= t_aware
        )
        rows.append(
            [
                f"Fig. 10, {name}: prefill time, global ÷ local",
                f"{t_ratio:.2f}",
                f"{t_rr:.2f} (round-robin), {t_aware:.2f} (cache-aware)",
                _between(t_ratio, t_rr, t_aware),
                "book: prefill FLOP left; paper: measured GPU time, with queueing and transfers",
            ]
        )
    return PaperComparison(rows, max(gaps), bracketed)


@dataclass(frozen=True, eq=False)
class ReplicatedRouting:
    """Outcome of :func:`replicated_routing`.

    Attributes
    ----------
    local_hit_tokens, copied_tokens : numpy.ndarray of int64, shape (n_requests,)
        Each request's prompt tokens read from its node's own cache, and copied from another node.
    input_tokens : int
        Prompt tokens of all requests.
    load_imbalance : float
        Prompt tokens sent to the busiest node ÷ the mean per node.
    """

    local_hit_tokens: np.ndarray
    copied_tokens: np.ndarray
    input_tokens: int
    load_imbalance: float

    @property
    def local_hit_rate(self) -> float:
        """Prompt tokens served from the chosen node's own cache ÷ all prompt tokens."""
        return float(self.local_hit_tokens.sum()) / self.input_tokens

    @property
    def reuse_rate(self) -> float:
        """Prompt tokens not recomputed (own cache or copied) ÷ all prompt tokens."""
        return (
            float(self.local_hit_tokens.sum() + self.copied_tokens.sum())
            / self.input_tokens
        )


def replicated_routing(
    trace: Trace,
    n_nodes: int,
    capacity_tokens: float,
    *,
    prefill_tokens_per_s: float,
    transfer_tokens_per_s: float,
) -> ReplicatedRouting:
    """Replay ``trace`` over ``n_nodes`` LRU prefix caches with copy-on-route (see the module docstring).

    Parameters
    ----------
    trace : Trace
        From :func:`helpers.traces.load_trace` (512-token blocks).
    n_nodes : int
        Nodes, >= 1.
    capacity_tokens : float
        Cache per node, tokens, > 0.
    prefill_tokens_per_s : float
        Prompt tokens one node prefills per second, > 0.
    transfer_tokens_per_s : float
        Tokens of KV cache one copy moves per second, >= 0 (0: never copy;
        ``math.inf``: copies are free). For a link of ``B`` bytes/s and a
        model of ``kv`` bytes per token it is ``B / kv``.

    Returns
    -------
    ReplicatedRouting
    """
    if not isinstance(trace, Trace):
        raise TypeError(
            f"trace must be a Trace (from traces.load_trace), got {type(trace).__name__}"
        )
    n_nodes = _args.positive_int("n_nodes", n_nodes)
    capacity = math.floor(
        _args.positive("capacity_tokens", capacity_tokens) / trace.block_tokens
    )
    rate = _args.positive("prefill_tokens_per_s", prefill_tokens_per_s)
    copy_rate = float(transfer_tokens_per_s)
    if not copy_rate >= 0:
        raise ValueError(
            f"transfer_tokens_per_s must be >= 0, got {transfer_tokens_per_s!r}"
        )
    block = trace.block_tokens
    ids = trace.block_ids.tolist()
    off = trace.offsets.tolist()
    lengths = trace.input_lengths.tolist()
    arrivals = trace.arrival_s.tolist()
    caches = [PrefixLRU(capacity) for _ in range(n_nodes)]
    free_at = [0.0] * n_nodes
    load = [0] * n_nodes
    local = np.zeros(trace.n_requests, dtype=np.int64)
    copied = np.zeros(trace.n_requests, dtype=np.int64)
    for r in range(trace.n_requests):
        blocks = ids[off[r] : off[r + 1]]
        now, length = arrivals[r], lengths[r]
        held = [min(cache.hit(blocks) * block, length) for cache in caches]
        best_hit = max(held)
        choice, best_ttft, choice_local, choice_copy = 0, math.inf, 0, 0
        for node in range(n_nodes):
            own = held[node]
            extra = best_hit - own if copy_rate > 0 else 0
            copy_s = extra / copy_rate if extra else 0.0
            ttft = (
                max(free_at[node] - now, 0.0) + (length - own - extra) / rate + copy_s
            )
            if ttft < best_ttft:
                choice, best_ttft, choice_local, choice_copy = node, ttft, own, extra
        local[r], copied[r] = choice_local, choice_copy
        load[choice] += length
        free_at[choice] = now + best_ttft
        caches[choice].touch(blocks)
    return ReplicatedRouting(
        local_hit_tokens=local,
        copied_tokens=copied,
        input_tokens=trace.input_tokens,
        load_imbalance=max(load) / (sum(load) / n_nodes),
    )


__all__ = [
    "LocalGlobal",
    "PaperComparison",
    "ReplicatedRouting",
    "local_vs_global",
    "paper_comparison",
    "replicated_routing",
]
