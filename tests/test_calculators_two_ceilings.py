"""Tests of :mod:`helpers.calculators.two_ceilings`, the calculator of the chapter ``two_ceilings``.

Its default, its controls, and bad input shown as a message (``two_ceilings`` at defaults is also
checked against its controls by ``tests/test_calculators.py``).
"""

from __future__ import annotations

import pytest

from helpers import calculators, plots


def test_two_ceilings_default_is_a_memory_bound_relu_on_a_t4():
    """2**24 fp16 elements: 4 bytes each = 67.1 MB, read in 67.1e6 / 320e9 = 210 µs, plus 5 µs overhead."""
    calc = calculators.two_ceilings()
    summary = calc.update()
    assert calc.values()["overhead_us"] == pytest.approx(5.0)
    assert "67.1 MB" in summary and "memory 210 µs" in summary
    assert "**215 µs, memory-bound**" in summary
    assert len(calc.ax.get_lines()) == 5  # three terms, the total, the chosen size


def test_two_ceilings_puts_elementwise_work_on_the_vector_roof():
    """Tensor cores only multiply matrices: a 2**24-element fp16 ReLU on a T4 runs on its 16.2 TFLOP/s
    vector units, 2**24 / 16.2e12 = 1.04 µs (not 2**24 / 65e12 = 258 ns), against a vector ridge of
    16.2e12 / 320e9 = 51; a fp16 matmul stays on the 65 TFLOP/s tensor cores (ridge 203)."""
    calc = calculators.two_ceilings()
    summary = calc.update()
    assert "Compute 1.04 µs" in summary and "ridge of 51 on the vector units" in summary
    calc.controls["op"].value = "matmul"
    calc.controls["size"].value = 4096
    assert "ridge of 203 on the tensor cores" in calc.update()


def test_two_ceilings_matmul_and_overhead_settings():
    """A 4096**3 fp16 matmul on a T4: 2 * 4096**3 / 65e12 = 2.11 ms, compute-bound. A 1,000-element ReLU
    on an H100 moves 4 kB in 1.2 ns: 5 µs of overhead dominates."""
    calc = calculators.two_ceilings()
    calc.controls["op"].value = "matmul"
    calc.controls["size"].value = 4096
    assert "**2.12 ms, compute-bound**" in calc.update()  # 2.11 ms compute + 5 µs
    calc.controls["op"].value = "relu"
    calc.controls["acc"].value = "H100 SXM"
    calc.controls["size"].value = 1024
    assert "overhead-bound" in calc.update()


def test_two_ceilings_bad_input_shows_a_message():
    """A matmul side above 2**16, a dtype the T4 lacks and an unknown operation are input errors."""
    calc = calculators.two_ceilings()
    calc.controls["op"].value = "matmul"
    calc.controls["size"].value = 2**20
    assert (
        calc.update()
        == "**Input error:** size must be at most 65,536 for matmul (the calculator's limit); "
        "got 1,048,576"
    )
    calc.controls["size"].value = 1024
    calc.controls["dtype"].value = "bf16"
    summary = calc.update()
    assert summary.startswith("**Input error:**") and "bf16" in summary
    _, ax = plots.new_figure()
    with pytest.raises(KeyError, match="op"):
        calculators.render_two_ceilings(ax, "T4", "fp16", "softmax", 10, 5)
