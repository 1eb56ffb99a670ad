"""What measured transfers say: a link fitted to them, and where moving a KV cache beats recomputing it.

Part of :mod:`helpers.kvtransfer` (which re-exports :func:`fit_link` and
:func:`measured_breakeven`): the analysis of the times its transports
measure, apart from the transports themselves.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .hardware import Link


def fit_link(
    name: str,
    nbytes: Sequence[float],
    seconds: Sequence[float],
    *,
    source: str = "measured",
) -> Link:
    """A :class:`~helpers.hardware.Link` through the smallest and the largest of paired measurements.

    ``seconds[i]`` is the measured time to move ``nbytes[i]`` bytes. The
    bandwidth is the slope between the smallest and the largest transfer,
    ``(b1 - b0) / (t1 - t0)``, and the latency what is left of the smallest
    one, ``max(t0 - b0 / bandwidth, 0)``; if the largest was not the slower
    (no slope to read), the bandwidth is ``b1 / t1`` and the latency 0. The
    link then predicts ``latency + bytes / bandwidth`` for every other size
    (:func:`helpers.kvcache.transfer_time`), which is how a lab checks the
    points in between.
    """
    b = np.asarray(nbytes, dtype=float)
    t = np.asarray(seconds, dtype=float)
    if b.ndim != 1 or b.shape != t.shape or b.size == 0:
        raise ValueError(
            f"nbytes and seconds must be equally long, non-empty sequences, got {b.shape} and {t.shape}"
        )
    if (
        np.any(~np.isfinite(b))
        or np.any(b <= 0)
        or np.any(~np.isfinite(t))
        or np.any(t <= 0)
    ):
        raise ValueError("nbytes and seconds must be finite and > 0")
    lo, hi = int(np.argmin(b)), int(np.argmax(b))
    (b0, t0), (b1, t1) = (b[lo], t[lo]), (b[hi], t[hi])
    if b1 > b0 and t1 > t0:
        bandwidth = (b1 - b0) / (t1 - t0)
        latency = max(t0 - b0 / bandwidth, 0.0)
    else:
        bandwidth, latency = b1 / t1, 0.0
    return Link(name, float(bandwidth), float(latency), source)


def measured_breakeven(
    lengths: Sequence[int], transfer_s: Sequence[float], recompute_s: Sequence[float]
) -> int | None:
    """Shortest measured prompt length from which moving a KV cache beat recomputing it at every longer length.

    ``lengths`` in increasing order, with the measured seconds to move the
    cache (``transfer_s``) and to recompute it (``recompute_s``) at each.
    Returns ``lengths[i]`` for the smallest ``i`` such that transfer was
    faster at ``i`` and every later length, or ``None`` if it was not faster
    at the longest length.
    """
    n = np.asarray(lengths)
    moved, recomputed = (
        np.asarray(transfer_s, dtype=float),
        np.asarray(recompute_s, dtype=float),
    )
    if (
        n.ndim != 1
        or n.size == 0
        or moved.shape != n.shape
        or recomputed.shape != n.shape
    ):
        raise ValueError(
            "lengths, transfer_s and recompute_s must be equally long, non-empty sequences"
        )
    if np.any(np.diff(n) <= 0):
        raise ValueError("lengths must be strictly increasing")
    wins = moved < recomputed
    for i in range(len(n)):
        if wins[i:].all():
            return int(n[i])
    return None
