"""Tests for :mod:`helpers.routing`: one prefix cache per node, routed as Mooncake's scheduler does, against one pooled cache."""

from __future__ import annotations

import math

import numpy as np
import pytest
from toy_traces import make_trace

from helpers import cachesim as cs
from helpers import llm, routing
from helpers import traces as tr


def test_local_vs_global_by_hand():
    """Two nodes of one block each; requests [a], [b], [a], [b] arrive far apart.

    Cache-aware routing with idle nodes and no hit: every estimate is equal, the
    first node wins, so all four go to node 0, whose one block is always the other
    id: no hits. Round-robin keeps a on node 0 and b on node 1, so the repeats hit:
    2 hits of 4 blocks. The pooled cache of 2 blocks holds both: the repeats hit too.
    """
    trace = make_trace([[0], [1], [0], [1]])
    trace = cs.Trace(
        name="t",
        arrival_s=np.array([0.0, 10.0, 20.0, 30.0]),
        input_lengths=trace.input_lengths,
        output_lengths=trace.output_lengths,
        block_ids=trace.block_ids,
        offsets=trace.offsets,
    )
    rr = routing.local_vs_global(
        trace, 2, 512, prefill_tokens_per_s=1e3, routing="round-robin"
    )
    assert rr.local_hit_rate == pytest.approx(0.5)
    assert rr.global_hit_rate == pytest.approx(0.5)
    assert rr.ratio == pytest.approx(1.0)
    assert rr.prefill_flops_ratio("llama-3-8b") == pytest.approx(1.0)
    aware = routing.local_vs_global(trace, 2, 512, prefill_tokens_per_s=1e3)
    # all idle and no hit for [b]: equal estimates, the first node wins and evicts a
    assert aware.local_hit_rate == pytest.approx(0.0)
    assert aware.load_imbalance == pytest.approx(2.0)
    assert aware.ratio == math.inf
    # local: all 4 prompts computed; pooled: 2 of them (the repeats hit whole)
    full = tr.trace_prefill_flops(trace, "llama-3-8b")
    saved = llm.prefill_flops_saved("llama-3-8b", [0, 0, 512, 512]).sum()
    assert aware.prefill_flops_ratio("llama-3-8b") == pytest.approx(
        (full - saved) / full
    )


def test_local_vs_global_one_node_is_the_lru_cache():
    """With one node, the local cache is the pooled cache: both equal the direct LRU replay."""
    trace = tr.load_trace("tiny")
    for cap in (512, 2048, 8192):
        one = routing.local_vs_global(trace, 1, cap, prefill_tokens_per_s=1e4)
        assert one.local_hit_rate == cs.simulate_prefix_cache(trace, cap).hit_rate
        assert one.global_hit_rate == one.local_hit_rate


def test_local_vs_global_bad_input():
    trace = tr.load_trace("tiny")
    with pytest.raises(ValueError, match="n_nodes"):
        routing.local_vs_global(trace, 0, 512, prefill_tokens_per_s=1.0)
    with pytest.raises(ValueError, match="prefill_tokens_per_s"):
        routing.local_vs_global(trace, 2, 512, prefill_tokens_per_s=0.0)
    with pytest.raises(ValueError, match="routing"):
        routing.local_vs_global(
            trace, 2, 512, prefill_tokens_per_s=1.0, routing="random"
        )
    other = cs.stack_distances(make_trace([[0, 1]]))
    with pytest.raises(ValueError, match="distances"):
        routing.local_vs_global(
            trace, 2, 512, prefill_tokens_per_s=1.0, distances=other
        )
    given_sd = routing.local_vs_global(
        trace, 2, 1024, prefill_tokens_per_s=1.0, distances=cs.stack_distances(trace)
    )
    assert (
        given_sd.global_hit_rate
        == routing.local_vs_global(
            trace, 2, 1024, prefill_tokens_per_s=1.0
        ).global_hit_rate
    )


def _timed_trace(requests: list[list[int]], arrival_s: list[float]) -> cs.Trace:
    base = make_trace(requests)
    return tr.Trace(
        name="timed",
        arrival_s=np.asarray(arrival_s),
        input_lengths=base.input_lengths,
        output_lengths=base.output_lengths,
        block_ids=base.block_ids,
        offsets=base.offsets,
    )


