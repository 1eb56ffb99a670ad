"""Tests of :mod:`helpers.calculators`: the chapters' calculators at their defaults, at other settings, and on bad input.

Each calculator is driven as a reader would drive it (through the
:class:`helpers.widgets.Calculator` harness: change a control, read the
summary), and its render function is also called directly. Expected numbers
are derived by hand from datasheet figures (T4: 65 TFLOP/s fp16, 320 GB/s;
A100: 312 TFLOP/s fp16, 2,039 GB/s; H100 SXM: 989.4 TFLOP/s fp16, 3.35 TB/s).
"""

from __future__ import annotations

import inspect

import ipywidgets as widgets
import pytest

from helpers import calculators, formatting, plots
from helpers.widgets import Calculator

BUILDERS = {
    calculators.two_ceilings: calculators.render_two_ceilings,
    calculators.rooflines: calculators.render_rooflines,
    calculators.batched_layer: calculators.render_batched_layer,
    calculators.resnet50: calculators.render_resnet50,
    calculators.matmul_terms: calculators.render_matmul_terms,
    calculators.latency_targets: calculators.render_latency_targets,
    calculators.parallelism: calculators.render_parallelism,
}


@pytest.mark.parametrize("build", list(BUILDERS), ids=lambda f: f.__name__)
def test_builder_wires_every_render_argument_to_a_control(build):
    """Each builder returns a Calculator whose controls (from its ``*_controls()``, as the chapter
    builds it) are exactly its render function's keywords, with the same defaults both ways."""
    calc = build()
    assert isinstance(calc, Calculator)
    assert calc.render is BUILDERS[build]
    wanted = list(inspect.signature(BUILDERS[build]).parameters)[1:]  # all but ax
    assert list(calc.controls) == wanted
    assert all(isinstance(c, widgets.ValueWidget) for c in calc.controls.values())
    controls = getattr(inspect.getmodule(build), f"{build.__name__}_controls")()
    assert {k: c.value for k, c in controls.items()} == calc.values()
    assert Calculator(controls, BUILDERS[build]).update() == calc.update()


def test_format_intensity():
    """No decimals from 100 FLOP/byte up (thousands separated), three significant digits below."""
    assert formatting.format_intensity(2730.67) == "2,731"
    assert formatting.format_intensity(227.6) == "228"
    assert formatting.format_intensity(0.25) == "0.25"
    assert formatting.format_intensity(85.333) == "85.3"


# --------------------------------------------------------------------------------------------------
# Chapter 1


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


# --------------------------------------------------------------------------------------------------
# Chapter 2


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


# --------------------------------------------------------------------------------------------------
# Chapter 4


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


# --------------------------------------------------------------------------------------------------
# Chapter 5


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


def test_every_single_accelerator_control_is_keyed_acc():
    """Parts I and II share one key: a calculator with one accelerator dropdown names it ``acc``
    (Chapter 1's ``two_ceilings`` and Chapter 6's ``transformer_inference`` alike), offering the
    whole catalog; Chapter 2's multi-select keeps its plural ``accelerators``."""
    from helpers.hardware import accelerators

    names = [a.name for a in accelerators()]
    for build in (*BUILDERS, calculators.transformer_inference):
        controls = build().controls
        assert "accelerator" not in controls, build.__name__
        if "acc" in controls:
            assert list(controls["acc"].options) == names, build.__name__
    assert calculators.two_ceilings().controls["acc"].value == "T4"


def test_overhead_slider_starts_at_the_default_overhead():
    """The shared t0 slider starts at ``batching.DEFAULT_OVERHEAD_S`` in microseconds and spans
    0.1 us to 10**max_exponent us."""
    from helpers import batching
    from helpers.calculators import _controls

    slider = _controls.overhead_us(max_exponent=3)
    assert slider.value == pytest.approx(batching.DEFAULT_OVERHEAD_S * 1e6)
    assert (slider.min, slider.max) == (-1, 3)
