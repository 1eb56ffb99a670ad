"""Tests for :mod:`helpers.routing_sim`: cache-aware routing with copy-on-route replication.

Hand examples derive each request's node and tokens in the docstring; with copying off, the replay must equal
:func:`helpers.cachesim.local_vs_global`'s cache-aware routing request by request (Mooncake FAST'25, Algorithm 1).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from helpers import cachesim as cs
from helpers import routing_sim

REAL = Path(os.environ.get("MOONCAKE_TRACES", "/nonexistent"))


def make_trace(requests, times_ms, lengths):
    offsets = np.concatenate([[0], np.cumsum([len(ids) for ids in requests])])
    return cs.Trace(
        name="hand",
        timestamps=np.asarray(times_ms),
        input_lengths=np.asarray(lengths),
        output_lengths=np.ones(len(requests), dtype=np.int64),
        block_ids=np.asarray([b for ids in requests for b in ids], dtype=np.int64),
        offsets=offsets,
    )


HAND = make_trace([[1, 2], [1, 2, 3], [1, 2, 3]], [0, 0, 10_000], [1024, 1536, 1536])


def test_copy_moves_a_hot_prefix_to_an_idle_node_by_hand():
    """Two nodes, 512 tokens/s each. Request 0 (1,024 tokens, blocks 1-2) goes to node 0, busy until t = 2 s.
    Request 1 (t = 0, 1,536 tokens, blocks 1-3): node 0 finishes at 2 + 512/512 = 3 s; node 1 without copying
    also at 1536/512 = 3 s (tie: node 0, 1,024 tokens local); with free copies node 1 finishes at 512/512 = 1 s,
    so it goes there with 1,024 tokens copied. Request 2 (t = 10 s, blocks 1-3), both idle: with free copies
    node 0 (1,024 local + 512 copied) ties node 1 and wins; without, node 0 holds all three blocks (1,536 local).
    Load: with copies 2,560 and 1,536 tokens (imbalance 2560 / 2048 = 1.25); without, all 4,096 on node 0 (2.0)."""
    copy = routing_sim.replicated_routing(
        HAND, 2, 4096, prefill_tokens_per_s=512, transfer_tokens_per_s=math.inf
    )
    assert_array_equal(copy.local_hit_tokens, [0, 0, 1024])
    assert_array_equal(copy.copied_tokens, [0, 1024, 512])
    assert copy.load_imbalance == pytest.approx(2560 / 2048)
    none = routing_sim.replicated_routing(
        HAND, 2, 4096, prefill_tokens_per_s=512, transfer_tokens_per_s=0
    )
    assert_array_equal(none.local_hit_tokens, [0, 1024, 1536])
    assert_array_equal(none.copied_tokens, [0, 0, 0])
    assert none.load_imbalance == pytest.approx(2.0)
    assert copy.reuse_rate == pytest.approx((1024 + 1536) / 4096)
    assert none.reuse_rate == pytest.approx((1024 + 1536) / 4096)


def test_slow_copies_are_not_worth_it_by_hand():
    """At 256 tokens/s of copying, node 1 would need 1024/256 = 4 s of copy + 1 s of prefill = 5 s > 3 s: no copy."""
    slow = routing_sim.replicated_routing(
        HAND, 2, 4096, prefill_tokens_per_s=512, transfer_tokens_per_s=256
    )
    assert_array_equal(slow.copied_tokens, [0, 0, 0])


def test_without_copies_equals_cache_aware_local_routing():
    """transfer_tokens_per_s = 0 is local_vs_global's cache-aware rule, request by request (tiny trace)."""
    tiny = cs.load_trace("tiny")
    ours = routing_sim.replicated_routing(
        tiny, 3, 2048, prefill_tokens_per_s=2000, transfer_tokens_per_s=0
    )
    theirs = cs.local_vs_global(tiny, 3, 2048, prefill_tokens_per_s=2000)
    assert_array_equal(ours.local_hit_tokens, theirs.local_hit_tokens)
    assert ours.load_imbalance == pytest.approx(theirs.load_imbalance)


@pytest.mark.skipif(
    not (REAL / "conversation_trace.jsonl").is_file(), reason="needs MOONCAKE_TRACES"
)
def test_conversation_trace_copies_raise_reuse_toward_the_pool():
    """Ten nodes of 3 M tokens: free copies reuse at least what local cache-aware routing reuses, and no more
    than the trace's infinite-cache ceiling (37.4 %, chapter 7)."""
    trace = cs.load_trace("conversation")
    rate = 16_348.0  # tokens/s: chapter 7's node rate, Llama-3-70B at peak on 8 x A800, no communication
    base = routing_sim.replicated_routing(
        trace, 10, 3e6, prefill_tokens_per_s=rate, transfer_tokens_per_s=0
    )
    free = routing_sim.replicated_routing(
        trace, 10, 3e6, prefill_tokens_per_s=rate, transfer_tokens_per_s=math.inf
    )
    top = cs.hit_rate_curve(cs.stack_distances(trace), [math.inf])[0]
    assert base.reuse_rate <= free.reuse_rate <= top


def test_bad_input_named():
    """Every numeric parameter names itself."""
    with pytest.raises(ValueError, match="n_nodes"):
        routing_sim.replicated_routing(
            HAND, 0, 4096, prefill_tokens_per_s=1, transfer_tokens_per_s=1
        )
    with pytest.raises(ValueError, match="capacity_tokens"):
        routing_sim.replicated_routing(
            HAND, 2, 0, prefill_tokens_per_s=1, transfer_tokens_per_s=1
        )
    with pytest.raises(ValueError, match="prefill_tokens_per_s"):
        routing_sim.replicated_routing(
            HAND, 2, 4096, prefill_tokens_per_s=0, transfer_tokens_per_s=1
        )
    with pytest.raises(ValueError, match="transfer_tokens_per_s"):
        routing_sim.replicated_routing(
            HAND, 2, 4096, prefill_tokens_per_s=1, transfer_tokens_per_s=-1
        )
    with pytest.raises(TypeError, match="trace"):
        routing_sim.replicated_routing(
            [], 2, 4096, prefill_tokens_per_s=1, transfer_tokens_per_s=1
        )
