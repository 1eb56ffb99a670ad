"""Tests of :mod:`helpers.calculators.transformer_inference`, the calculator of the chapter ``transformer_inference``.

Its default, its controls, and bad input shown as a message (``transformer_inference`` at defaults is also
checked against its controls by ``tests/test_calculators.py``).
"""

from __future__ import annotations

from helpers import calculators as cs
from helpers import inference

ERROR = "**Input error:**"


def _summary(calc, **values):
    for name, value in values.items():
        calc.controls[name].value = value
    return calc.update()


def test_transformer_inference_default():
    """Llama-3-8B on one H100, batch 32 at 4,096 tokens: 0.9 x 80 GiB less 16.1 GB of weights holds
    114 sequences of 4,097 x 128 KiB; the step is memory-bound; the figure has its twin axis once."""
    calc = cs.transformer_inference()
    summary = calc.update()
    assert "**Largest batch that fits** (10 % reserve): 114." in summary
    assert inference.max_decode_batch("llama-3-8b", 4096, "H100") == 114
    assert "(memory-bound)" in summary and "128 KiB/token" in summary
    calc.update()
    assert len(calc.fig.axes) == 2  # redrawing removes the previous twin axis


def test_transformer_inference_says_what_does_not_fit():
    """Llama-3-70B's 141 GB of weights do not fit one A100; 355 fit on 8 x H100, so 400 is too many."""
    calc = cs.transformer_inference()
    assert "The weights alone (141 GB) do not fit" in _summary(
        calc, model="llama-3-70b", acc="A100 SXM4 80GB"
    )
    summary = _summary(calc, acc="H100 SXM", n_gpus=8, batch=400)
    assert (
        "fits** (10 % reserve): 355." in summary
        and "A batch of 400 does not fit" in summary
    )


def test_transformer_inference_bad_dtype_is_a_message():
    """A T4 has no bf16 peak: the summary names the dtype instead of raising."""
    summary = _summary(cs.transformer_inference(), acc="T4", dtype="bf16")
    assert summary.startswith(ERROR) and "bf16" in summary


def test_transformer_inference_sets_published_steps_beside_the_bound():
    """Llama-2-7B fp16 on one A100 at LMDeploy's mean context (128 + 2,048 // 2 = 1,152 tokens):
    the four published steps (batch 1, 16, 32, 64) are drawn, and batch 16's 15 ms is quoted
    with its source (lmdeploy_a100_fp16). Where nothing is published, nothing is drawn or quoted."""
    calc = cs.transformer_inference()
    summary = _summary(
        calc,
        model="llama-2-7b",
        acc="A100 SXM4 80GB",
        dtype="fp16",
        context=1152,
        batch=16,
    )
    assert "**Published** at batch 16: 15 ms per step" in summary
    assert "128 -> 2,048 tokens" in summary and "lmdeploy" in summary.lower()
    squares = [line for line in calc.axes.lines if line.get_marker() == "s"]
    assert len(squares) == 1
    assert {1, 16, 32, 64} <= set(squares[0].get_xdata())
    assert "**Published**" not in _summary(calc, batch=17)
    bare = cs.transformer_inference()
    assert "**Published**" not in bare.update()
    assert not [line for line in bare.axes.lines if line.get_marker() == "s"]
