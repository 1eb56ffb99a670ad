"""helpers.engine: the continuous-batching simulator's interface, hand-worked cases and properties."""

from __future__ import annotations

import math

import pytest

from helpers import engine

FIELDS = (
    "output_tokens_per_s",
    "total_tokens_per_s",
    "ttft_s",
    "tpot_s",
    "ttft_p90_s",
    "tpot_p90_s",
    "mean_batch",
)


def test_interface_fields_and_full_load():
    r = engine.serve("llama-3-8b", "H100-SXM", input_len=1000, output_len=200)
    for name in FIELDS:
        value = getattr(r, name)
        assert math.isfinite(value) and value > 0, name
    assert r.total_tokens_per_s == pytest.approx(r.output_tokens_per_s * 1200 / 200)
    assert r.ttft_s <= r.ttft_p90_s and r.tpot_s <= r.tpot_p90_s
    assert r.mean_batch <= r.max_batch
    assert sum(r.breakdown.values()) == pytest.approx(1.0)


def test_replicas_multiply_throughput_at_full_load():
    one = engine.serve("llama-3-8b", "H100", input_len=500, output_len=100)
    two = engine.serve("llama-3-8b", "H100", input_len=500, output_len=100, replicas=2)
    assert two.output_tokens_per_s == pytest.approx(2 * one.output_tokens_per_s)


@pytest.mark.parametrize(
    "kwargs, word",
    [
        (dict(tp=0), "tp"),
        (dict(input_len=0), "input_len"),
        (dict(output_len=-1), "output_len"),
        (dict(rate=-1.0), "rate"),
        (dict(concurrency=0), "concurrency"),
        (dict(weight_dtype="fp3"), "weight_dtype"),
        (dict(engine="nope"), "engine"),
    ],
)
def test_bad_input_names_the_parameter(kwargs, word):
    args = dict(input_len=100, output_len=10) | kwargs
    with pytest.raises((ValueError, KeyError, TypeError)) as err:
        engine.serve("llama-3-8b", "H100", **args)
    assert word in str(err.value)
