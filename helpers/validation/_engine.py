"""The comparison engine of :mod:`helpers.validation`: predictions, the fitted constant, error statistics.

A kind's spec (:class:`_Kind`) says how its points are predicted; :func:`_compare`
fits one constant per GPU on the point the spec's calibration rule picks
(:func:`_solve_constant`) and predicts every point with the naive, the
constant-free and the calibrated model. :func:`summarize` and :func:`with_role`
read the resulting :class:`Prediction` objects. The kinds themselves are in
``helpers.validation._kinds``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Literal

import numpy as np

from ..published import PublishedPoint

Role = Literal["calibration", "validation", "excluded"]
Model = Literal["naive", "second_order", "constant_free"]


@dataclass(frozen=True)
class Prediction:
    """One published point and what the three models predict for it.

    ``naive``, ``constant_free`` and ``second_order`` (the calibrated model)
    are in the point's unit; ``role`` says whether the point calibrated its
    GPU's constant, validates the models, or was left out (``reason`` says
    why, or gives the calibrated constant).
    """

    point: PublishedPoint
    naive: float
    second_order: float
    role: Role
    series: str
    reason: str = ""
    constant_free: float = math.nan

    @property
    def naive_error(self) -> float:
        """Relative error of the naive roofline."""
        return self.naive / self.point.value - 1

    @property
    def second_order_error(self) -> float:
        """Relative error of the calibrated second-order model."""
        return self.second_order / self.point.value - 1

    @property
    def constant_free_error(self) -> float:
        """Relative error of the constant-free second-order model."""
        return self.constant_free / self.point.value - 1

    def speed_ratio(self, model: Model) -> float:
        """Predicted speed over published speed: above 1 the model predicts faster than measured.

        For a rate (FLOP/s, images/s ...) it is predicted / published; for a
        time it is published / predicted.
        """
        predicted = {
            "naive": self.naive,
            "second_order": self.second_order,
            "constant_free": self.constant_free,
        }[model]
        ratio = predicted / self.point.value
        return 1 / ratio if self.point.unit == "s" else ratio


# --- the fitted constant ----------------------------------------------------------


def _solve_constant(
    time_of: Callable[[float], float],
    measured_s: float,
    *,
    hi: float,
    iterations: int = 60,
) -> float:
    """Largest constant ``c >= 0`` with ``time_of(c) <= measured_s``; 0 if even ``c = 0`` is too slow.

    Bisection on ``[0, hi]``, its bracket checked: ``time_of`` must grow with
    ``c``; ``hi`` is doubled (up to 2**20 times) until ``time_of(hi) > measured_s``,
    and a ``ValueError`` is raised if it never is.
    """
    if time_of(0.0) >= measured_s:
        return 0.0
    lo = 0.0
    for _ in range(20):
        if time_of(hi) > measured_s:
            break
        lo, hi = hi, 2 * hi
    else:
        raise ValueError(
            f"no constant up to {hi:g} s reaches the measured {measured_s:g} s"
        )
    for _ in range(iterations):
        mid = (lo + hi) / 2
        if time_of(mid) > measured_s:
            hi = mid
        else:
            lo = mid
    return lo


@dataclass(frozen=True)
class _Kind:
    """How one kind is predicted: with ``constant`` (s) added where the model has its floor."""

    series: Callable[[PublishedPoint], str]
    excluded: Callable[[PublishedPoint], str]
    calibration_key: Callable[[PublishedPoint], tuple | float]
    naive: Callable[[PublishedPoint], float]
    model: Callable[[PublishedPoint, float], float]
    constant: str  # what the constant is, for the calibration table
    same_run: Callable[[PublishedPoint, PublishedPoint], bool]
    hi: float
    iterations: int = 60
    """Bisection steps of the constant (fewer where one prediction is costly)."""
    predict_excluded: bool = True
    """False: excluded points get NaN predictions (a costly model is not run on them)."""


def _time(p: PublishedPoint, value: float) -> float:
    """A predicted value as a time (which grows with the constant): itself, or one over a rate."""
    return value if p.unit == "s" else 1 / value


def _gpu_key(p: PublishedPoint) -> str:
    return p.gpu or "host memory"


def _safe(f: Callable[[], float]) -> float:
    try:
        return f()
    except (KeyError, ValueError):
        return math.nan


def _calibration_time(spec: _Kind, p: PublishedPoint, constant: float) -> float:
    return _time(p, spec.model(p, constant))


def _compare(points: Sequence[PublishedPoint], spec: _Kind) -> list[Prediction]:
    out = []
    by_gpu: dict[str, list[PublishedPoint]] = defaultdict(list)
    for p in points:
        by_gpu[_gpu_key(p)].append(p)
    for group in by_gpu.values():
        usable = [p for p in group if not spec.excluded(p)]
        calib = min(usable, key=spec.calibration_key) if usable else None
        constant = 0.0
        if calib is not None:
            constant = _solve_constant(
                partial(_calibration_time, spec, calib),
                _time(calib, calib.value),
                hi=spec.hi,
                iterations=spec.iterations,
            )
        for p in group:
            reason = spec.excluded(p)
            if not reason and calib is not None and p is not calib:
                if spec.same_run(p, calib):
                    reason = "the same run as its GPU's calibration point"
            naive = _safe(partial(spec.naive, p))
            if reason and not spec.predict_excluded:
                free = calibrated = math.nan
            else:
                free = _safe(partial(spec.model, p, 0.0))
                calibrated = _safe(partial(spec.model, p, constant))
            if reason:
                role: Role = "excluded"
            elif p is calib:
                role, reason = "calibration", f"{spec.constant} {_us(constant)}"
            else:
                role = "validation"
            out.append(
                Prediction(
                    p,
                    naive,
                    calibrated,
                    role,
                    spec.series(p),
                    reason,
                    constant_free=free,
                )
            )
    return out


def _us(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.2f} µs"


@dataclass(frozen=True)
class ErrorSummary:
    """Error statistics of the validating points of one group (fractions, not %).

    ``*_median`` and ``*_p90`` are of the absolute relative error;
    ``constant_free_signed`` and ``second_order_signed`` are the medians of the
    signed error (above 0: the model predicts more than published).
    ``constants`` counts the calibration points (one per GPU) among the
    group's predictions; ``gpus`` the GPUs its validating points are on.
    """

    group: str
    points: int
    naive_median: float
    naive_p90: float
    second_order_median: float
    second_order_p90: float
    constant_free_median: float = math.nan
    constant_free_p90: float = math.nan
    constants: int = 0
    gpus: int = 0
    constant_free_signed: float = math.nan
    second_order_signed: float = math.nan

    def meets(
        self,
        *,
        median: float = 0.15,
        p90: float = 0.40,
        model: Literal["second_order", "constant_free"] = "second_order",
    ) -> bool:
        """Whether ``model`` meets the targets (median, 90th percentile of the absolute error)."""
        if model == "constant_free":
            return self.constant_free_median <= median and self.constant_free_p90 <= p90
        return self.second_order_median <= median and self.second_order_p90 <= p90


def summarize(
    comparisons: Iterable[Prediction], key: Callable[[Prediction], str]
) -> list[ErrorSummary]:
    """Absolute relative error statistics of the validating predictions, grouped by ``key``."""
    groups: dict[str, list[Prediction]] = defaultdict(list)
    constants: dict[str, int] = defaultdict(int)
    for c in comparisons:
        if c.role == "validation":
            groups[key(c)].append(c)
        elif c.role == "calibration":
            constants[key(c)] += 1
    out = []
    for group, items in groups.items():
        naive = np.abs([c.naive_error for c in items])
        second = np.abs([c.second_order_error for c in items])
        free_signed = np.array([c.constant_free_error for c in items])
        second_signed = np.array([c.second_order_error for c in items])
        free = np.abs(free_signed)
        out.append(
            ErrorSummary(
                group,
                len(items),
                float(np.median(naive)),
                float(np.percentile(naive, 90)),
                float(np.median(second)),
                float(np.percentile(second, 90)),
                float(np.median(free)),
                float(np.percentile(free, 90)),
                constants[group],
                len({_gpu_key(c.point) for c in items}),
                float(np.median(free_signed)),
                float(np.median(second_signed)),
            )
        )
    return out


def with_role(comparisons: Iterable[Prediction], role: Role) -> list[Prediction]:
    """The predictions that play ``role``."""
    return [c for c in comparisons if c.role == role]
