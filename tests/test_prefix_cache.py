"""Tests of :mod:`helpers._prefix_cache`, the cache parts that cachesim, routing and belady share."""

from __future__ import annotations

import math

import numpy as np
import pytest

from helpers._prefix_cache import PrefixLRU, capacities_blocks, capacity_blocks


def test_prefix_lru_hits_a_prefix_and_evicts_the_tail_first():
    """The one cache both replays use, two blocks big: touch [a, b, c] leaves a most recent,
    then b; c (the tail) is evicted first. A hit stops at the first missing block: [a, c, b] hits 1."""
    cache = PrefixLRU(2)
    cache.touch([0, 1, 2])
    assert len(cache) == 2 and 2 not in cache and 0 in cache
    assert (
        cache.hit([0, 1, 2]) == 2 and cache.hit([0, 2, 1]) == 1 and cache.hit([2]) == 0
    )


# ---------------------------------------------------------------------------
# Prefill compute a prefix hit saves (review H3)
# ---------------------------------------------------------------------------


def test_capacities_are_whole_blocks_and_unlimited_is_inf():
    """1,300 tokens of 512-token blocks hold 2 blocks (floor, not round); inf stays inf."""
    assert capacity_blocks("capacity_tokens", 1_300, 512) == 2
    assert capacity_blocks("capacity_tokens", math.inf, 512) == math.inf
    assert list(capacities_blocks([511, 1_024, math.inf], 512)) == [0, 2, math.inf]
    with pytest.raises(ValueError, match="capacity_tokens must be > 0"):
        capacity_blocks("capacity_tokens", 0, 512)
    with pytest.raises(TypeError, match="capacity_tokens must be a number"):
        capacity_blocks("capacity_tokens", "1e6", 512)
    with pytest.raises(ValueError, match="capacities_tokens must be > 0"):
        capacities_blocks(np.array([1.0, -1.0]), 512)
