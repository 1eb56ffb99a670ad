"""Tests of :mod:`helpers.calculators.attention_offload`, the calculator of the chapter ``attention_offload``.

Its default, its controls, and bad input shown as a message (``attention_offload`` at defaults is also
checked against its controls by ``tests/test_calculators.py``).
"""

from __future__ import annotations

import pytest

from helpers import calculators as cs
from helpers import inference

ERROR = "**Input error:**"


def _summary(calc, **values):
    for name, value in values.items():
        calc.controls[name].value = value
    return calc.update()


def test_attention_offload_default():
    """The baseline's batch is the book's one largest batch, 355; eight H20s hold 552 sequences.

    Eight H20s hold no weights (attention only): 0.9 x 8 x 96 GiB = 742.17 GB for KV caches of
    4,097 tokens x 327,680 B (Llama-3-70B: 2 x 80 layers x 8 KV heads x 128 x 2 bytes)
    = 1.3425 GB each: 742.17 / 1.3425 = 552.8, so 552 sequences."""
    summary = cs.attention_offload().update()
    assert "**Baseline** 8 × H100 SXM: batch 355" in summary
    assert "8 × H20: batch 552" in summary
    assert (
        inference.max_decode_batch(
            "llama-3-70b", 4096, "H20", n_gpus=8, holds_weights=False
        )
        == 552
    )


def test_attention_offload_says_when_it_cannot_win():
    """32 L4s: attention at their aggregate bandwidth is the slowest part; a negative break-even price."""
    summary = _summary(cs.attention_offload(), memory="L4", n_memory=32)
    assert "cannot win even with free memory devices" in summary


@pytest.mark.parametrize(
    "values, match",
    [
        ({"n_compute": 1}, "n_compute"),
        ({"memory": "L4", "n_memory": 1, "context": 100_000}, "n_memory"),
        ({"price_compute": 0.0}, "price"),
    ],
)
def test_attention_offload_bad_inputs_are_messages(values, match):
    """Weights that do not fit, a cache that does not fit, and a free compute GPU are named."""
    summary = _summary(cs.attention_offload(), **values)
    assert summary.startswith(ERROR) and match in summary
