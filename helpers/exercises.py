"""Auto-checked exercises: compare a reader's answer with the book's, kindly.

>>> check(203, 65e12 / 320e9, rel_tol=0.02, unit="FLOP/byte")
'Right: 203 FLOP/byte.'
"""

from __future__ import annotations

import math
from numbers import Real

from . import _validate


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
    rel_tol = _validate.fraction("rel_tol", rel_tol)
    if (
        isinstance(answer, bool)
        or not isinstance(answer, Real)
        or not math.isfinite(float(answer))
    ):
        return f"Not checked: write your answer as a number (got {answer!r})."
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
