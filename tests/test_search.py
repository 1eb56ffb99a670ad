"""Tests for :mod:`helpers._search`: the bracket-checked searches (review K9)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers._search import first_true, last_true, root


@given(st.integers(0, 1_000), st.integers(0, 1_000), st.integers(-5, 1_005))
def test_last_and_first_true_find_the_switch(lo, span, switch):
    """For ``x <= switch`` the answer is ``clip(switch, lo, hi)``, checked against a linear scan."""
    hi = lo + span
    below = lambda x: x <= switch  # noqa: E731
    if below(lo):
        assert last_true(below, lo, hi) == max(x for x in range(lo, hi + 1) if below(x))
    else:
        with pytest.raises(ValueError, match="pred\\(lo\\) is false"):
            last_true(below, lo, hi)
    above = lambda x: x > switch  # noqa: E731
    if above(hi):
        assert first_true(above, lo, hi) == min(
            x for x in range(lo, hi + 1) if above(x)
        )
    else:
        with pytest.raises(ValueError, match="pred\\(hi\\) is false"):
            first_true(above, lo, hi)


def test_root_of_two_and_a_bad_bracket():
    """x^2 - 2 crosses at sqrt(2) = 1.41421...; the answer is at or above it, within 1e-6 of 2.
    A bracket with no sign change (past the crossing, like [2, 3]) is refused, not answered with 3."""
    x = root(lambda x: x * x - 2, 0.0, 2.0)
    assert math.sqrt(2) <= x <= math.sqrt(2) + 1e-6 * 2
    with pytest.raises(ValueError, match="does not hold"):
        root(lambda x: x * x - 2, 2.0, 3.0)
    with pytest.raises(ValueError, match="lo < hi"):
        root(lambda x: x, 1.0, 1.0)
    with pytest.raises(ValueError, match="lo <= hi"):
        last_true(lambda x: True, 3, 2)
