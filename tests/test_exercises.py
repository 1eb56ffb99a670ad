"""Tests of :func:`helpers.exercises.check`, the auto-checker behind every chapter's exercises.

The worked example is the T4's fp16 ridge point, 65e12 / 320e9 = 203.125 FLOP/byte
(NVIDIA T4 datasheet, nvidia_t4).
"""

from __future__ import annotations

import doctest

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import exercises
from helpers.exercises import check

EXPECTED = 65e12 / 320e9  # 203.125 FLOP/byte


def test_right_answer():
    """An answer within rel_tol is "Right", and the message shows the expected value and unit."""
    msg = check(203, EXPECTED, rel_tol=0.02, unit="FLOP/byte")
    assert msg.startswith("Right") and "203 FLOP/byte" in msg
    assert check(np.float32(203.1), EXPECTED, rel_tol=0.02).startswith("Right")
    assert check(np.int64(203), EXPECTED, rel_tol=0.02).startswith("Right")
    assert check(0, 0).startswith("Right")


@pytest.mark.parametrize(
    "factor, power", [(1e3, "10^3"), (1e-3, "10^-3"), (1e6, "10^6"), (1e-9, "10^-9")]
)
def test_unit_slip(factor, power):
    """An answer off by exactly 10^(3k) (e.g. GB/s typed where bytes/s was asked) is a unit slip, not right."""
    msg = check(EXPECTED * factor, EXPECTED, unit="FLOP/byte")
    assert msg.startswith("Close") and power in msg and "FLOP/byte" in msg
    assert not msg.startswith("Right")


def test_too_high_and_too_low_with_hint():
    """Other wrong answers say too high / too low and append the hint."""
    high = check(300, EXPECTED, hint="divide peak by bandwidth")
    assert (
        "too high" in high
        and high.startswith("Not yet")
        and "divide peak by bandwidth" in high
    )
    low = check(100, EXPECTED)
    assert "too low" in low and "Hint" not in low
    assert "too low" in check(0, EXPECTED)
    assert "too low" in check(-203, EXPECTED)  # sign errors are not unit slips
    assert "too high" in check(
        EXPECTED * 10, EXPECTED
    )  # a factor 10 is not a 10^3 unit slip


@pytest.mark.parametrize(
    "answer", [None, "203", True, float("nan"), float("inf"), -float("inf"), [203]]
)
def test_non_number_is_not_checked(answer):
    """The placeholder None, strings, bools, NaN and infinities get "Not checked", never an exception
    (a notebook cell must always print a message)."""
    msg = check(answer, EXPECTED)
    assert msg.startswith("Not checked")


@given(
    st.floats(min_value=1e-6, max_value=1e12), st.floats(min_value=0.001, max_value=0.5)
)
def test_within_tolerance_is_right(expected, rel_tol):
    """Property: any answer within half the tolerance is Right; one 3x too big is never Right."""
    assert check(expected * (1 + rel_tol / 2), expected, rel_tol=rel_tol).startswith(
        "Right"
    )
    assert not check(expected * 3, expected, rel_tol=rel_tol).startswith("Right")


def test_bad_book_side_arguments_raise():
    """Errors in the book's own arguments (not the reader's) raise, naming the parameter."""
    with pytest.raises(ValueError, match="rel_tol"):
        check(1, 1, rel_tol=0)
    with pytest.raises(ValueError, match="rel_tol"):
        check(1, 1, rel_tol=2)
    with pytest.raises(TypeError, match="expected"):
        check(1, "203")
    with pytest.raises(TypeError, match="expected"):
        check(1, None)
    with pytest.raises(ValueError, match="expected"):
        check(1, float("nan"))


def test_module_doctest():
    """The example in the module docstring runs and prints what it claims."""
    result = doctest.testmod(exercises)
    assert result.attempted >= 1 and result.failed == 0


# --- check_digest: the student edition's check, against stored digests only ---


def _with_digests(monkeypatch, label, expected, rel_tol):
    stored = {
        label: (rel_tol, frozenset(exercises.answer_digests(label, expected, rel_tol)))
    }
    monkeypatch.setattr(exercises, "_stored_digests", lambda: stored)


def test_digest_check_accepts_within_the_tolerance_and_rejects_beyond(monkeypatch):
    """203.125 at 2 %: 199.1 (-1.98 %) and 207.1 (+1.96 %) are right; 195 (-4 %) and 215 (+5.8 %)
    are not. The buckets are a quarter of the tolerance wide, so nothing beyond 2 % + 0.5 % passes."""
    _with_digests(monkeypatch, "t-q", EXPECTED, 0.02)
    for answer in (203.125, 203, 199.1, 207.1):
        assert exercises.check_digest("t-q", answer).startswith("Right"), answer
    for answer in (195, 215, -203.125, 0):
        assert exercises.check_digest("t-q", answer).startswith("Not yet"), answer
    assert not exercises.check_digest("t-q", EXPECTED * 1.026).startswith("Right")


def test_digest_check_reports_unit_slips_and_blanks_and_never_the_value(monkeypatch):
    """203,125 (a factor 10^3 off) is a unit slip; None is not checked; a wrong answer's message
    holds neither the book's value nor a direction."""
    _with_digests(monkeypatch, "t-q", EXPECTED, 0.02)
    assert "10^3" in exercises.check_digest("t-q", EXPECTED * 1e3, unit="FLOP/byte")
    assert "10^-3" in exercises.check_digest("t-q", EXPECTED / 1e3)
    assert exercises.check_digest("t-q", None).startswith("Not checked")
    wrong = exercises.check_digest("t-q", 150, hint="peak over bandwidth")
    assert (
        "203" not in wrong
        and "too" not in wrong
        and wrong.endswith("peak over bandwidth")
    )


def test_digests_are_salted_by_label_and_unknown_labels_raise(monkeypatch):
    """The same answer under another label has other digests; an unknown label is a KeyError."""
    assert set(exercises.answer_digests("a", 1.0, 0.02)).isdisjoint(
        exercises.answer_digests("b", 1.0, 0.02)
    )
    with pytest.raises(KeyError, match="label"):
        exercises.check_digest("no-such-exercise", 1.0)
    with pytest.raises(ValueError, match="rel_tol"):
        exercises.answer_digests("a", 1.0, 0.0)


def test_stored_digests_accept_the_books_hand_arithmetic():
    """The shipped digests accept spec.yml's worked answers (datasheet arithmetic, no helpers):
    ch2-q1 = 65e12 / 320e9 = 203.125 FLOP/byte, ch4-q1 the same rows, ch1-q1 = 1/12."""
    assert exercises.check_digest("ch2-q1", 65e12 / 320e9).startswith("Right")
    assert exercises.check_digest("ch4-q1", 65e12 / 320e9 * 2 / 2).startswith("Right")
    assert exercises.check_digest("ch1-q1", 1 / 12).startswith("Right")


def test_an_unwritten_answer_says_so_instead_of_printing_none():
    """A check cell run before the student writes an answer tells them what to do (reader, R4 round)."""
    msg = exercises.check(None, 3.0)
    assert "None" not in msg
    assert msg.startswith("Not checked yet")
    assert "got 'x'" in exercises.check("x", 3.0)
