"""Tests of :mod:`helpers.calculators.rooflines`, the calculator of the chapter ``roofline``.

Its default, its controls, and bad input shown as a message (``rooflines`` at defaults is also
checked against its controls by ``tests/test_calculators.py``).
"""

from __future__ import annotations

from helpers import calculators


def test_rooflines_default_table():
    """T4 and H100 in fp16. A batch-256 4096 x 4096 layer has intensity
    2 * 256 * 4096**2 / (2 * 4096**2 + 2 * 256 * 8192) = 228 FLOP/byte: above the T4's ridge (203,
    100 %), at 228 / 295 = 77 % of the H100's peak. A ReLU reaches 0.25 / 203 = 0.1 %."""
    calc = calculators.rooflines()
    summary = calc.update()
    assert (
        summary.splitlines()[0]
        == "| operation | FLOP/byte (fp16) | T4 fp16 | H100 SXM fp16 |"
    )
    assert "| linear b=256 | 228 | 100.0% | 77.0% |" in summary
    assert "| ReLU | 0.25 | 0.1% | 0.1% |" in summary
    assert len(calc.ax.texts) == 4  # one label per operation


def test_rooflines_set_published_gemms_under_their_roof():
    """On the default H100 SXM fp16 roof the calculator draws the published single GEMMs as
    crosses; the best (cuBLAS 8192**3 at 762 TFLOP/s, helpers/data/published/gemm.csv) reaches
    762 / 989.4 = 77 % of its roof, and none exceeds it. The T4 alone has none."""
    calc = calculators.rooflines()
    summary = calc.update()
    assert "The best reaches 77% of its roof" in summary
    crosses = [line for line in calc.ax.get_lines() if line.get_marker() == "x"]
    assert len(crosses) == 1 and "H100 SXM fp16" in crosses[0].get_label()
    calc.controls["accelerators"].value = ("T4",)
    assert "Crosses" not in calc.update()


def test_rooflines_other_selection_skips_missing_dtypes():
    """T4 and H100 in fp16 and fp8: the T4 has no fp8, so three roofs; the H100's fp8 ridge is
    1978.9e12 / 3.35e12 = 591, and an fp8 256**3 matmul (n / 1.5 = 171 FLOP/byte) reaches 29 %."""
    calc = calculators.rooflines()
    calc.controls["dtypes"].value = ("fp16", "fp8")
    calc.controls["operations"].value = ("matmul 256",)
    summary = calc.update()
    assert summary.splitlines()[0].endswith(
        "| T4 fp16 | H100 SXM fp16 | H100 SXM fp8 |"
    )
    assert "| matmul 256 | 85.3 | 42.0% | 28.9% | 28.9% |" in summary


def test_rooflines_bad_input_shows_a_message():
    """Nothing selected, or only dtypes no chosen device has (fp8 on a T4), is an input error."""
    calc = calculators.rooflines()
    calc.controls["operations"].value = ()
    assert calc.update().startswith(
        "**Input error:** accelerators, dtypes and operations"
    )
    calc.controls["operations"].value = ("ReLU",)
    calc.controls["accelerators"].value = ("T4",)
    calc.controls["dtypes"].value = ("fp8",)
    assert calc.update().startswith("**Input error:**")