def test_a_tie_goes_to_the_lowest_numbered_node():
    """Two nodes of one block each, 512-token prompts prefilled at 1,000 tokens/s (0.512 s each).

    [a] at 0 s: both idle, no hit, tie -> node 0 (busy until 0.512 s).
    [b] at 0 s: node 0 would answer at 0.512 + 0.512 = 1.024 s, node 1 at 0.512 s -> node 1.
    [c] at 100 s: both idle, no hit (node 0 holds a, node 1 holds b): a tie -> node 0, evicting a.
    [b] at 200 s: node 1 still holds b: TTFT 0 s against 0.512 s -> node 1, a 512-token hit.
    Local hit rate 512 / 2,048 = 0.25, 1,024 prompt tokens per node (imbalance 1). The hit
    rate alone cannot tell the tie rule (renumbering the nodes mirrors a last-node rule onto
    this one), so the test reads where each request went: nodes 0, 1, 0, 1.
    """
    trace = _timed_trace([[0], [1], [2], [1]], [0.0, 0.0, 100.0, 200.0])
    result = routing.local_vs_global(trace, 2, 512, prefill_tokens_per_s=1e3)
    assert result.nodes.tolist() == [0, 1, 0, 1]
    assert result.local_hit_tokens.tolist() == [0, 0, 0, 512]
    assert result.local_hit_rate == pytest.approx(0.25)
    assert result.load_imbalance == pytest.approx(1.0)


def test_local_vs_global_reads_arrivals_in_seconds():
    """Arrival times are seconds: [a], [a] on two nodes 0.1 s apart, prefill 0.512 s each.

    The second [a] arrives while node 0 (which holds a) is busy for 0.412 s more; its TTFT
    there is 0.412 + 0 s (a whole hit) against 0.512 s on idle node 1: node 0 wins, a hit.
    Read as milliseconds (0.0001 s apart) the answer would be the same node but with a
    0.5119 s wait, still under 0.512 s; at 1 s apart node 0 is idle again. So the hit
    holds at 0.1 s and the load sits on one node (imbalance 2).
    """
    trace = _timed_trace([[0], [0]], [0.0, 0.1])
    result = routing.local_vs_global(trace, 2, 512, prefill_tokens_per_s=1e3)
    assert result.local_hit_tokens.tolist() == [0, 512]
    assert result.load_imbalance == pytest.approx(2.0)


def _routed(trace, local_hits, global_hits):
    """A LocalGlobal with chosen hits (Fig. 10's shape: 10 nodes of 3 M tokens)."""
    return routing.LocalGlobal(
        trace=trace,
        n_nodes=10,
        capacity_tokens=3e6,
        local_hit_rate=float(np.sum(local_hits)) / trace.input_tokens,
        global_hit_rate=float(np.sum(global_hits)) / trace.input_tokens,
        load_imbalance=1.0,
        local_hit_tokens=np.asarray(local_hits),
        global_hit_tokens=np.asarray(global_hits),
        nodes=np.zeros(trace.n_requests, dtype=np.int64),
    )


def test_paper_comparison_brackets_fig10_or_says_it_does_not():
    """Both branches of Fig. 10's verdict, on the tiny trace standing in for "conversation"
    (paper: global / local hit rate 2.22, prefill time 0.76).

    Bracketed: pooled, every prompt hits whole; round-robin's local caches never hit (ratio inf,
    prefill left with pooling only the lm_heads: near 0 of the local prefill) and cache-aware's
    hit as much as the pool (ratio 1, prefill ratio 1). 1 <= 2.22 <= inf and ~0 <= 0.76 <= 1.
    Not bracketed: both routings hit as much as the pool: ratios 1 and 1, and 2.22 is outside.
    """
    trace = tr.load_trace("tiny")
    sd = {"conversation": cs.stack_distances(trace)}
    everything = trace.input_lengths
    none = np.zeros(trace.n_requests, dtype=np.int64)
    inside = routing.paper_comparison(
        sd,
        {
            ("conversation", "round-robin"): _routed(trace, none, everything),
            ("conversation", "cache-aware"): _routed(trace, everything, everything),
        },
        "llama-3-70b",
    )
    assert inside.bracketed == {"conversation": True}
    assert [r[3] for r in inside.rows[3:]] == ["paper between the two"] * 2
    assert inside.rows[0][1] == "40%" and inside.rows[3][1] == "2.22x"
    assert len(inside.rows) == 5 and 0 <= inside.largest_gap <= 1
    outside = routing.paper_comparison(
        sd,
        {
            ("conversation", "round-robin"): _routed(trace, everything, everything),
            ("conversation", "cache-aware"): _routed(trace, everything, everything),
        },
        "llama-3-70b",
    )
    assert outside.bracketed == {"conversation": False}
    assert [r[3] for r in outside.rows[3:]] == ["outside the bracket"] * 2
    assert (
        outside.rows[:3] == inside.rows[:3]
    )  # Table 2 and Fig. 9 do not depend on routing
