"""Whole workloads in :mod:`helpers.validation`: a setting's three predictions beside its published value."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Literal

from ..hardware import get_accelerator
from ..published import Kind, PublishedPoint, load
from . import UNSTATED_PRECISION
from ._kinds import _SPECS, calibrated_constant


@dataclass(frozen=True)
class Workload:
    """One whole workload as the three models predict it, beside a published value where one matches.

    ``roofline`` is the first-order bound (naive); ``constant_free`` and
    ``calibrated`` the second-order models; ``published`` the dataset's
    value for exactly this setting (NaN if none). Units: those of the kind
    (images/s for ResNet-50, tokens/s or s for decode).
    """

    kind: Kind
    gpu: str
    label: str
    unit: str
    roofline: float
    constant_free: float
    calibrated: float
    published: float


def predict_workload(
    kind: Literal["resnet50", "decode"], gpu: str, **setting: object
) -> Workload:
    """The three models' prediction for a setting of ``kind`` on ``gpu``, with a matching published value.

    ``setting`` holds the kind's CSV columns: for ``resnet50`` ``batch``,
    ``precision``, ``framework`` (``"PyTorch"`` by default) and optionally
    ``image_size``; for ``decode`` ``model``, ``batch``, ``input_len``,
    ``output_len``, ``num_gpus``, ``precision``, ``quantity`` (``"throughput"``
    by default) and ``framework``. The calibrated model uses ``gpu``'s one
    constant for ``kind`` (:func:`calibrated_constant`).

    >>> w = predict_workload("resnet50", "T4", batch=64, precision="fp16")
    >>> round(w.published), round(w.roofline) > 3 * round(w.published)
    (1165, True)
    """
    name = get_accelerator(gpu).name
    cols = {k: str(v) for k, v in setting.items()}
    precision = cols.pop("precision", "fp16")
    quantity = cols.pop("quantity", "throughput")
    if kind == "resnet50":
        cols.setdefault("framework", "PyTorch")
        cols.setdefault("image_size", "224")
        unit = "images/s"
    elif kind == "decode":
        cols.setdefault("framework", "")
        cols.setdefault("num_gpus", "1")
        cols.setdefault("output_len", "")
        unit = "s" if quantity.endswith("latency") else "tokens/s"
    else:
        raise ValueError(f"kind must be 'resnet50' or 'decode', got {kind!r}")
    point = PublishedPoint(
        kind,
        name,
        precision,
        quantity,
        1.0,
        unit,
        cols,
        source="https://model.invalid",
        locator="predicted",
    )
    spec = _SPECS[kind]
    published = [
        p.value
        for p in load(kind, gpu=name)
        if (p.precision or UNSTATED_PRECISION) == precision
        and p.quantity == quantity
        and all(p.setting.get(k) == v for k, v in cols.items() if v)
    ]
    return Workload(
        kind,
        name,
        point.label,
        unit,
        spec.naive(point),
        spec.model(point, 0.0),
        spec.model(point, calibrated_constant(kind, name)),
        statistics.median(published) if published else math.nan,
    )
