"""Tests of the model's check against published GPU measurements (helpers.validation).

Hand-derived values: the H100 SXM's achievable fractions from its MAMF and
BabelStream rows (794.5 of 989.4 TFLOP/s bf16, 3.18 of 3.35 TB/s); a batched
GEMM row and a decode row worked by hand (code.md K16); the calibration rule
(one constant per GPU and kind); and a property that adding a term never makes
a prediction faster.
"""

from __future__ import annotations

import math
import re
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from helpers import dispatch, inference, ops, published, roofline, serving, validation


@pytest.mark.parametrize("kind", published.KINDS)
def test_every_point_is_predicted_once_with_one_constant_per_gpu(kind: str) -> None:
    """At most one calibration point per GPU and kind; every non-excluded point has three positive predictions
    (two for the engine kinds, which have no naive model: NaN there)."""
    comparisons = validation.compare(kind)
    assert len(comparisons) == len(published.load(kind))
    per_gpu: dict[str, int] = {}
    for c in comparisons:
        gpu = c.point.gpu or "host memory"
        per_gpu.setdefault(gpu, 0)
        if c.role == "calibration":
            per_gpu[gpu] += 1
        if c.role != "excluded":
            assert c.second_order > 0 and c.constant_free > 0
            if kind in ("serving", "ttft"):
                assert math.isnan(c.naive)
            else:
                assert c.naive > 0
    assert all(n <= 1 for n in per_gpu.values())
    if kind == "peak":
        assert sum(per_gpu.values()) == 0


def test_calibration_points_are_reproduced_and_the_constant_only_slows() -> None:
    """The constant solves its point (unless the model is already slower without it), and is never negative:
    the calibrated model is never faster than the constant-free one."""
    for kind in ("gemm", "resnet50", "decode", "kv_transfer", "serving", "ttft"):
        comparisons = validation.compare(kind)
        for c in validation.with_role(comparisons, "calibration"):
            # the engine kinds bisect their constant in 12 steps (a prediction costs a simulation)
            tol = 1e-3 if kind in ("serving", "ttft") else 1e-6
            assert c.second_order_error == pytest.approx(0, abs=tol) or (
                " 0.00 " in c.reason + " "
            ), (kind, c.series, c.reason, c.second_order_error)
        for c in validation.with_role(comparisons, "validation"):
            assert c.speed_ratio("second_order") <= c.speed_ratio("constant_free") * (
                1 + 1e-12
            )
    for c in validation.compare("gemm"):
        if "ml-engineering" in c.point.source:
            assert c.role == "excluded"


def _constant(kind: str, gpu: str) -> float:
    """The calibrated constant of ``gpu`` for ``kind``, read back from its calibration point (printed to 0.01)."""
    (cal,) = [
        c
        for c in validation.with_role(validation.compare(kind), "calibration")
        if c.point.gpu == gpu
    ]
    value, unit = re.search(r"([\d.]+) (µs|ms)", cal.reason).groups()
    return float(value) * (1e-6 if unit == "µs" else 1e-3)


def test_one_gemm_prediction_by_hand() -> None:
    """cuBLASLt's 128 x 2112 x 7168 bf16 product on the H100, published as a time.

    Constant-free: ops.gemm_time on the derated H100 (794.5/989.4 of the matmul peak,
    3.18/3.35 of the bandwidth) plus the GPU-side floor, 1.84 us. Calibrated: plus the
    H100's one GEMM constant. Naive: 2mnk FLOP and (mk + kn + mn) * 2 bytes on the datasheet.
    """
    (c,) = [
        c
        for c in validation.compare("gemm")
        if c.point.gpu == "H100 SXM"
        and c.point.label == "128 x 2112 x 7168, bf16"
        and c.point.software.startswith("cuBLASLt")
    ]
    assert c.role == "validation" and c.point.unit == "s"
    m, n, k = 128, 2112, 7168
    device = roofline.achievable(
        "H100 SXM", compute_fraction=794.5 / 989.4, memory_fraction=3.18 / 3.35
    )
    free = ops.gemm_time(m, n, k, device, dtype="bf16", overhead=1.84e-6)
    assert_allclose(c.constant_free, free, rtol=1e-12)
    calibrated = ops.gemm_time(
        m, n, k, device, dtype="bf16", overhead=1.84e-6 + _constant("gemm", "H100 SXM")
    )
    assert_allclose(c.second_order, calibrated, rtol=1e-3)
    naive = roofline.roofline_time(
        2 * m * n * k, 2 * (m * k + k * n + m * n), "H100 SXM", dtype="bf16"
    )
    assert_allclose(c.naive, naive, rtol=1e-12)


