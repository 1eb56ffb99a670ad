"""Tests of :mod:`helpers.calculators.kv_tiers`, the calculator of the chapter ``hybrid_strategies``.

Its default, its controls, and bad input shown as a message (``kv_tiers`` at defaults is also
checked against its controls by ``tests/test_calculators.py``).
"""

from __future__ import annotations

from helpers import cachesim
from helpers import calculators as cs

ERROR = "**Input error:**"


def _summary(calc, **values):
    for name, value in values.items():
        calc.controls[name].value = value
    return calc.update()


def test_kv_tiers_default(tiny):
    """The bundled trace through Chapter ``hybrid_strategies``'s hierarchy: four tiers and the miss, a verdict per chunk."""
    sd = cachesim.stack_distances(tiny)
    calc = cs.kv_tiers(sd, 2048)
    summary = calc.update()
    assert summary.startswith("Trace tiny, share of prompt tokens each tier serves:")
    assert "| tier | HBM | host DRAM | remote pool | local SSD | miss |" in summary
    assert "Prompt of 2,048 tokens" in summary and "recomputing everything" in summary
    assert calc.controls["prompt_tokens"].value == 2048


def test_kv_tiers_follows_its_controls(tiny):
    """With 1 GB of HBM the bundled trace spills into host DRAM. At the default host bandwidth,
    Mooncake's 128 GB/s, the serial prefill takes 12 ms and layer-wise prefetch hides the fetch
    (10 ms); at eight PCIe 5.0 links' line rate (504 GB/s) the serial prefill is 10 ms, at eight
    100 GbE NICs' 100 GB/s 13 ms, while prefetch still hides it."""
    calc = cs.kv_tiers(cachesim.stack_distances(tiny), 2048)
    assert calc.controls["dram_gbs"].value == 128
    small_hbm = _summary(calc, hbm_gb=1.0)
    assert "| hit share | 27.3% | 46.0% |" in small_hbm
    assert "**12 ms** serial, **10 ms** with layer-wise prefetch" in small_hbm
    line_rate = _summary(calc, dram_gbs=504.0)
    assert "**10 ms** serial, **10 ms** with layer-wise prefetch" in line_rate
    slow_link = _summary(calc, dram_gbs=100.0)
    assert "**13 ms** serial, **10 ms** with layer-wise prefetch" in slow_link


def test_kv_tiers_capacities_must_grow(tiny):
    """DRAM no larger than HBM is rejected with a message naming the tiers."""
    summary = _summary(
        cs.kv_tiers(cachesim.stack_distances(tiny), 2048), hbm_gb=1000.0, dram_tb=0.5
    )
    assert summary.startswith(ERROR) and "dram_bytes" in summary
