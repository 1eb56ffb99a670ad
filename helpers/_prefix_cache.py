"""The prefix cache's parts that :mod:`helpers.cachesim`, :mod:`helpers.routing` and :mod:`helpers.belady` share.

A private module, so its names are public to the package and to no reader: blocks regrouped at
a coarser granularity (:func:`group_blocks`), the prompt tokens each block carries
(:func:`block_weights`), a capacity in tokens as whole blocks (:func:`capacity_blocks`,
:func:`capacities_blocks`) and the LRU prefix cache itself (:class:`PrefixLRU`). The cache model
they implement is the one :mod:`helpers.cachesim`'s docstring states.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from . import _args
from .traces import Trace

__all__ = [
    "PrefixLRU",
    "block_weights",
    "capacities_blocks",
    "capacity_blocks",
    "group_blocks",
]


def group_blocks(
    trace: Trace, block_tokens: object
) -> tuple[int, np.ndarray, np.ndarray]:
    """Dense block ids and offsets at ``block_tokens`` per block (a multiple of the trace's)."""
    block_tokens = _args.positive_int("block_tokens", block_tokens)
    if block_tokens % trace.block_tokens:
        raise ValueError(
            f"block_tokens must be a multiple of the trace's {trace.block_tokens}-token blocks, got {block_tokens}"
        )
    k = block_tokens // trace.block_tokens
    if k == 1:
        _, dense = np.unique(trace.block_ids, return_inverse=True)
        return block_tokens, dense.astype(np.int64).ravel(), np.asarray(trace.offsets)
    # A coarse block is k consecutive trace blocks; it is the same block only if all k ids match.
    index: dict[tuple[int, ...], int] = {}
    ids: list[int] = []
    counts = np.empty(trace.n_requests, dtype=np.int64)
    raw = trace.block_ids.tolist()
    off = trace.offsets.tolist()
    for r in range(trace.n_requests):
        start, stop = off[r], off[r + 1]
        for s in range(start, stop, k):
            ids.append(index.setdefault(tuple(raw[s : min(s + k, stop)]), len(index)))
        counts[r] = -(-(stop - start) // k)
    offsets = np.zeros(trace.n_requests + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return block_tokens, np.asarray(ids, dtype=np.int64), offsets


def block_weights(
    trace: Trace, offsets: np.ndarray, block_tokens: int
) -> tuple[np.ndarray, np.ndarray]:
    """Request index and prompt tokens of every block (the last block of a prompt may be partial)."""
    counts = np.diff(offsets)
    request = np.repeat(np.arange(trace.n_requests), counts)
    position = np.arange(len(request)) - offsets[request]
    length = trace.input_lengths[request]
    weights = np.minimum((position + 1) * block_tokens, length) - np.minimum(
        position * block_tokens, length
    )
    return request, weights.astype(np.int64)


def capacity_blocks(name: str, capacity_tokens: object, block_tokens: int) -> float:
    """``floor(capacity / block_tokens)`` blocks; ``math.inf`` means unlimited."""
    if isinstance(capacity_tokens, (int, float, np.number)) and not isinstance(
        capacity_tokens, bool
    ):
        if math.isinf(float(capacity_tokens)) and float(capacity_tokens) > 0:
            return math.inf
    return float(math.floor(_args.positive(name, capacity_tokens) / block_tokens))


class PrefixLRU:
    """One LRU prefix cache of whole blocks: the rule of the module docstring, in one place.

    :meth:`hit` counts the leading blocks of a request present now (the
    first missing block ends the hit); :meth:`touch` then inserts or
    refreshes all of them, last block first, and evicts least-recently-used
    blocks down to ``capacity_blocks`` (``math.inf``: never).
    """

    def __init__(self, capacity_blocks: float) -> None:
        self.capacity_blocks = capacity_blocks
        self._blocks: OrderedDict[int, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._blocks)

    def __contains__(self, block: object) -> bool:
        return block in self._blocks

    def hit(self, blocks: Sequence[int]) -> int:
        """How many leading ``blocks`` are cached."""
        k = 0
        for b in blocks:
            if b not in self._blocks:
                break
            k += 1
        return k

    def touch(self, blocks: Sequence[int]) -> None:
        """Make every one of ``blocks`` most recently used, the first block last; then evict."""
        cache = self._blocks
        for b in reversed(blocks):
            if b in cache:
                cache.move_to_end(b)
            else:
                cache[b] = None
        while len(cache) > self.capacity_blocks:
            cache.popitem(last=False)


def capacities_blocks(capacities_tokens: object, block_tokens: int) -> np.ndarray:
    """``floor(capacity / block_tokens)`` for each capacity (``inf`` allowed); each must be > 0."""
    try:
        caps = np.asarray(capacities_tokens, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"capacities_tokens must be numbers, got {capacities_tokens!r}"
        ) from exc
    if caps.size == 0:
        raise ValueError("capacities_tokens must not be empty")
    if np.any(np.isnan(caps)) or np.any(caps <= 0):
        raise ValueError(
            f"capacities_tokens must be > 0 everywhere (inf allowed), got min {np.nanmin(caps) if caps.size else caps}"
        )
    return np.floor(caps / block_tokens)
