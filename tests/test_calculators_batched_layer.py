"""Tests of :mod:`helpers.calculators.batched_layer`, the calculator of the chapter ``batching``.

Its default, its controls, and bad input shown as a message (``batched_layer`` at defaults is also
checked against its controls by ``tests/test_calculators.py``).
"""

from __future__ import annotations

from helpers import calculators


def test_batched_layer_default_is_llama2_mlp_on_an_a100():
    """Gated 4096 -> 11008 MLP, fp16, batch 64: weights 3 * 2 * 4096 * 11008 = 270.5 MB, read in
    270.5e6 / 2.039e12 = 133 µs (+ 3 µs of activations); compute 2 * 64 * 3 * 4096 * 11008 / 312e12
    = 55.5 µs; memory-bound, 141 µs with 5 µs overhead."""
    calc = calculators.batched_layer()
    summary = calc.update()
    first, second = summary.split("*Second-order prediction*")
    assert "*First-order bound*" in first and "step **141 µs**" in first
    assert "memory-bound; knee batch 161" in first
    assert "First-order terms: compute 55.5 µs, memory 136 µs, overhead 5 µs" in second


def test_batched_layer_second_order_uses_the_published_fractions():
    """The second-order line is the same sweep on the T4's published ceilings, 38 % of 65 TFLOP/s and
    75 % of 320 GB/s (appendix/gpu_measurements): a 4096 x 4096 fp16 layer's knee falls from 225 to
    r' w N / (2N - r' w 2d) with r' = 203.1 * 0.3846 / 0.75 = 104.2: 109.7, and at batch 64 the
    memory-bound step is 108 µs / 0.75 + 5 µs = 149 µs, slower than the 113 µs bound."""
    calc = calculators.batched_layer()
    calc.controls["shape"].value = "linear layer"
    calc.controls["acc"].value = "T4"
    calc.controls["width_1"].value = 4096
    calc.controls["width_2"].value = 4096
    first, second = calc.update().split("*Second-order prediction*")
    assert "step **113 µs**" in first and "knee batch 225" in first
    assert "38% of the compute peak and 75% of the bandwidth" in second
    assert "step **149 µs**" in second and "knee batch 110" in second
    labels = [line.get_label() for line in calc.ax.get_lines()]
    assert "step time, second-order (measured ceilings)" in labels


def test_batched_layer_linear_settings():
    """A 512 x 512 fp16 layer on an H100 never reaches the ridge (its ceiling 256 < 295): no knee.
    Weight-only int8 halves a 4096 x 4096 layer's knee on an A100 (ridge r = 312e12 / 2.039e12 = 153.0):
    b* = r w_w N / (2 N - r w_a 2d) with N = 4096**2, d = 4096: 165.4 for fp16 weights, 82.7 for int8."""
    calc = calculators.batched_layer()
    calc.controls["shape"].value = "linear layer"
    calc.controls["acc"].value = "H100 SXM"
    calc.controls["width_1"].value = 512
    calc.controls["width_2"].value = 512
    assert "knee never (too narrow)" in calc.update()
    calc.controls["acc"].value = "A100 SXM4 80GB"
    calc.controls["width_1"].value = 4096
    calc.controls["width_2"].value = 4096
    fp16 = calc.update()
    calc.controls["weights"].value = "int8"
    int8 = calc.update()
    assert "knee batch 165" in fp16
    assert "knee batch 83" in int8 and "int8 weights" in int8


def test_batched_layer_bad_input_shows_a_message():
    """A zero width, a zero batch and a dtype the device lacks are input errors, not tracebacks."""
    calc = calculators.batched_layer()
    calc.controls["width_1"].value = 0
    summary = calc.update()
    assert summary.startswith("**Input error:**") and "d_model" in summary
    calc.controls["width_1"].value = 4096
    calc.controls["batch"].value = 0
    assert calc.update().startswith("**Input error:**")
    calc.controls["batch"].value = 8
    calc.controls["acc"].value = "T4"
    calc.controls["dtype"].value = "bf16"
    assert calc.update().startswith("**Input error:**")
