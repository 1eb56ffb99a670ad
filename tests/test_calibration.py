"""Tests of :mod:`helpers.calibration`: the fit recovers known parameters; held-out points are fixed in advance."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from helpers import calibration, ops
from helpers.calibration import Params, Point


def _synthetic(params, model, batches=(1, 2, 4, 8, 16, 32, 64, 128, 256)):
    points = []
    for b in batches:
        c = ops.linear_cost(b, 1024, 1024, dtype="fp32")
        points.append(Point(c.flops, c.bytes, b, 1024, 1, 1.0))
    seconds = calibration.predict(points, params, model=model)
    return [
        Point(p.flops, p.bytes, p.rows, p.cols, p.calls, s)
        for p, s in zip(points, seconds)
    ]


def test_naive_prediction_hand_value():
    """max(F / P, B / W) + t0: a batch-1 1024^2 fp32 layer at 1 GB/s is 4.2 ms of memory plus 1 ms."""
    c = ops.linear_cost(1, 1024, 1024, dtype="fp32")
    p = Point(c.flops, c.bytes, 1, 1024, 1, 1.0)
    t = calibration.predict([p], Params(1e12, 1e9, 1e-3))[0]
    assert_allclose(t, c.bytes / 1e9 + 1e-3)


def test_second_order_pads_rows_and_overlaps():
    """Rows padded to 8: batch 2 costs 8 rows of compute, batch 1 (a GEMV) is not padded; overlap 1 adds the terms."""
    params = Params(1e9, 1e9, 0.0, overlap=1.0, tile_rows=8)
    for batch, rows in ((2, 8), (1, 1)):
        c = ops.linear_cost(batch, 1024, 1024, dtype="fp32")
        p = Point(c.flops, c.bytes, batch, 1024, 1, 1.0)
        t = calibration.predict([p], params, model="second_order")[0]
        assert_allclose(t, rows / batch * c.flops / 1e9 + c.bytes / 1e9)


@pytest.mark.parametrize("model", ["naive", "second_order"])
def test_fit_recovers_parameters(model):
    """Fitted on points the model itself generated, the fit reproduces them within 5 % (median 1 %)."""
    truth = Params(
        5e10,
        1e10,
        2e-5,
        overlap=0.5 if model == "second_order" else 0.0,
        tile_rows=8 if model == "second_order" else 1,
    )
    points = _synthetic(truth, model)
    fitted = calibration.fit(points, model=model)
    err = calibration.relative_errors(
        calibration.predict(points, fitted, model=model), points
    )
    assert np.max(np.abs(err)) < 0.05 and np.median(np.abs(err)) < 0.01


def test_alternate_split():
    """Even positions fit, odd ones are held out; together they cover every point once."""
    assert calibration.alternate_split(5) == ([0, 2, 4], [1, 3])


def test_bad_input():
    """Too few points, or an unknown model, are refused."""
    with pytest.raises(ValueError, match="points"):
        calibration.fit([Point(1.0, 1.0, 1, 1, 1, 1.0)])
    with pytest.raises(ValueError, match="model"):
        calibration.predict([Point(1.0, 1.0, 1, 1, 1, 1.0)], Params(1, 1, 0), model="x")
