"""The calculator of the chapter ``hybrid_strategies``:
a tiered KV cache, fetch or compute per part of a prompt.

:func:`kv_tiers` builds it (controls with the chapter's defaults) around
:func:`render_kv_tiers`, which draws and returns a Markdown summary. Conventions are in
:mod:`helpers.calculators`.
"""

from __future__ import annotations

import functools
from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.axes import Axes

from .. import cachesim, hardware, kvcache, papers, plots, tiers
from ..widgets import Calculator
from . import _controls

__all__ = ["kv_tiers", "render_kv_tiers"]


def render_kv_tiers(
    ax: Axes,
    model: str,
    acc: str,
    dtype: str,
    n_gpus: int,
    prompt_tokens: int,
    hbm_gb: float,
    dram_tb: float,
    dram_gbs: float,
    pool_tb: float,
    pool_link: str,
    ssd_tb: float,
    *,
    distances: cachesim.StackDistances,
) -> str:
    """Chapter ``hybrid_strategies``: per part of a prompt, fetch from its tier or compute; the expected prefill time.

    The tiers are :func:`helpers.tiers.example_hierarchy` with the chosen
    capacities, the pool's link, and the host tier's bandwidth for the whole
    server, ``dram_gbs`` GB/s (default Mooncake's Table 1 ``B_h2d``,
    :data:`helpers.papers.MOONCAKE_TABLE1_H2D_BANDWIDTH`); their hit fractions come from ``distances`` (a
    trace's :func:`helpers.cachesim.stack_distances`).
    """
    device = hardware.get_accelerator(acc)
    levels = tiers.example_hierarchy(
        device,
        n_gpus=n_gpus,
        hbm_bytes=hbm_gb * 1e9,
        dram_bytes=dram_tb * 1e12,
        dram_bandwidth=dram_gbs * 1e9,
        pool_bytes=pool_tb * 1e12,
        pool_link=pool_link,
        ssd_bytes=ssd_tb * 1e12,
    )
    shares = tiers.trace_fractions(
        distances, levels, model, dtype=dtype, block_tokens=distances.block_tokens
    )
    options: dict[str, Any] = {"dtype": dtype, "n_gpus": n_gpus}
    est = tiers.expected_prefill_time(
        model, prompt_tokens, levels, shares, device, **options
    )
    full = kvcache.recompute_time(model, prompt_tokens, device, **options)
    cached = sum(c.tokens for c in est.chunks)
    tail = tiers.span_compute_time(model, cached, prompt_tokens, device, **options)
    y = np.arange(len(est.chunks) + 1)
    ax.barh(
        y[:-1] - 0.2,
        [c.fetch_s * 1e3 for c in est.chunks],
        0.4,
        hatch="//",
        edgecolor="white",
        label="fetch from the tier",
    )
    ax.barh(
        y + 0.2,
        [c.recompute_s * 1e3 for c in est.chunks] + [tail * 1e3],
        0.4,
        hatch="..",
        edgecolor="white",
        label="compute",
    )
    ax.set_yticks(
        y,
        [f"{c.tier}\n{c.tokens:,} tokens" for c in est.chunks]
        + [f"not cached\n{prompt_tokens - cached:,} tokens"],
    )
    ax.invert_yaxis()
    ax.set_xlabel("time for this part of the prompt (ms)")
    ax.legend(fontsize=plots.SMALL)
    verdicts = (
        ", ".join(f"{c.tier}: **{c.verdict}**" for c in est.chunks) or "nothing cached"
    )
    names = " | ".join(t.name for t in levels)
    hits = " | ".join(f"{f:.1%}" for f in shares[:-1])
    return (
        f"Trace {distances.trace_name}, share of prompt tokens each tier serves:\n\n"
        f"| tier | {names} | miss |\n|---|{'---:|' * (len(levels) + 1)}\n"
        f"| hit share | {hits} | {shares[-1]:.1%} |\n\n"
        f"Prompt of {prompt_tokens:,} tokens: {verdicts}.  \n"
        f"Expected prefill **{est.serial_s * 1e3:.0f} ms** serial, **{est.prefetched_s * 1e3:.0f} ms** "
        f"with layer-wise prefetch, against {full * 1e3:.0f} ms recomputing everything."
    )


def kv_tiers(distances: cachesim.StackDistances, prompt_tokens: int) -> Calculator:
    """Chapter ``hybrid_strategies``'s calculator: the example hierarchy's capacities and links,
    replayed on ``distances``."""
    controls = {
        "model": _controls.model("llama-3-70b"),
        "acc": _controls.accelerator("H100 SXM", description="GPU"),
        "dtype": _controls.dtype("bf16"),
        "n_gpus": widgets.BoundedIntText(value=8, min=1, max=64, description="# GPUs"),
        "prompt_tokens": widgets.BoundedIntText(
            value=prompt_tokens, min=1, max=1_000_000, step=1024, description="prompt"
        ),
        "hbm_gb": widgets.FloatLogSlider(
            value=100, base=10, min=0, max=3, description="HBM GB"
        ),
        "dram_tb": widgets.FloatLogSlider(
            value=1.5, base=10, min=-1, max=1.5, description="DRAM TB"
        ),
        "dram_gbs": widgets.BoundedFloatText(
            value=papers.MOONCAKE_TABLE1_H2D_BANDWIDTH / 1e9,
            min=1,
            max=10_000,
            step=16,
            description="DRAM GB/s",
        ),
        "pool_tb": widgets.FloatLogSlider(
            value=15, base=10, min=0, max=2.5, description="pool TB"
        ),
        "pool_link": _controls.link("ConnectX-7 (400 Gb/s)", description="pool link"),
        "ssd_tb": widgets.FloatLogSlider(
            value=60, base=10, min=0, max=3, description="SSD TB"
        ),
    }
    return Calculator(controls, functools.partial(render_kv_tiers, distances=distances))
