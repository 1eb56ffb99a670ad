"""Tests of :mod:`helpers.calculators.transfer_or_recompute`, the calculator of the chapter ``transfer_or_recompute``.

Its default, its controls, and bad input shown as a message (``transfer_or_recompute`` at defaults is also
checked against its controls by ``tests/test_calculators.py``).
"""

from __future__ import annotations

import ipywidgets as widgets
import pytest

from helpers import calculators as cs
from helpers import kvcache

ERROR = "**Input error:**"


def _summary(calc, **values):
    for name, value in values.items():
        calc.controls[name].value = value
    return calc.update()


def test_transfer_or_recompute_default():
    """Llama-2-7B, 4,096 tokens, one A100 at 70 % MFU against one 100 GbE NIC: fetching 2.15 GB at
    12.5 GB/s (172 ms) beats recomputing (263 ms)."""
    summary = cs.transfer_or_recompute().update()
    result = kvcache.breakeven("llama-2-7b", 4096, "A100", "100gbe", mfu=0.7)
    assert result.verdict == "transfer"
    assert summary.startswith(
        "**Transfer** is 1.5x faster for a 4,096-token prefix (bf16)"
    )
    assert "fetch 172 ms" in summary and "2.15 GB of KV cache" in summary


def test_transfer_or_recompute_names_the_hardware_ratio_mu_p_over_w_link():
    """The compute-bound rule compares mu P / W_link (FLOP per link byte: 0.7 x 312e12 / 12.5e9 =
    17,472) with c(n) d; it is not F/B, which the notation table reserves for an intensity."""
    summary = cs.transfer_or_recompute().update()
    assert "$\\mu P/W_\\text{link}$ = 17,472 FLOP per link byte" in summary
    assert "F/B" not in summary


def test_transfer_or_recompute_window_at_peak():
    """One H100 at peak behind 100 GbE: recomputing wins only between 95 and 108,895 tokens
    (Chapter ``transfer_or_recompute``'s figure), and fetching for good from 108,896."""
    summary = _summary(cs.transfer_or_recompute(), acc="H100 SXM", mfu=1.0)
    assert "recomputing is faster for prefixes of 95 to 108,895 tokens" in summary
    assert "fetching wins for good from 108,896 tokens" in summary


def test_transfer_or_recompute_uses_the_devices_16_bit_format():
    """The default T4 case of a reader: no bf16, so the calculator recomputes in fp16, no error."""
    summary = _summary(cs.transfer_or_recompute(), acc="T4")
    assert not summary.startswith(ERROR) and "(fp16)" in summary


def test_transfer_or_recompute_notes_weights_that_do_not_fit():
    """Llama-3-70B's weights do not fit one L4: the summary says the recompute time is hypothetical."""
    summary = _summary(cs.transfer_or_recompute(), model="llama-3-70b", acc="L4")
    assert "do not fit on these GPUs" in summary


def test_transfer_or_recompute_bad_prefix_is_a_message():
    """A prefix of 0 tokens names the parameter."""
    calc = cs.transfer_or_recompute()
    calc.controls["tokens"] = widgets.IntText(value=0)
    summary = calc.update()
    assert summary.startswith(ERROR) and "tokens" in summary


def test_transfer_or_recompute_rule_counts_every_link_and_gpu():
    """Two 100 GbE links halve the FLOP per link byte: 0.7 x 312e12 / (2 x 12.5e9) = 8,736 (a
    calculator that dropped n_links would still print 17,472); two GPUs double it to 34,944. The
    c(n) d it prints is kvcache.hidden_size_rule's threshold at the prefix, its one home."""
    two_links = _summary(cs.transfer_or_recompute(), n_links=2)
    assert "$\\mu P/W_\\text{link}$ = 8,736 FLOP per link byte" in two_links
    two_gpus = _summary(cs.transfer_or_recompute(), n_gpus=2)
    assert "$\\mu P/W_\\text{link}$ = 34,944 FLOP per link byte" in two_gpus
    rule = kvcache.hidden_size_rule(
        "llama-2-7b", "A100", "100gbe", mfu=0.7, n_links=2, tokens=4096
    )
    assert rule.compute_per_byte == pytest.approx(8_736)
    assert f"$c(n)\\,d$ = {rule.threshold:,.0f} FLOP per KV byte" in two_links