def test_batched_gemm_row_by_hand() -> None:
    """K16: DeepGEMM's grouped 8192 x 4096 x 7168 fp8 product, 4 groups, on the H800, published as FLOP/s.

    FLOP: 2 * 8192 * 4096 * 7168 * 4 = 1.9241e12 (the 4 groups count). Bytes per group: fp8 A and B,
    (8192*7168 + 7168*4096) * 1, bf16 C 8192*4096*2 = 155,189,248; x 4. The H800 has no peak rows of
    its own: it takes the other GPUs' fp8 median, the middle of H100 1402.6/1978.9 = 0.709, GB200 3615.6/5000 = 0.723,
    H200 1453.4/1978.9 = 0.734, B300 3353.3/4500 = 0.745 and B200 3432.5/4500 = 0.763, and their bandwidth median.
    Constant-free rate = FLOP / ops.gemm_time(..., batch=4, overhead=1.84 us). Dropping the batch from
    the FLOP count would predict a quarter of this rate.
    """
    (c,) = [
        c
        for c in validation.compare("gemm")
        if c.point.gpu == "H800 SXM"
        and c.point.label == "8192 x 4096 x 7168 x 4 groups, fp8"
    ]
    flops = 2 * 8192 * 4096 * 7168 * 4
    frac_c, frac_m = validation.fractions("H800 SXM", "fp8")
    assert_allclose(frac_c, 1453.4 / 1978.9, rtol=1e-12)
    device = roofline.achievable(
        "H800 SXM", compute_fraction=frac_c, memory_fraction=frac_m
    )
    seconds = ops.gemm_time(
        8192,
        4096,
        7168,
        device,
        dtype="fp8",
        batch=4,
        out_dtype="bf16",
        overhead=1.84e-6,
    )
    assert_allclose(c.constant_free, flops / seconds, rtol=1e-12)
    naive_s = roofline.roofline_time(flops, 4 * 155_189_248, "H800 SXM", dtype="fp8")
    assert_allclose(c.naive, flops / naive_s, rtol=1e-12)


def test_decode_row_by_hand() -> None:
    """K16: NeMo/TensorRT-LLM, Llama-2-7B on one A100 80GB, batch 4, 128 prompt tokens, 20 generated, fp16,
    end-to-end latency 0.2726 s.

    The prefill emits the first token and each of the other 19 takes a decode step at the mean context
    128 + 20 // 2 = 138 cached tokens (not 128 + 20 = 148). Every step and the prefill also pay the
    GPU floor of 9 * 32 + 3 = 291 kernels, 291 * 1.84 us; one GPU, so no all-reduce.
    Constant-free e2e = prefill + 19 * step; the calibrated model adds the A100's decode constant to each.
    """
    (c,) = [
        c
        for c in validation.compare("decode")
        if c.point.gpu == "A100 SXM4 80GB"
        and c.point.label == "llama-2-7b, batch 4, 128->20 tokens, e2e latency"
        and "NeMo" in c.series
    ]
    assert c.role == "validation" and c.point.value == pytest.approx(0.2726)
    acc = validation.achievable_device("A100 SXM4 80GB", "fp16")
    floor = 291 * 1.84e-6
    prefill = inference.prefill_step(
        "llama-2-7b", 128, acc, batch=4, dtype="fp16"
    ).seconds
    step = inference.decode_step("llama-2-7b", 138, acc, batch=4, dtype="fp16").seconds
    assert_allclose(c.constant_free, prefill + floor + 19 * (step + floor), rtol=1e-12)
    k = _constant("decode", "A100 SXM4 80GB")
    assert_allclose(
        c.second_order, prefill + floor + k + 19 * (step + floor + k), rtol=1e-3
    )
    naive = (
        inference.prefill_step(
            "llama-2-7b", 128, "A100 SXM4 80GB", batch=4, dtype="fp16"
        ).seconds
        + 19
        * inference.decode_step(
            "llama-2-7b", 138, "A100 SXM4 80GB", batch=4, dtype="fp16"
        ).seconds
    )
    assert_allclose(c.naive, naive, rtol=1e-12)


