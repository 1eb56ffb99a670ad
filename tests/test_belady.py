"""Tests for :mod:`helpers.belady`: Bélády's optimal replacement for a prefix KV cache.

Expected values are derived by hand in each docstring, or by an exhaustive search over every
eviction choice (a dynamic programme over cache contents) on traces small enough to enumerate.
References: Bélády (1966); Mattson et al. (1970) for LRU's stack distances, the comparison.
"""

from __future__ import annotations

import itertools
import math
import os
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from helpers import belady, traces
from helpers import cachesim as cs

B = cs.TRACE_BLOCK_TOKENS
REAL = Path(os.environ.get("MOONCAKE_TRACES", "/nonexistent"))


def make_trace(requests: list[list[int]], lengths: list[int] | None = None) -> cs.Trace:
    """A trace of the given hash_ids; each prompt fills its blocks unless lengths are given."""
    n = len(requests)
    if lengths is None:
        lengths = [B * len(ids) for ids in requests]
    offsets = np.concatenate([[0], np.cumsum([len(ids) for ids in requests])])
    return cs.Trace(
        name="hand",
        arrival_s=np.arange(n) * 0.01,
        input_lengths=np.asarray(lengths),
        output_lengths=np.ones(n, dtype=np.int64),
        block_ids=np.asarray([b for ids in requests for b in ids], dtype=np.int64),
        offsets=offsets,
    )


def brute_force_hit_blocks(requests: list[list[int]], capacity: int) -> int:
    """Most prefix-hit blocks over every policy: after each request keep any <= capacity blocks of (cache + request)."""
    states = {frozenset(): 0}
    for ids in requests:
        nxt: dict[frozenset, int] = {}
        for state, score in states.items():
            k = 0
            for b in ids:
                if b not in state:
                    break
                k += 1
            pool = sorted(state | set(ids))
            for size in range(min(capacity, len(pool)) + 1):
                for keep in itertools.combinations(pool, size):
                    key = frozenset(keep)
                    if nxt.get(key, -1) < score + k:
                        nxt[key] = score + k
        states = nxt
    return max(states.values())


def test_bypass_beats_lru_by_hand():
    """[a], [b], [a] with one block: LRU lets b evict a (0 hits); the optimum keeps a and only uses b.

    Hit rate = 512 / (3 * 512) = 1/3.
    """
    trace = make_trace([[1], [2], [1]])
    opt = belady.simulate(trace, B)
    assert opt.hit_blocks == 1
    assert opt.hit_rate == pytest.approx(1 / 3)
    assert cs.simulate_prefix_cache(trace, B).hit_blocks == 0


def test_keeps_a_prefix_over_a_one_off_by_hand():
    """[a, b], [c], [a, b] with two blocks.

    LRU: after request 0 it holds {a, b} (a most recent); c evicts b, so request 2 hits a only: 1 block.
    Optimal: c is never used again, so it is not kept; request 2 hits a and b: 2 of 5 blocks.
    """
    trace = make_trace([[1, 2], [3], [1, 2]])
    opt = belady.simulate(trace, 2 * B)
    assert opt.hit_blocks == 2
    assert opt.block_hit_rate == pytest.approx(2 / 5)
    assert cs.simulate_prefix_cache(trace, 2 * B).hit_blocks == 1


def test_tie_keeps_the_parent_by_hand():
    """[a, b], [a, b] with one block: a and b are both next used by request 1; keeping b would hit nothing.

    The deeper block goes first, so a stays and request 1 hits 1 block.
    """
    trace = make_trace([[1, 2], [1, 2]])
    assert belady.simulate(trace, B).hit_blocks == 1


def test_partial_last_block_counts_its_tokens():
    """One 700-token prompt twice with unlimited capacity: 2 blocks hit, 700 tokens of 1,400."""
    trace = make_trace([[1, 2], [1, 2]], lengths=[700, 700])
    opt = belady.simulate(trace, math.inf)
    assert_array_equal(opt.hit_tokens, [0, 700])
    assert opt.hit_rate == pytest.approx(0.5)


