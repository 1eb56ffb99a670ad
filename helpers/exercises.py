"""Auto-checked exercises: compare a reader's answer with the book's, kindly.

>>> check(203, 65e12 / 320e9, rel_tol=0.02, unit="FLOP/byte")
'Right: 203 FLOP/byte.'
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from numbers import Real
from pathlib import Path

from . import _args


def _not_checked(answer: object) -> str:
    """What a check cell prints for an answer that is not a finite number (``None``: not yet written)."""
    if answer is None:
        return "Not checked yet: set answer to your number and run this cell again."
    return f"Not checked: write your answer as a number (got {answer!r})."


def check(
    answer: object,
    expected: float,
    *,
    rel_tol: float = 0.05,
    unit: str = "",
    hint: str = "",
) -> str:
    """Say whether ``answer`` matches ``expected`` within ``rel_tol``, with a hint if not.

    Tolerant of units by powers of 1000: an answer off by exactly a factor
    10**3k (e.g. GB/s typed as bytes/s) is reported as a unit slip, not as right.
    Returns the message (also fit for printing) rather than raising, so a
    notebook cell always shows it.
    """
    if isinstance(expected, (str, bool)):
        raise TypeError(f"expected must be a number, got {expected!r}")
    try:
        expected = float(expected)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"expected must be a number, got {expected!r}") from exc
    if not math.isfinite(expected):
        raise ValueError(f"expected must be finite, got {expected}")
    rel_tol = _args.fraction("rel_tol", rel_tol)
    if (
        isinstance(answer, bool)
        or not isinstance(answer, Real)
        or not math.isfinite(float(answer))
    ):
        return _not_checked(answer)
    answer = float(answer)
    shown = f"{expected:.3g}" + (f" {unit}" if unit else "")
    if math.isclose(answer, expected, rel_tol=rel_tol):
        return f"Right: {shown}."
    if answer != 0 and expected != 0:
        ratio = answer / expected
        k = round(math.log10(abs(ratio)) / 3)
        if k != 0 and math.isclose(ratio, 10.0 ** (3 * k), rel_tol=rel_tol):
            return (
                f"Close: your number is off by a factor 10^{3 * k}. Check the units"
                + (f" ({unit})." if unit else ".")
            )
    message = (
        f"Not yet: {answer:.3g} is {'too high' if answer > expected else 'too low'}."
    )
    return message + (f" Hint: {hint}" if hint else "")


# --- The student edition's checks: against a stored digest of the answer, not a helper call ---

DIGESTS_FILE = Path(__file__).parent / "data" / "exercise_digests.jsonl"
"""One JSON line per auto-checked exercise: its label, tolerance and answer digests.

Written by ``tools/notebook_chrome.py`` from the book's own expected values; the student
edition's check cells call :func:`check_digest` with the exercise's label instead of the helper
that computes the answer.
"""


def _bucket_step(rel_tol: float) -> float:
    """Width of one digest bucket, relative: a quarter of the tolerance."""
    return rel_tol / 4


def _hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()[:20]


def _bucket(value: float, step: float) -> int:
    """The log-scale bucket of ``abs(value)`` (nonzero), buckets ``step`` wide relative."""
    return math.floor(math.log(abs(value)) / math.log1p(step))


def _digest(label: str, value: float, step: float) -> str:
    """The digest of the bucket ``value`` falls in, salted by the exercise's label."""
    if value == 0:
        return _hash(f"{label}:zero")
    return _hash(f"{label}:{'-' if value < 0 else '+'}:{_bucket(value, step)}")


def answer_digests(label: str, expected: float, rel_tol: float) -> list[str]:
    """The digests of every bucket that meets ``[expected (1 - rel_tol), expected (1 + rel_tol)]``.

    An answer is accepted when its bucket is one of them: within ``rel_tol`` of ``expected``,
    give or take one bucket (a quarter of ``rel_tol``) at the upper end.
    """
    expected = float(expected)
    if not math.isfinite(expected):
        raise ValueError(f"expected must be finite, got {expected}")
    rel_tol = _args.fraction("rel_tol", rel_tol)
    if not 0 < rel_tol < 1:
        raise ValueError(f"rel_tol must be between 0 and 1, got {rel_tol}")
    step = _bucket_step(rel_tol)
    if expected == 0:
        return [_digest(label, 0.0, step)]
    sign = "-" if expected < 0 else "+"
    first = _bucket(expected * (1 - rel_tol), step)
    last = _bucket(expected * (1 + rel_tol), step)
    return [_hash(f"{label}:{sign}:{i}") for i in range(first, last + 1)]


@functools.cache
def _stored_digests() -> dict[str, tuple[float, frozenset[str]]]:
    entries: dict[str, tuple[float, frozenset[str]]] = {}
    if DIGESTS_FILE.exists():
        for line in DIGESTS_FILE.read_text(encoding="utf-8").splitlines():
            if line.strip():
                entry = json.loads(line)
                entries[entry["label"]] = (
                    float(entry["rel_tol"]),
                    frozenset(entry["digests"]),
                )
    return entries


def check_digest(label: str, answer: object, *, unit: str = "", hint: str = "") -> str:
    """Say whether ``answer`` is the book's answer to exercise ``label``, knowing only its digests.

    Like :func:`check` (a unit slip by a factor 10**3k is reported as such), except that the
    expected value is never at hand: it is not shown, and a wrong answer is not said to be too
    high or too low.

    >>> check_digest("ch2-q1", 203, unit="FLOP/byte")
    'Right: 203 FLOP/byte.'
    """
    stored = _stored_digests()
    if label not in stored:
        raise KeyError(f"label: no stored answer for exercise {label!r}")
    rel_tol, digests = stored[label]
    if (
        isinstance(answer, bool)
        or not isinstance(answer, Real)
        or not math.isfinite(float(answer))
    ):
        return _not_checked(answer)
    value = float(answer)
    step = _bucket_step(rel_tol)
    suffix = f" {unit}" if unit else ""
    if _digest(label, value, step) in digests:
        return f"Right: {value:.3g}{suffix}."
    for k in (-3, -2, -1, 1, 2, 3):
        if value != 0 and _digest(label, value / 10.0 ** (3 * k), step) in digests:
            return (
                f"Close: your number is off by a factor 10^{3 * k}. Check the units"
                + (f" ({unit})." if unit else ".")
            )
    message = f"Not yet: {value:.3g}{suffix} is not the book's answer."
    return message + (f" Hint: {hint}" if hint else "")
