"""Bracket-checked searches: the one bisection every helper that solves for a size uses.

Each search first checks that its bracket holds (a predicate true at one end,
or a sign change), and raises ``ValueError`` naming the bracket if it does not,
so a search can never silently return an end of the bracket as if it were the
answer.
"""

from __future__ import annotations

from collections.abc import Callable


def last_true(pred: Callable[[int], bool], lo: int, hi: int) -> int:
    """Largest whole ``x`` in ``[lo, hi]`` with ``pred(x)``, for ``pred`` true up to a point, then false.

    ``pred(lo)`` must hold (else ``ValueError``); ``hi`` itself is returned when
    ``pred(hi)`` holds. About ``log2(hi - lo)`` calls of ``pred``.

    >>> last_true(lambda x: x * x <= 50, 0, 100)
    7
    """
    if lo > hi:
        raise ValueError(f"bracket [lo, hi] must have lo <= hi, got [{lo}, {hi}]")
    if not pred(lo):
        raise ValueError(f"bracket [{lo}, {hi}] does not hold: pred(lo) is false")
    if pred(hi):
        return hi
    while hi - lo > 1:  # pred(lo) and not pred(hi)
        mid = (lo + hi) // 2
        if pred(mid):
            lo = mid
        else:
            hi = mid
    return lo


def first_true(pred: Callable[[int], bool], lo: int, hi: int) -> int:
    """Smallest whole ``x`` in ``[lo, hi]`` with ``pred(x)``, for ``pred`` false up to a point, then true.

    ``pred(hi)`` must hold (else ``ValueError``); ``lo`` itself is returned when
    ``pred(lo)`` holds.

    >>> first_true(lambda x: x * x >= 50, 0, 100)
    8
    """
    if lo > hi:
        raise ValueError(f"bracket [lo, hi] must have lo <= hi, got [{lo}, {hi}]")
    if not pred(hi):
        raise ValueError(f"bracket [{lo}, {hi}] does not hold: pred(hi) is false")
    if pred(lo):
        return lo
    while hi - lo > 1:  # not pred(lo) and pred(hi)
        mid = (lo + hi) // 2
        if pred(mid):
            hi = mid
        else:
            lo = mid
    return hi


def root(
    f: Callable[[float], float], lo: float, hi: float, *, rel_tol: float = 1e-6
) -> float:
    """Where ``f`` turns from negative to non-negative in ``[lo, hi]``, from above, to ``rel_tol * hi``.

    Needs ``f(lo) < 0 <= f(hi)`` (else ``ValueError``) and one crossing in the
    bracket; returns a point with ``f >= 0`` no further than ``rel_tol`` times
    the final upper end from the crossing.

    >>> round(root(lambda x: x * x - 2, 0.0, 2.0), 5)
    1.41421
    """
    if not lo < hi:
        raise ValueError(f"bracket [lo, hi] must have lo < hi, got [{lo}, {hi}]")
    if not f(lo) < 0 <= f(hi):
        raise ValueError(f"bracket [{lo}, {hi}] does not hold: need f(lo) < 0 <= f(hi)")
    while hi - lo > rel_tol * hi:
        mid = (lo + hi) / 2
        if f(mid) < 0:
            lo = mid
        else:
            hi = mid
    return hi
