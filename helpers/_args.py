"""Argument checks shared by every public function in :mod:`helpers`.

Each check names the offending parameter in its message, so a calculator
widget can show the message to a reader instead of a traceback.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np


def _is_number(value: object) -> bool:
    return isinstance(value, (Real, np.number)) and not isinstance(
        value, (bool, np.bool_)
    )


def positive(name: str, value: object) -> float:
    """Return ``value`` as a float if it is a finite number > 0, else raise."""
    if not _is_number(value):
        raise TypeError(
            f"{name} must be a number, got {type(value).__name__} {value!r}"
        )
    value = float(value)  # type: ignore[arg-type]
    if math.isnan(value) or math.isinf(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if value <= 0:
        raise ValueError(f"{name} must be > 0, got {value}")
    return value


def non_negative(name: str, value: object) -> float:
    """Return ``value`` as a float if it is a finite number >= 0, else raise."""
    if not _is_number(value):
        raise TypeError(
            f"{name} must be a number, got {type(value).__name__} {value!r}"
        )
    value = float(value)  # type: ignore[arg-type]
    if math.isnan(value) or math.isinf(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return value


def fraction(name: str, value: object) -> float:
    """Return ``value`` as a float in (0, 1], else raise."""
    value = positive(name, value)
    if value > 1:
        raise ValueError(f"{name} must be in (0, 1], got {value}")
    return value


def boolean(name: str, value: object) -> bool:
    """Return ``value`` if it is ``True`` or ``False`` (not 0, 1 or a string), else raise."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def fraction_below_one(name: str, value: object) -> float:
    """Return ``value`` as a float in [0, 1), else raise (a share kept back, such as a memory reserve)."""
    value = non_negative(name, value)
    if value >= 1:
        raise ValueError(f"{name} must be in [0, 1), got {value}")
    return value


def positive_int(name: str, value: object) -> int:
    """Return ``value`` as an int if it is a whole number >= 1, else raise."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (Integral, np.integer)
    ):
        if not (_is_number(value) and float(value).is_integer()):  # type: ignore[arg-type]
            raise TypeError(
                f"{name} must be a whole number, got {type(value).__name__} {value!r}"
            )
    whole = int(value)  # type: ignore[call-overload]
    if whole < 1:
        raise ValueError(f"{name} must be >= 1, got {whole}")
    return whole


def non_negative_int(name: str, value: object) -> int:
    """Return ``value`` as an int if it is a whole number >= 0, else raise."""
    if value == 0 and not isinstance(value, (bool, np.bool_)):
        return 0
    return positive_int(name, value)


def positive_array(name: str, value: object) -> np.ndarray:
    """Return ``value`` as a float array whose entries are all finite and > 0."""
    try:
        raw = np.asarray(value)
        if (
            raw.dtype.kind not in "iuf"
        ):  # rejects bools, strings ("10"), None and other objects
            raise TypeError(raw.dtype)
        arr = raw.astype(float)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"{name} must be a number or an array of numbers, got {value!r}"
        ) from exc
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    if np.any(arr <= 0):
        raise ValueError(f"{name} must be > 0 everywhere, got min {arr.min()}")
    return arr


def name(param: str, value: object) -> str:
    """Return ``value`` normalised for look-up (stripped, lower case)."""
    if not isinstance(value, str):
        raise TypeError(
            f"{param} must be a string, got {type(value).__name__} {value!r}"
        )
    key = value.strip().lower()
    if not key:
        raise ValueError(f"{param} must not be empty")
    return key