def test_no_validating_point_shares_its_gpus_calibration_run() -> None:
    """A point from the same run (decode) or the same link and message size (KV) as its GPU's calibration
    point would test the constant on itself: such points are excluded."""
    for kind in ("decode", "kv_transfer"):
        comparisons = validation.compare(kind)
        calib = {
            c.point.gpu: c for c in validation.with_role(comparisons, "calibration")
        }
        for c in validation.with_role(comparisons, "validation"):
            cal = calib[c.point.gpu]
            if kind == "kv_transfer":
                assert not (
                    c.series == cal.series
                    and c.point.setting["message_bytes"]
                    == cal.point.setting["message_bytes"]
                )
            else:
                assert validation._run(c.point) != validation._run(cal.point)


def test_the_constant_search_checks_its_bracket() -> None:
    assert validation._solve_constant(lambda k: 1.0 + k, 3.0, hi=0.5) == pytest.approx(
        2.0
    )
    assert validation._solve_constant(lambda k: 5.0 + k, 3.0, hi=1.0) == 0.0
    with pytest.raises(ValueError, match="constant"):
        validation._solve_constant(lambda k: 1.0, 3.0, hi=1.0)


def test_old_names_warn() -> None:
    with pytest.warns(DeprecationWarning, match="Prediction"):
        assert validation.Comparison is validation.Prediction
    with pytest.warns(DeprecationWarning, match="PublishedPoint"):
        assert published.Measurement is published.PublishedPoint
    with pytest.warns(DeprecationWarning, match="reports"):
        validation.targets_markdown  # noqa: B018
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        validation.Prediction  # noqa: B018


@settings(max_examples=60, deadline=None)
@given(
    batch=st.integers(1, 256),
    context=st.integers(0, 8192),
    n_gpus=st.sampled_from([1, 2, 4, 8]),
    chunk=st.integers(1, 4096),
    prefix=st.integers(0, 16384),
    floor=st.floats(0, 1e-5),
    gpu=st.sampled_from(["H100", "A100 SXM4 80GB", "A800", "L4"]),
)
def test_adding_a_term_never_makes_a_prediction_faster(
    batch, context, n_gpus, chunk, prefix, floor, gpu
) -> None:
    """Communication, a kernel floor, attention over earlier chunks and a constant only ever add time."""
    m = "llama-3-8b"
    bare = inference.decode_step(m, context, gpu, batch=batch, n_gpus=n_gpus, link=None)
    full = inference.decode_step(m, context, gpu, batch=batch, n_gpus=n_gpus)
    assert full.seconds >= bare.seconds
    assert inference.prefill_time(
        m, chunk, gpu, n_gpus=n_gpus
    ) >= inference.prefill_time(m, chunk, gpu, n_gpus=n_gpus, link=None)
    first = serving.colocated_step_time(
        m, context, gpu, batch=batch, chunk=chunk, n_gpus=n_gpus
    )
    later = serving.colocated_step_time(
        m, context, gpu, batch=batch, chunk=chunk, prefix=prefix, n_gpus=n_gpus
    )
    assert later >= first
    kernels = [1e-6 * (i % 7) for i in range(40)]
    assert dispatch.stream_time(
        kernels, 2e-6, kernel_floor_s=floor
    ) >= dispatch.stream_time(kernels, 2e-6)
    # the calibrated GEMM model is the constant-free one plus a constant >= 0
    p = validation.compare("gemm")[0].point
    assert validation._gemm_model(p, 0.0) >= validation._gemm_model(p, floor)
    assert not math.isnan(full.seconds)


