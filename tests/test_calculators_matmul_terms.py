"""Tests for :mod:`helpers.calculators.matmul_terms`: Chapter ``below_roofline``'s calculator adds the model's terms in turn."""

from __future__ import annotations

import pytest
from numpy.testing import assert_allclose

from helpers import calculators as kt
from helpers import dispatch, validation


def test_roofline_term_is_the_hand_derived_bound():
    """A 1024-cube in fp16 on an H100 is compute-bound: 2 * 1024**3 / 989.4e12 = 2.17 us."""
    assert_allclose(kt.matmul_terms_s(1024, "H100", "fp16")[0], 2 * 1024**3 / 989.4e12)


def test_terms_only_add_time():
    """Each term adds time: the floor exactly kernel_floor, the last exactly the fitted constant."""
    for n in (256, 1024, 8192):
        roof, tiled, floor, library = kt.matmul_terms_s(n, "H100", "fp16")
        assert roof <= tiled
        assert_allclose(floor - tiled, dispatch.kernel_floor("H100"))
        assert_allclose(
            library - floor, validation.calibrated_constant("gemm", "H100 SXM")
        )


def test_model_follows_published_cublas_it_was_not_fitted_on():
    """H100 cuBLAS 1024-cube fp16: 178.01 TFLOP/s published, 12.06 us; the full model is within 10 %."""
    measured = 2 * 1024**3 / 178.01e12
    assert abs(kt.matmul_terms_s(1024, "H100", "fp16")[-1] / measured - 1) < 0.10


def test_default_summary_lists_the_four_terms(ax):
    text = kt.render_matmul_terms(ax, **kt.matmul_terms().values())
    for label in kt.TERMS:
        assert f"| {label} |" in text
    assert "No published" not in text


def test_gpu_without_published_gemms_says_so(ax):
    """The T4 has no published GEMM in the dataset: no library constant, and the summary says both."""
    text = kt.render_matmul_terms(ax, "T4", "fp16", 1024)
    assert "No published square GEMM" in text and "fixed cost per call is 0" in text


def test_bad_inputs_are_named():
    with pytest.raises(KeyError, match="dtype"):
        kt.matmul_terms_s(1024, "T4", "fp8")
    with pytest.raises(ValueError, match="n"):
        kt.matmul_terms_s(0, "H100", "fp16")
