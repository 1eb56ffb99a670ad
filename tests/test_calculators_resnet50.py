"""Tests of :mod:`helpers.calculators.resnet50`, the calculator of the chapter ``convolutions``.

Its default, its controls, and bad input shown as a message (``resnet50`` at defaults is also
checked against its controls by ``tests/test_calculators.py``).
"""

from __future__ import annotations

from helpers import calculators


def test_resnet50_default_on_a_t4():
    """T4, fp16, batch 8: 37 of 54 layers memory-bound (ridge 65e12 / 320e9 = 203.1), 54 x 5 µs of
    overhead in the step."""
    calc = calculators.resnet50()
    summary = calc.update()
    assert "**37 of 54 layers memory-bound** (ridge 203.1 FLOP/byte)" in summary
    assert "including 54 × 5 µs of overhead" in summary
    assert "images/s" in summary


def test_resnet50_fp32_and_large_batch():
    """In fp32 the T4's ridge is 8.1e12 / 320e9 = 25.3: most layers are compute-bound at batch 1.
    A larger batch raises images/s."""
    calc = calculators.resnet50()
    calc.controls["dtype"].value = "fp32"
    calc.controls["batch"].value = 1
    fp32 = calc.update()
    assert "(ridge 25.3 FLOP/byte)" in fp32
    memory = int(fp32.split("**")[3].split(" of ")[0])
    assert memory < 27

    def rate(text: str) -> float:
        return float(text.split("**")[7].split(" images/s")[0].replace(",", ""))

    calc.controls["batch"].value = 64
    assert rate(calc.update()) > rate(fp32)


def test_resnet50_bad_input_shows_a_message():
    """bf16 on a T4 and a zero batch are input errors."""
    calc = calculators.resnet50()
    calc.controls["dtype"].value = "bf16"
    summary = calc.update()
    assert summary.startswith("**Input error:**") and "bf16" in summary
    calc.controls["dtype"].value = "fp16"
    calc.controls["batch"].value = 0
    assert calc.update().startswith("**Input error:**")
