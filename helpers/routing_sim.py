"""Routing with hot-block replication: a busy node's cached prefix is copied to an idle node.

:func:`helpers.cachesim.local_vs_global` routes each request to the node with
the earliest estimated first token, serving hits from that node's own cache
only. Mooncake's scheduler can also *copy* a prefix: when the node that holds
the longest prefix is busy, the request goes to another node and the blocks it
lacks are transferred there first, so hot prefixes end up replicated on
several nodes (Qin et al., FAST'25, Algorithm 1 and §6.2, Fig. 11). This
module replays a trace with that choice added:

* for every node, the reusable prefix is the longest prefix held *anywhere*
  (``k_best`` blocks): its own ``k_node`` blocks are read locally and the
  other ``k_best - k_node`` are copied in at ``transfer_tokens_per_s``;
* the estimated first token on the node is
  ``queue + (prompt - reused) / prefill_tokens_per_s + copied / transfer_tokens_per_s``,
  and the request goes to the node where it is earliest (ties: lowest index);
* the chosen node then holds all the request's blocks (touched last block
  first, LRU), the copied ones included: that is the replication.

With ``transfer_tokens_per_s=0`` nothing is copied and the routing is
:func:`~helpers.cachesim.local_vs_global`'s cache-aware rule.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from . import _validate
from .cachesim import Trace

__all__ = ["ReplicatedRouting", "replicated_routing"]


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
        From :func:`helpers.cachesim.load_trace` (512-token blocks).
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
            f"trace must be a Trace (from cachesim.load_trace), got {type(trace).__name__}"
        )
    n_nodes = _validate.positive_int("n_nodes", n_nodes)
    capacity = math.floor(
        _validate.positive("capacity_tokens", capacity_tokens) / trace.block_tokens
    )
    rate = _validate.positive("prefill_tokens_per_s", prefill_tokens_per_s)
    copy_rate = float(transfer_tokens_per_s)
    if not copy_rate >= 0:
        raise ValueError(
            f"transfer_tokens_per_s must be >= 0, got {transfer_tokens_per_s!r}"
        )
    block = trace.block_tokens
    ids = trace.block_ids.tolist()
    off = trace.offsets.tolist()
    lengths = trace.input_lengths.tolist()
    arrivals = (trace.timestamps / 1e3).tolist()  # s
    caches: list[OrderedDict[int, None]] = [OrderedDict() for _ in range(n_nodes)]
    free_at = [0.0] * n_nodes
    load = [0] * n_nodes
    local = np.zeros(trace.n_requests, dtype=np.int64)
    copied = np.zeros(trace.n_requests, dtype=np.int64)
    for r in range(trace.n_requests):
        blocks = ids[off[r] : off[r + 1]]
        now, length = arrivals[r], lengths[r]
        held = []
        for cache in caches:
            k = 0
            for b in blocks:
                if b not in cache:
                    break
                k += 1
            held.append(min(k * block, length))
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
        cache = caches[choice]
        for b in reversed(blocks):
            if b in cache:
                cache.move_to_end(b)
            else:
                cache[b] = None
        while len(cache) > capacity:
            cache.popitem(last=False)
    return ReplicatedRouting(
        local_hit_tokens=local,
        copied_tokens=copied,
        input_tokens=trace.input_tokens,
        load_imbalance=max(load) / (sum(load) / n_nodes),
    )