def test_h100_fractions_by_hand() -> None:
    """MAMF bf16 794.5 / 989.4 = 0.803; BabelStream's best 3.18 TB/s / 3.35 = 0.949; fp8 MAMF 1402.6 / 1978.9 = 0.709."""
    c, m = validation.fractions("H100 SXM", "bf16")
    assert_allclose(c, 794.5 / 989.4, rtol=1e-12)
    assert_allclose(m, 3.18 / 3.35, rtol=1e-12)
    assert_allclose(
        validation.fractions("H100 SXM", "fp8")[0], 1402.6 / 1978.9, rtol=1e-12
    )


def test_a_gpu_without_peak_rows_takes_the_others_median() -> None:
    """The H800 SXM has no matmul row: its fp8 fraction is the median of the other GPUs' fp8 MAMF
    (H100 0.709, GB200 0.723, H200 0.734, B300 0.745, B200 0.763: the H200's)."""
    c, _ = validation.fractions("H800 SXM", "fp8")
    assert_allclose(c, 1453.4 / 1978.9, rtol=1e-12)


def test_blackwell_and_cdna3_take_their_own_published_matmul_share() -> None:
    """MAMF bf16: B200 1745.0 / 2250, GB200 1822.0 / 2500, MI300X 668.4 / 1307.4 (the catalog's
    datasheet peak; the source's 1300 gives its 51.4 %); fp8: B200 3432.5 / 4500."""
    assert_allclose(validation.fractions("B200", "bf16")[0], 1745.0 / 2250, rtol=1e-12)
    assert_allclose(validation.fractions("B200", "fp8")[0], 3432.5 / 4500, rtol=1e-12)
    assert_allclose(
        validation.fractions("GB200 (per GPU)", "bf16")[0], 1822.0 / 2500, rtol=1e-12
    )
    assert_allclose(
        validation.fractions("MI300X", "bf16")[0], 668.4 / 1307.4, rtol=1e-12
    )


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


def test_fp16_and_bf16_share_a_fraction() -> None:
    assert validation.fractions("H100 SXM", "fp16") == validation.fractions(
        "H100 SXM", "bf16"
    )
    assert validation.fractions("H100 SXM", "int8") == validation.fractions(
        "H100 SXM", "fp8"
    )


def test_peaks_are_predicted_from_other_architectures() -> None:
    """H100 bf16, leave-one-architecture-out: the median of the non-Hopper 16-bit fractions, by hand.

    A100 (MAMF) 271.2 / 312 = 0.869; L4 66 / 121 = 0.545; RTX 4090 173.31 / 165.2 (above its
    datasheet); T4 25 / 65 = 0.385; MI300X 668.4 / 1307.4 = 0.511; MI325X 784.9 / 1307.4 = 0.600;
    GB200 1822 / 2500 = 0.729; B200 1745 / 2250 = 0.776; B300 1769 / 2250 = 0.786. The median
    of nine is the fifth, the GB200's.
    """
    c, _ = validation.fractions("H100 SXM", "bf16", exclude_architecture=True)
    assert_allclose(c, 1822 / 2500, rtol=1e-12)


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


def test_predict_workload_t4_resnet_by_the_published_table() -> None:
    """G2: ResNet-50 on a T4, batch 64, fp16. NVIDIA's DeepLearningExamples table gives 1,165 images/s
    (PyTorch AMP). The first-order roofline is a bound several times above it; the constant-free
    second-order model (38 % of the fp16 peak, the T4's published matmul share) lands within 5 %."""
    w = validation.predict_workload("resnet50", "T4", batch=64, precision="fp16")
    assert w.published == 1165
    assert w.roofline > 4 * w.published
    assert abs(w.constant_free / w.published - 1) < 0.05
    assert w.calibrated <= w.constant_free
    with pytest.raises(ValueError, match="kind"):
        validation.predict_workload("gemm", "T4")  # type: ignore[arg-type]


def test_implied_constant_reproduces_its_point_and_the_calibrated_one() -> None:
    for kind in ("gemm", "resnet50", "decode"):
        for c in validation.with_role(validation.compare(kind), "calibration"):
            assert validation.implied_constant(
                c.point
            ) == validation.calibrated_constant(kind, c.point.gpu)
    assert validation.calibrated_constant("gemm", "T4") == 0.0
