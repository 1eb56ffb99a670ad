"""Tests of the published GPU measurements (helpers.published) and the model's check against them (helpers.validation).

Hand-derived values: the H100 SXM's achievable fractions from its MAMF and
BabelStream rows (794.5 of 989.4 TFLOP/s bf16, 3.18 of 3.35 TB/s); one
DeepGEMM row's unit conversion; the second-order GEMM time of one shape.
"""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from helpers import ops, published, roofline, validation
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
            p.precision is None or p.precision in DTYPE_BYTES or p.precision == "int4"
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
        published.Measurement(**base, source="http://example.com", locator="table 1")
    with pytest.raises(ValueError, match="locator"):
        published.Measurement(**base, source="https://example.com", locator="")
    with pytest.raises(ValueError, match="value"):
        published.Measurement(
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


def test_h100_fractions_by_hand() -> None:
    """MAMF bf16 794.5 / 989.4 = 0.803; BabelStream's best 3.18 TB/s / 3.35 = 0.949; fp8 MAMF 1402.6 / 1978.9 = 0.709."""
    c, m = validation.fractions("H100 SXM", "bf16")
    assert_allclose(c, 794.5 / 989.4, rtol=1e-12)
    assert_allclose(m, 3.18 / 3.35, rtol=1e-12)
    assert_allclose(
        validation.fractions("H100 SXM", "fp8")[0], 1402.6 / 1978.9, rtol=1e-12
    )


def test_a_gpu_without_peak_rows_takes_the_others_median() -> None:
    """The H800 SXM has no matmul row: its fp8 fraction is the median of the H100's and H200's fp8 MAMF."""
    c, _ = validation.fractions("H800 SXM", "fp8")
    assert_allclose(c, (1402.6 / 1978.9 + 1453.4 / 1978.9) / 2, rtol=1e-12)


@pytest.mark.parametrize("kind", published.KINDS)
def test_every_point_is_compared_once_with_one_calibration_per_series(
    kind: str,
) -> None:
    comparisons = validation.compare(kind)
    assert len(comparisons) == len(published.load(kind))
    series: dict[str, int] = {}
    for c in comparisons:
        series.setdefault(c.series, 0)
        if c.role == "calibration":
            series[c.series] += 1
        if c.role != "excluded":
            assert c.naive > 0 and c.second_order > 0
    assert all(n <= 1 for n in series.values())


def test_calibration_points_are_reproduced_and_mamf_rows_never_validate() -> None:
    for kind in ("gemm", "resnet50", "decode", "kv_transfer"):
        for c in validation.with_role(validation.compare(kind), "calibration"):
            # the fixed cost solves for the point, unless the model is already slower without it
            assert c.second_order_error == pytest.approx(0, abs=1e-6) or (
                "0.00" in c.reason or " 0.0 " in c.reason
            ), (kind, c.series, c.reason, c.second_order_error)
    for c in validation.compare("gemm"):
        if "ml-engineering" in c.point.source:
            assert c.role == "excluded"


def test_one_gemm_prediction_by_hand() -> None:
    """A validating GEMM's prediction is ops.gemm_time on the derated H100 plus its series' fixed cost.

    The point is cuBLASLt's 128 x 2112 x 7168 bf16 product, published as a
    time; the fixed cost is read back from the calibration point's reason
    (printed to 0.01 us, hence the tolerance).
    """
    (c,) = [
        c
        for c in validation.compare("gemm")
        if c.point.gpu == "H100 SXM"
        and c.point.label == "128 x 2112 x 7168, bf16"
        and c.point.software.startswith("cuBLASLt")
    ]
    assert c.role == "validation" and c.point.unit == "s"
    (cal,) = [
        k
        for k in validation.compare("gemm")
        if k.series == c.series and k.role == "calibration"
    ]
    overhead = float(re.search(r"([\d.]+) us", cal.reason)[1]) * 1e-6
    m, n, k = 128, 2112, 7168
    frac_c, frac_m = validation.fractions("H100 SXM", "bf16")
    device = roofline.achievable(
        "H100 SXM", compute_fraction=frac_c, memory_fraction=frac_m
    )
    t = ops.gemm_time(m, n, k, device, dtype="bf16", overhead=overhead)
    assert_allclose(c.second_order, t, rtol=1e-3)
    naive = roofline.roofline_time(
        2 * m * n * k, 2 * (m * k + k * n + m * n), "H100 SXM", dtype="bf16"
    )
    assert_allclose(c.naive, naive, rtol=1e-12)


def test_summaries_are_computed_from_the_validation_points() -> None:
    comparisons = validation.compare("gemm")
    (overall,) = validation.summarize(comparisons, key=lambda c: "all")
    valid = validation.with_role(comparisons, "validation")
    assert overall.points == len(valid)
    errors = sorted(abs(c.second_order_error) for c in valid)
    assert overall.second_order_median == pytest.approx(
        (errors[(len(errors) - 1) // 2] + errors[len(errors) // 2]) / 2
    )
    assert overall.meets(median=1.0, p90=10.0)
    assert not overall.meets(median=0.0, p90=0.0)


@given(st.integers(1, 2**40))
def test_message_bytes_reads_plain_integers(n: int) -> None:
    assert validation.message_bytes(f"{n} (printed)") == n


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("128 KB", 2**17),
        ("2 MB", 2**21),
        ("1.13 GB (total KV)", 1.13e9),
        ("64 MiB", 2**26),
    ],
)
def test_message_bytes_reads_units(text: str, expected: float) -> None:
    assert validation.message_bytes(text) == pytest.approx(expected)


def test_message_bytes_rejects_text_without_a_size() -> None:
    with pytest.raises(ValueError, match="message_bytes"):
        validation.message_bytes("a lot")


def test_compare_rejects_an_unknown_kind() -> None:
    with pytest.raises(ValueError, match="kind"):
        validation.compare("conv")  # type: ignore[arg-type]


def test_labels_describe_each_kind() -> None:
    labels = {p.kind: p.label for p in published.load()}
    assert re.fullmatch(r"\d+ x \d+ x \d+( x \d+ groups)?, \w+", labels["gemm"])
    assert re.fullmatch(r"batch \d+, \w+", labels["resnet50"])
    assert "batch" in labels["decode"] and "tokens" in labels["decode"]
    assert labels["kv_transfer"].endswith("messages")


def test_counts_table_adds_up() -> None:
    table = published.counts_markdown()
    last = table.splitlines()[-1]
    assert last.startswith("| all |")
    assert last.rstrip(" |").split("|")[-1].strip() == str(len(published.load()))


def test_fp16_and_bf16_share_a_fraction() -> None:
    assert validation.fractions("H100 SXM", "fp16") == validation.fractions(
        "H100 SXM", "bf16"
    )
    assert validation.fractions("H100 SXM", "int8") == validation.fractions(
        "H100 SXM", "fp8"
    )


def test_targets_table_agrees_with_the_summaries() -> None:
    table = validation.targets_markdown()
    for kind in published.KINDS:
        (g,) = validation.summarize(validation.compare(kind), key=lambda c: "all")
        (line,) = [row for row in table.splitlines() if row.startswith(f"| {kind} |")]
        assert line.rstrip(" |").endswith("met" if g.meets() else "missed")
        assert f"| {g.points} |" in line


def test_peaks_are_predicted_from_other_architectures() -> None:
    """H100 bf16, leave-one-architecture-out: the median of the non-Hopper 16-bit fractions, by hand.

    A100 (MAMF) 271.2 / 312; L4 66 / 121; RTX 4090 173.31 / 165.2 (above its
    datasheet); T4 25 / 65. The median of four is the mean of the middle two.
    """
    c, _ = validation.fractions("H100 SXM", "bf16", exclude_architecture=True)
    assert_allclose(c, (66 / 121 + 271.2 / 312) / 2, rtol=1e-12)


def test_excluded_decode_points_say_why_and_capacity_is_the_books() -> None:
    from helpers import inference

    for c in validation.compare("decode"):
        if c.role != "excluded":
            continue
        assert c.reason
        if "do not fit" in c.reason:
            p = c.point
            context = p.integer("input_len") + p.integer("output_len")
            fits = inference.max_decode_batch(
                p.setting["model"],
                context,
                p.gpu,
                n_gpus=p.integer("num_gpus"),
                dtype=p.precision or "fp16",
            )
            assert p.integer("batch") > fits


def test_kv_series_with_one_message_size_do_not_validate() -> None:
    comparisons = validation.compare("kv_transfer")
    sizes: dict[str, set[float]] = {}
    for c in comparisons:
        sizes.setdefault(c.series, set()).add(
            validation.message_bytes(c.point.setting["message_bytes"])
        )
    for c in validation.with_role(comparisons, "validation"):
        assert len(sizes[c.series]) > 1
