"""Tests of :mod:`helpers.calculators.kv_pool`, the calculator of the chapter ``disaggregated_memory``.

Its default, its controls, and bad input shown as a message (``kv_pool`` at defaults is also
checked against its controls by ``tests/test_calculators.py``).
"""

from __future__ import annotations

import re

import pytest

from helpers import cachesim, llm
from helpers import calculators as cs

ERROR = "**Input error:**"


def _summary(calc, **values):
    for name, value in values.items():
        calc.controls[name].value = value
    return calc.update()


def test_kv_pool_default(tiny):
    """The pool's hit rate and ceiling are the trace's curve at 2 TB of Llama-3-70B tokens and at
    infinity; 512-token blocks."""
    calc = cs.kv_pool({"tiny": tiny})
    summary = calc.update()
    capacity = 2e12 / llm.kv_cache_bytes_per_token("llama-3-70b")
    hit, ceiling = cachesim.hit_rate_curve(tiny, [capacity, float("inf")])
    assert (
        f"**Hit rate {hit:.1%}**" in summary and f"(ceiling {ceiling:.1%})" in summary
    )
    assert "blocks of 512" in summary and f"{capacity / 1e6:,.2f} M tokens" in summary
    assert list(calc.controls["block_tokens"].options) == [512, 1024, 2048, 4096]


def test_kv_pool_fp8_holds_twice_the_tokens(tiny):
    """An fp8 cache is half the bytes per token: the same pool holds twice the tokens."""
    calc = cs.kv_pool({"tiny": tiny})
    capacity = 2e12 / llm.kv_cache_bytes_per_token("llama-3-70b", dtype="fp8")
    assert f"{capacity / 1e6:,.2f} M tokens" in _summary(
        calc, kv_dtype="fp8", block_tokens=1024
    )
    assert "blocks of 1024" in calc.summary


def test_kv_pool_bad_inputs_are_messages(tiny):
    """An empty pool names the pool size; a trace that is not loaded names the trace."""
    summary = _summary(cs.kv_pool({"tiny": tiny}), pool_tb=0.0)
    assert summary.startswith(ERROR) and "pool size" in summary
    fig_ax = cs.kv_pool({"tiny": tiny}).axes
    with pytest.raises(KeyError, match="trace"):
        cs.render_kv_pool(
            fig_ax,
            "llama-3-70b",
            "bf16",
            "conversation",
            2.0,
            512,
            traces={"tiny": tiny},
        )


def test_kv_pool_summary_sentences_carry_at_most_three_numbers(tiny):
    """The book's standard for generated prose (review H13): no sentence of the summary holds more
    than three numbers (device names such as H800 are not numbers)."""
    summary = cs.kv_pool({"tiny": tiny}).update()
    number = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?")
    sentences = re.split(r"(?<=\.)\s+(?=[A-Z*])", summary)
    assert len(sentences) >= 4
    for sentence in sentences:
        assert len(number.findall(sentence)) <= 3, sentence
