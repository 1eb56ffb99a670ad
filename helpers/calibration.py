"""Fitting a time model's parameters on some measurements and testing it on the others.

Two models of a kernel's time, both with parameters fitted to measured times:

* ``"naive"`` -- the first-order roofline plus overhead,
  ``t = max(F / P, B / W) + calls * t0``: parameters ``P`` (FLOP/s),
  ``W`` (bytes/s), ``t0`` (s);
* ``"second_order"`` -- what real hardware adds, one term each:
  the compute term runs at ``P * e``, where ``e`` is the tile efficiency of
  the GEMM's rows and columns (:func:`helpers.ops.tile_efficiency`, rows
  padded to ``tile_rows``) times the wave utilization on a GPU with a known
  SM count (:func:`helpers.ops.gemm_utilization`); a single row is a
  matrix-vector product, which BLAS libraries (MKL, cuBLAS) run as an
  untiled GEMV, so it is not padded; the two terms overlap
  imperfectly, ``max(c, m) + overlap * min(c, m)`` with ``overlap`` in [0, 1]
  (0: the roofline's perfect overlap, 1: their sum, the upper bound of
  :func:`helpers.roofline.overlap_bounds`); a GEMM with more than one row
  also moves its weights ``pack_passes`` more times (CPU BLAS and oneDNN
  copy the weight matrix into their blocked layout on every eager call;
  on a GPU the fit finds this near 0); plus ``calls * t0``.

``P`` and ``W`` are the *achievable* ceilings (what the fit finds, not the
datasheet's), which is how the achievable fraction of peak enters.
:func:`fit` minimises the mean absolute log error on the points given;
:func:`alternate_split` picks held-out points by a fixed rule, so nothing is
tuned to them. Units: seconds, FLOP, bytes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from . import _args
from .hardware import Accelerator
from .ops import gemm_utilization, tile_efficiency

Model = Literal["naive", "second_order"]
TILE_ROWS = (1, 2, 4, 8, 16, 32, 64, 128)
"""Row tile heights :func:`fit` tries for the second-order model."""


@dataclass(frozen=True)
class Point:
    """One measured kernel (or short sequence of kernels).

    Attributes
    ----------
    flops, bytes : float
        Work and ideal memory traffic (FLOP, bytes).
    rows, cols : int
        The GEMM's output rows ``M`` (the batch for a linear layer, ``N P Q``
        for a convolution) and columns (output features or filters).
    calls : int
        Framework calls (kernels) in the measurement, each paying ``t0``.
    seconds : float
        Measured time (s).
    weight_bytes : float
        The part of ``bytes`` read once per call whatever the batch (weights,
        filters), in bytes.
    """

    flops: float
    bytes: float
    rows: int
    cols: int
    calls: int
    seconds: float
    weight_bytes: float = 0.0


@dataclass(frozen=True)
class Params:
    """Fitted parameters of :func:`predict`.

    ``peak`` FLOP/s, ``bandwidth`` bytes/s, ``overhead`` seconds per call;
    for the second-order model also ``overlap`` (0 to 1), ``tile_rows`` and
    ``pack_passes`` (extra passes over the weights of a GEMM, >= 0).
    """

    peak: float
    bandwidth: float
    overhead: float
    overlap: float = 0.0
    tile_rows: int = 1
    pack_passes: float = 0.0


def _efficiency(
    points: Sequence[Point], tile_rows: int, acc: Accelerator | None, tile_cols: int
) -> np.ndarray:
    """Compute efficiency of each point's GEMM: tile padding times wave utilization (1 for a GEMV)."""
    out = []
    for p in points:
        e = 1.0
        if p.rows > 1:  # a GEMV (one row) is not tiled
            tile = (tile_rows, tile_cols)
            e = tile_efficiency(p.rows, p.cols, tile=tile)
            if acc is not None and acc.sm_count is not None:
                e *= gemm_utilization(p.rows, p.cols, acc, tile=tile)
        out.append(e)
    return np.array(out)


def _times(
    arrays: tuple[np.ndarray, ...], params: Params, model: Model, e: np.ndarray
) -> np.ndarray:
    flops, nbytes, calls, weights, gemm = arrays
    compute = flops / params.peak
    memory = nbytes / params.bandwidth
    if model == "naive":
        t = np.maximum(compute, memory)
    else:
        compute = compute / e
        memory = memory + gemm * params.pack_passes * weights / params.bandwidth
        low, high = np.maximum(compute, memory), np.minimum(compute, memory)
        t = low + params.overlap * high
    return t + calls * params.overhead


