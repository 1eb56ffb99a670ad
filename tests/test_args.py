"""Tests of :mod:`helpers._args`, the argument checks every public helper uses.

Intent: every bad value raises ValueError (right type, wrong value) or
TypeError (wrong type) with the parameter's name in the message, so a
calculator can show the message to the reader (see helpers.widgets).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import _args as v


def test_positive_accepts_numbers():
    """Finite numbers > 0 (Python or NumPy, int or float) come back as float."""
    for value in (1, 2.5, np.float32(3), np.int64(4), 1e-300):
        out = v.positive("x", value)
        assert isinstance(out, float) and out == float(value)


@pytest.mark.parametrize(
    "func, value, error",
    [
        (v.positive, 0, ValueError),
        (v.positive, -1.0, ValueError),
        (v.positive, float("nan"), ValueError),
        (v.positive, float("inf"), ValueError),
        (v.positive, "1", TypeError),
        (v.positive, True, TypeError),
        (v.positive, np.bool_(True), TypeError),
        (v.positive, None, TypeError),
        (v.non_negative, -1e-9, ValueError),
        (v.non_negative, float("-inf"), ValueError),
        (v.non_negative, "0", TypeError),
        (v.fraction, 0.0, ValueError),
        (v.fraction, 1.01, ValueError),
        (v.positive_int, 0, ValueError),
        (v.positive_int, 2.5, TypeError),
        (v.positive_int, "3", TypeError),
        (v.positive_int, False, TypeError),
        (v.positive_int, float("nan"), TypeError),
        (v.non_negative_int, -1, ValueError),
        (v.non_negative_int, 0.5, TypeError),
        (v.non_negative_int, False, TypeError),
        (v.positive_array, [1.0, -1.0], ValueError),
        (v.positive_array, [], ValueError),
        (v.positive_array, [1.0, np.inf], ValueError),
        (v.positive_array, "5", TypeError),
        (v.positive_array, [True, True], TypeError),
        (v.positive_array, None, TypeError),
        (v.name, 5, TypeError),
        (v.name, "  ", ValueError),
        (v.boolean, 1, TypeError),
        (v.boolean, 0, TypeError),
        (v.boolean, "yes", TypeError),
        (v.boolean, "False", TypeError),
        (v.boolean, None, TypeError),
        (v.fraction_below_one, 1.0, ValueError),
        (v.fraction_below_one, 1, ValueError),
        (v.fraction_below_one, -0.01, ValueError),
        (v.fraction_below_one, float("nan"), ValueError),
        (v.fraction_below_one, "0.1", TypeError),
        (v.fraction_below_one, True, TypeError),
    ],
)
def test_bad_values_raise_naming_parameter(func, value, error):
    """Each check raises the right exception type, with the parameter name in the message."""
    with pytest.raises(error, match="my_param"):
        func("my_param", value)


def test_edge_values_accepted():
    """Boundaries that are allowed: 0 for non_negative(_int), 1 for fraction, whole floats for ints."""
    assert v.non_negative("x", 0) == 0.0
    assert v.fraction("x", 1) == 1.0
    assert v.positive_int("x", 3.0) == 3 and isinstance(v.positive_int("x", 3.0), int)
    assert v.positive_int("x", np.int32(7)) == 7
    assert v.non_negative_int("x", 0) == 0
    assert v.name("x", "  H100 SXM ") == "h100 sxm"
    assert v.boolean("x", True) is True and v.boolean("x", np.bool_(False)) is False
    assert (
        v.fraction_below_one("x", 0) == 0.0
        and v.fraction_below_one("x", 0.999) == 0.999
    )


def test_positive_array_shapes():
    """positive_array keeps shape and converts ints to floats."""
    out = v.positive_array("x", [[1, 2], [3, 4]])
    assert out.shape == (2, 2) and out.dtype == float
    assert v.positive_array("x", 5).shape == ()
    assert v.positive_array("x", np.arange(1, 4, dtype=np.int16)).dtype == float


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_positive_total(value):
    """Property: positive() either returns the same positive finite float or raises ValueError."""
    try:
        out = v.positive("x", value)
    except ValueError as exc:
        assert "x" in str(exc)
        assert not (0 < value < float("inf"))
    else:
        assert out == value and 0 < out < float("inf")


@given(st.integers(min_value=-(10**6), max_value=10**6))
def test_positive_int_total(value):
    """Property: positive_int accepts exactly the integers >= 1."""
    if value >= 1:
        assert v.positive_int("n", value) == value
    else:
        with pytest.raises(ValueError, match="n"):
            v.positive_int("n", value)


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_fraction_below_one_total(value):
    """Property: fraction_below_one accepts exactly the floats in [0, 1) (a memory reserve), else ValueError."""
    if 0 <= value < 1:
        assert v.fraction_below_one("reserve", value) == value
    else:
        with pytest.raises(ValueError, match="reserve"):
            v.fraction_below_one("reserve", value)


@given(
    st.one_of(st.booleans(), st.integers(), st.text(max_size=5), st.none(), st.floats())
)
def test_boolean_accepts_only_true_and_false(value):
    """Property: boolean returns True and False unchanged and refuses everything else, even 0, 1 and "True"."""
    if isinstance(value, bool):
        assert v.boolean("flag", value) is value
    else:
        with pytest.raises(TypeError, match="flag"):
            v.boolean("flag", value)
