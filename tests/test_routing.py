"""Tests for :mod:`helpers.routing`: one prefix cache per node, routed as Mooncake's scheduler does, against one pooled cache."""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_array_equal
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


# Copy-on-route replication (replicated_routing).
# Tests for :func:`helpers.routing.replicated_routing`: cache-aware routing with copy-on-route replication.
#
# Hand examples derive each request's node and tokens in the docstring; with copying off, the replay must equal
# :func:`helpers.routing.local_vs_global`'s cache-aware routing request by request (Mooncake FAST'25, Algorithm 1).

REAL = Path(os.environ.get("MOONCAKE_TRACES", "/nonexistent"))


def make_timed_trace(requests, times_ms, lengths):
    offsets = np.concatenate([[0], np.cumsum([len(ids) for ids in requests])])
    return tr.Trace(
        name="hand",
        arrival_s=np.asarray(times_ms) / 1e3,
        input_lengths=np.asarray(lengths),
        output_lengths=np.ones(len(requests), dtype=np.int64),
        block_ids=np.asarray([b for ids in requests for b in ids], dtype=np.int64),
        offsets=offsets,
    )


HAND = make_timed_trace(
    [[1, 2], [1, 2, 3], [1, 2, 3]], [0, 0, 10_000], [1024, 1536, 1536]
)


def test_copy_moves_a_hot_prefix_to_an_idle_node_by_hand():
    """Two nodes, 512 tokens/s each. Request 0 (1,024 tokens, blocks 1-2) goes to node 0, busy until t = 2 s.
    Request 1 (t = 0, 1,536 tokens, blocks 1-3): node 0 finishes at 2 + 512/512 = 3 s; node 1 without copying
    also at 1536/512 = 3 s (tie: node 0, 1,024 tokens local); with free copies node 1 finishes at 512/512 = 1 s,
    so it goes there with 1,024 tokens copied. Request 2 (t = 10 s, blocks 1-3), both idle: with free copies
    node 0 (1,024 local + 512 copied) ties node 1 and wins; without, node 0 holds all three blocks (1,536 local).
    Load: with copies 2,560 and 1,536 tokens (imbalance 2560 / 2048 = 1.25); without, all 4,096 on node 0 (2.0)."""
    copy = routing.replicated_routing(
        HAND, 2, 4096, prefill_tokens_per_s=512, transfer_tokens_per_s=math.inf
    )
    assert_array_equal(copy.local_hit_tokens, [0, 0, 1024])
    assert_array_equal(copy.copied_tokens, [0, 1024, 512])
    assert copy.load_imbalance == pytest.approx(2560 / 2048)
    none = routing.replicated_routing(
        HAND, 2, 4096, prefill_tokens_per_s=512, transfer_tokens_per_s=0
    )
    assert_array_equal(none.local_hit_tokens, [0, 1024, 1536])
    assert_array_equal(none.copied_tokens, [0, 0, 0])
    assert none.load_imbalance == pytest.approx(2.0)
    assert copy.reuse_rate == pytest.approx((1024 + 1536) / 4096)
    assert none.reuse_rate == pytest.approx((1024 + 1536) / 4096)


def test_slow_copies_are_not_worth_it_by_hand():
    """At 256 tokens/s of copying, node 1 would need 1024/256 = 4 s of copy + 1 s of prefill = 5 s > 3 s: no copy."""
    slow = routing.replicated_routing(
        HAND, 2, 4096, prefill_tokens_per_s=512, transfer_tokens_per_s=256
    )
    assert_array_equal(slow.copied_tokens, [0, 0, 0])


def test_without_copies_equals_cache_aware_local_routing():
    """transfer_tokens_per_s = 0 is local_vs_global's cache-aware rule, request by request (tiny trace)."""
    tiny = tr.load_trace("tiny")
    ours = routing.replicated_routing(
        tiny, 3, 2048, prefill_tokens_per_s=2000, transfer_tokens_per_s=0
    )
    theirs = routing.local_vs_global(tiny, 3, 2048, prefill_tokens_per_s=2000)
    assert_array_equal(ours.local_hit_tokens, theirs.local_hit_tokens)
    assert ours.load_imbalance == pytest.approx(theirs.load_imbalance)


@pytest.mark.slow  # replays the real conversation trace (conftest: real traces are slow)
@pytest.mark.skipif(
    not (REAL / "conversation_trace.jsonl").is_file(), reason="needs MOONCAKE_TRACES"
)
def test_conversation_trace_copies_raise_reuse_toward_the_pool():
    """Ten nodes of 3 M tokens: free copies reuse at least what local cache-aware routing reuses, and no more
    than the trace's infinite-cache ceiling (37.4 %, chapter ``disaggregated_memory``)."""
    trace = tr.load_trace("conversation")
    rate = 16_348.0  # tokens/s: chapter ``disaggregated_memory``'s node rate, Llama-3-70B at peak on 8 x A800, no communication
    base = routing.replicated_routing(
        trace, 10, 3e6, prefill_tokens_per_s=rate, transfer_tokens_per_s=0
    )
    free = routing.replicated_routing(
        trace, 10, 3e6, prefill_tokens_per_s=rate, transfer_tokens_per_s=math.inf
    )
    top = cs.hit_rate_curve(cs.stack_distances(trace), [math.inf])[0]
    assert base.reuse_rate <= free.reuse_rate <= top


def test_bad_input_named():
    """Every numeric parameter names itself."""
    with pytest.raises(ValueError, match="n_nodes"):
        routing.replicated_routing(
            HAND, 0, 4096, prefill_tokens_per_s=1, transfer_tokens_per_s=1
        )
    with pytest.raises(ValueError, match="capacity_tokens"):
        routing.replicated_routing(
            HAND, 2, 0, prefill_tokens_per_s=1, transfer_tokens_per_s=1
        )
    with pytest.raises(ValueError, match="prefill_tokens_per_s"):
        routing.replicated_routing(
            HAND, 2, 4096, prefill_tokens_per_s=0, transfer_tokens_per_s=1
        )
    with pytest.raises(ValueError, match="transfer_tokens_per_s"):
        routing.replicated_routing(
            HAND, 2, 4096, prefill_tokens_per_s=1, transfer_tokens_per_s=-1
        )
    with pytest.raises(TypeError, match="trace"):
        routing.replicated_routing(
            [], 2, 4096, prefill_tokens_per_s=1, transfer_tokens_per_s=1
        )