def _arrays(points: Sequence[Point]) -> tuple[np.ndarray, ...]:
    columns = tuple(
        np.array([getattr(p, f) for p in points], dtype=float)
        for f in ("flops", "bytes", "calls", "weight_bytes")
    )
    return (*columns, np.array([float(p.rows > 1) for p in points]))


def predict(
    points: Sequence[Point],
    params: Params,
    *,
    model: Model = "naive",
    acc: Accelerator | None = None,
    tile_cols: int = 1,
) -> np.ndarray:
    """Predicted seconds of each point under ``model`` with ``params``.

    ``acc`` (a device with an SM count) adds wave quantization over
    ``tile_rows x tile_cols`` tiles to the second-order model; without it
    (a CPU) only the padding of the rows counts.
    """
    if model not in ("naive", "second_order"):
        raise ValueError(f"model must be 'naive' or 'second_order', got {model!r}")
    e = _efficiency(points, params.tile_rows, acc, tile_cols)
    return _times(_arrays(points), params, model, e)


_MOVES = (
    {"peak": 1},
    {"bandwidth": 1},
    {"overhead": 1},
    {"peak": 1, "bandwidth": 1},
    {"peak": 1, "bandwidth": -1},
    {"peak": 1, "overhead": 1},
    {"bandwidth": 1, "overhead": 1},
)
"""Moves of the coordinate search: exponents of the step for each parameter (single and paired)."""


def fit(
    points: Sequence[Point],
    *,
    model: Model = "naive",
    acc: Accelerator | None = None,
    tile_cols: int = 1,
    rounds: int = 60,
) -> Params:
    """Parameters minimising the mean ``|log(predicted / measured)|`` over ``points``.

    Deterministic coordinate search from three starting overheads: the
    continuous parameters, alone and in pairs, are scaled by factors that
    shrink each round, ``overlap`` is stepped within [0, 1]; the
    second-order model also tries every row tile height in
    :data:`TILE_ROWS`. Starts from the best achieved FLOP/s and bytes/s.
    """
    points = list(points)
    if len(points) < 3:
        raise ValueError(f"points must hold at least 3 measurements, got {len(points)}")
    rounds = _args.positive_int("rounds", rounds)
    arrays = _arrays(points)
    measured = np.array([p.seconds for p in points])
    shortest = min(p.seconds / p.calls for p in points)
    heights = TILE_ROWS if model == "second_order" else (1,)
    best, best_loss = None, math.inf
    for rows in heights:
        e = _efficiency(points, rows, acc, tile_cols)

        def loss_of(params: Params, e: np.ndarray = e) -> float:
            return float(
                np.mean(np.abs(np.log(_times(arrays, params, model, e) / measured)))
            )

        for share in (0.01, 0.1, 0.5):
            params = Params(
                peak=max(p.flops / p.seconds for p in points),
                bandwidth=max(p.bytes / p.seconds for p in points),
                overhead=share * shortest,
                tile_rows=rows,
            )
            loss = loss_of(params)
            step = 2.0
            for _ in range(rounds):
                trials = [
                    replace(
                        params,
                        **{n: getattr(params, n) * f**k for n, k in move.items()},
                    )
                    for move in _MOVES
                    for f in (step, 1 / step)
                ]
                if model == "second_order":
                    trials += [
                        replace(params, pack_passes=max(0.0, params.pack_passes + d))
                        for d in (-0.2 * step, 0.2 * step, -0.2, 0.2)
                    ]
                    trials += [
                        replace(
                            params,
                            overlap=float(min(1.0, max(0.0, params.overlap + d))),
                        )
                        for d in (-0.1 * step, 0.1 * step, -0.1, 0.1)
                    ]
                for trial in trials:
                    trial_loss = loss_of(trial)
                    if trial_loss < loss:
                        params, loss = trial, trial_loss
                step = max(1.002, step**0.9)
            if loss < best_loss:
                best, best_loss = params, loss
    assert best is not None
    return best


def alternate_split(n: int) -> tuple[list[int], list[int]]:
    """Indices ``(fit, held_out)`` of ``n`` points in batch order: even positions fit, odd ones are held out.

    Fixed before any model is fitted; the first and last batches of a sweep
    of odd length are both fitted, so held-out points interpolate.
    """
    n = _args.positive_int("n", n)
    return list(range(0, n, 2)), list(range(1, n, 2))


def relative_errors(predicted: np.ndarray, points: Sequence[Point]) -> np.ndarray:
    """``(predicted - measured) / measured`` per point."""
    measured = np.array([p.seconds for p in points])
    return (np.asarray(predicted) - measured) / measured
