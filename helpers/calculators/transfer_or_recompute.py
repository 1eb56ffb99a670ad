"""The calculator of the chapter ``transfer_or_recompute``:
recompute a prefix's KV cache or fetch it, against the prefix length.

:func:`transfer_or_recompute` builds it (controls with the chapter's defaults) around
:func:`render_transfer_or_recompute`, which draws and returns a Markdown summary. Conventions
are in :mod:`helpers.calculators`.
"""

from __future__ import annotations

import math
from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.axes import Axes

from .. import hardware, inference, kvcache, llm, plots
from ..formatting import format_si
from ..widgets import Calculator
from . import _controls

__all__ = [
    "TRANSFER_MAX_TOKENS",
    "render_transfer_or_recompute",
    "transfer_or_recompute",
]


TRANSFER_MAX_TOKENS = 131_072
"""Longest prefix Chapter ``transfer_or_recompute``'s calculator draws and searches (tokens)."""


def render_transfer_or_recompute(
    ax: Axes,
    model: str,
    acc: str,
    n_gpus: int,
    mfu: float,
    link: str,
    n_links: int,
    tokens: int,
) -> str:
    """Chapter ``transfer_or_recompute``: time to recompute a prefix's KV cache against time to
    fetch it, over prefix lengths.

    Recomputation runs in the device's 16-bit dtype (:attr:`helpers.hardware.Accelerator.half_dtype`,
    bf16 where it has it), which is also the cache's dtype.
    """
    device = hardware.get_accelerator(acc)
    dtype = device.half_dtype
    if dtype is None:
        raise ValueError(f"acc: {device.name} has no 16-bit peak to recompute with")
    chosen = hardware.get_link(link)
    options: dict[str, Any] = {
        "dtype": dtype,
        "n_gpus": n_gpus,
        "n_links": n_links,
        "mfu": mfu,
    }
    result = kvcache.breakeven(model, tokens, device, chosen, **options)
    lengths = np.unique(np.geomspace(1, TRANSFER_MAX_TOKENS, 120).astype(int))
    recompute = [
        kvcache.recompute_time(
            model, int(n), device, dtype=dtype, n_gpus=n_gpus, mfu=mfu
        )
        for n in lengths
    ]
    fetch = [
        kvcache.transfer_time(model, int(n), chosen, dtype=dtype, n_links=n_links)
        for n in lengths
    ]
    ax.loglog(
        lengths,
        recompute,
        "-",
        marker="o",
        markevery=6,
        ms=4,
        label=f"recompute: prefill on {n_gpus} x {device.name} at {mfu:.0%} MFU",
    )
    ax.loglog(
        lengths,
        fetch,
        "--",
        marker="s",
        markevery=6,
        ms=4,
        label=f"fetch: {n_links} x {chosen.name}",
    )
    ax.plot([tokens, tokens], [result.recompute_s, result.transfer_s], "ko", ms=4)
    window = kvcache.recompute_window(
        model, device, chosen, max_tokens=TRANSFER_MAX_TOKENS, **options
    )
    if window:
        ax.axvspan(
            window[0], window[1], color="C0", alpha=0.08, label="recompute faster"
        )
    ax.set_xlabel("prefix length (tokens)")
    ax.set_ylabel("time to have the KV cache (s)")
    ax.legend(fontsize=plots.SMALL)
    if window is None:
        where = (
            f"fetching is faster at every length up to {TRANSFER_MAX_TOKENS:,} tokens"
        )
    else:
        where = f"recomputing is faster for prefixes of {window[0]:,} to {window[1]:,} tokens"
        for_good = kvcache.breakeven_tokens(
            model, device, chosen, max_tokens=TRANSFER_MAX_TOKENS, **options
        )
        if math.isinf(for_good):
            where += (
                f"; fetching never wins for good below {TRANSFER_MAX_TOKENS:,} tokens"
            )
        else:
            where += f"; fetching wins for good from {for_good:,} tokens (`breakeven_tokens`)"
    fits = ""
    if not inference.weights_fit(model, device, n_gpus=n_gpus, dtype=dtype):
        weights = llm.weight_bytes(model, dtype=dtype)
        fits = (
            f" (Note: the weights, {weights / 1e9:,.0f} GB, do not fit on these GPUs; "
            "the recompute time is what they would take if they did.)"
        )
    m = llm.get_model(model)
    rule = kvcache.hidden_size_rule(m, device, chosen, tokens=tokens, **options)
    return (
        f"**{result.verdict.capitalize()}** is {result.speedup:,.1f}x faster for a {tokens:,}-token "
        f"prefix ({dtype}). Times: recompute {format_si(result.recompute_s, 's')}, fetch "
        f"{format_si(result.transfer_s, 's')} "
        f"({format_si(llm.kv_cache_bytes(m, tokens, dtype=dtype), 'B')} of KV cache). "
        f"Fetching wins above {format_si(result.threshold_bandwidth, 'B/s')} of link bandwidth; "
        f"you have {format_si(n_links * chosen.bandwidth, 'B/s')}. Compute-bound rule: "
        f"$\\mu P/W_\\text{{link}}$ = {rule.compute_per_byte:,.0f} FLOP per link byte against "
        f"$c(n)\\,d$ = {rule.threshold:,.0f} FLOP per KV byte. "
        f"Over prefix lengths, {where}.{fits}"
    )


def transfer_or_recompute() -> Calculator:
    """Chapter ``transfer_or_recompute``'s calculator: recompute on GPUs at an MFU, or fetch over
    links, for one prefix."""
    controls = {
        "model": _controls.model("llama-2-7b"),
        "acc": _controls.accelerator("A100 SXM4 80GB", description="GPU"),
        "n_gpus": widgets.Dropdown(options=[1, 2, 4, 8], value=1, description="GPUs"),
        "mfu": widgets.FloatSlider(
            value=0.7, min=0.05, max=1.0, step=0.05, description="MFU"
        ),
        "link": _controls.link("100 GbE NIC"),
        "n_links": widgets.Dropdown(options=[1, 2, 4, 8], value=1, description="links"),
        "tokens": widgets.BoundedIntText(
            value=4096, min=1, max=TRANSFER_MAX_TOKENS, description="prefix"
        ),
    }
    return Calculator(controls, render_transfer_or_recompute)