def test_next_use_by_hand():
    """[a, b], [c, a], [a]: a's next uses are requests 1 then 2, b and c are never reused."""
    never = np.iinfo(np.int64).max
    trace = make_trace([[1, 2], [3, 1], [1]])
    assert_array_equal(belady.next_use(trace), [1, never, never, 2, never])


@pytest.mark.parametrize("capacity_blocks", [1, 2, 3, 4])
def test_matches_brute_force_on_tiny_trace(capacity_blocks):
    """On the first 10 requests of the bundled tiny trace (prefix-hash ids), Bélády equals the exhaustive optimum."""
    tiny = traces.load_trace("tiny")
    requests = [tiny.blocks(i).tolist() for i in range(10)]
    trace = make_trace(requests)
    opt = belady.simulate(trace, capacity_blocks * B)
    assert opt.hit_blocks == brute_force_hit_blocks(requests, capacity_blocks)


def test_matches_brute_force_on_random_prefix_trees():
    """Random requests drawn as paths of a small prefix tree (ids are prefix hashes), capacities 1-3."""
    rng = np.random.default_rng(7)
    for _ in range(20):
        paths = [[1, 2, 3], [1, 2, 4], [1, 5], [6, 7], [6, 8, 9]]
        requests = []
        for _ in range(7):
            path = paths[rng.integers(len(paths))]
            requests.append(path[: rng.integers(1, len(path) + 1)])
        trace = make_trace(requests)
        for c in (1, 2, 3):
            assert belady.simulate(trace, c * B).hit_blocks == brute_force_hit_blocks(
                requests, c
            )


def test_never_below_lru_and_equal_when_unlimited():
    """On the tiny trace the optimum is >= LRU at every capacity, and equal to it with room for every block."""
    tiny = traces.load_trace("tiny")
    distances = cs.stack_distances(tiny)
    caps = [B, 2 * B, 4 * B, 8 * B, math.inf]
    lru = cs.hit_rate_curve(distances, caps)
    opt = belady.hit_rate_curve(tiny, caps)
    assert np.all(opt >= lru - 1e-12)
    assert opt[-1] == pytest.approx(lru[-1])


@pytest.mark.slow  # replays the real conversation trace
@pytest.mark.skipif(
    not (REAL / "conversation_trace.jsonl").is_file(), reason="needs MOONCAKE_TRACES"
)
def test_full_conversation_trace_bounds_lru():
    """At Fig. 9's 3 M tokens the optimum lies between LRU and the infinite cache's H (37.4 %, chapter ``disaggregated_memory``)."""
    trace = traces.load_trace("conversation")
    distances = cs.stack_distances(trace)
    lru, top = cs.hit_rate_curve(distances, [3e6, math.inf])
    opt = belady.simulate(trace, 3e6).hit_rate
    assert lru < opt <= top


def test_bad_input_is_named():
    """Capacity, block size and trace errors name the parameter."""
    trace = make_trace([[1], [2]])
    for bad in (0, -512, float("nan")):
        with pytest.raises(ValueError, match="capacity_tokens"):
            belady.simulate(trace, bad)
    with pytest.raises(TypeError, match="capacity_tokens"):
        belady.simulate(trace, "3e6")
    with pytest.raises(TypeError, match="capacity_tokens"):
        belady.simulate(trace, True)
    with pytest.raises(ValueError, match="block_tokens"):
        belady.simulate(trace, 1024, block_tokens=256)
    with pytest.raises(TypeError, match="trace"):
        belady.simulate([[1], [2]], 1024)
    with pytest.raises(TypeError, match="trace"):
        belady.next_use("conversation")
    with pytest.raises(ValueError, match="capacities_tokens"):
        belady.hit_rate_curve(trace, [])


def test_curve_names_non_numeric_capacities():
    """A capacity that is not a number names the parameter."""
    with pytest.raises(TypeError, match="capacities_tokens"):
        belady.hit_rate_curve(make_trace([[1]]), ["lots"])
