"""The calculator of the chapter ``disaggregated_memory``:
a KV-cache pool's hit rate on a trace, and the prefill compute it saves.

:func:`kv_pool` builds it (controls with the chapter's defaults) around :func:`render_kv_pool`,
which draws and returns a Markdown summary. Conventions are in :mod:`helpers.calculators`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping

import ipywidgets as widgets
import numpy as np
from matplotlib.axes import Axes

from .. import cachesim, hardware, kvcache, llm, plots
from ..traces import trace_prefill_flops
from ..widgets import Calculator
from . import _controls

__all__ = ["kv_pool", "render_kv_pool"]


_stack_distances = functools.cache(cachesim.stack_distances)
"""Stack distances of a (trace, block size), computed once: a calculator redraws instantly."""


_trace_prefill_flops = functools.cache(trace_prefill_flops)
"""Prefill FLOP of a (trace, model) without a cache, computed once."""


def render_kv_pool(
    ax: Axes,
    model_name: str,
    kv_dtype: str,
    trace: str,
    pool_tb: float,
    block_tokens: int,
    *,
    traces: Mapping[str, cachesim.Trace],
    acc: str = "H800",
    n_gpus: int = 8,
) -> str:
    """Chapter ``disaggregated_memory``: hit rate against pool size for one trace, and the prefill
    compute the pool saves.

    ``traces`` maps the ``trace`` control's names to loaded traces; the
    compute saved is priced on ``n_gpus`` x ``acc`` at peak bf16.
    """
    if not pool_tb > 0:
        raise ValueError(f"pool size must be > 0 TB, got {pool_tb}")
    if trace not in traces:
        raise KeyError(f"trace {trace!r} is not loaded; choose one of {list(traces)}")
    device = hardware.get_accelerator(acc)
    per_token = llm.kv_cache_bytes_per_token(model_name, dtype=kv_dtype)
    capacity = pool_tb * 1e12 / per_token  # tokens
    sd = _stack_distances(traces[trace], block_tokens=block_tokens)
    hit, ceiling = cachesim.hit_rate_curve(
        sd, [capacity, math.inf], block_tokens=block_tokens
    )
    saved = llm.prefill_flops_saved(model_name, sd.request_hit_tokens(capacity)).sum()
    total = _trace_prefill_flops(traces[trace], model_name)
    sizes = np.geomspace(1e-3, 1e3, 200)  # TB
    curve = cachesim.hit_rate_curve(
        sd, sizes * 1e12 / per_token, block_tokens=block_tokens
    )
    ax.semilogx(sizes, 100 * curve, label=f"{trace}, {block_tokens}-token blocks")
    ax.axhline(
        100 * ceiling, color="grey", ls="--", lw=1, label="ceiling (infinite pool)"
    )
    ax.plot([pool_tb], [100 * hit], "ko", ms=5)
    ax.set_xlabel(f"pool size for {model_name}, {kv_dtype} KV (TB)")
    ax.set_ylabel("hit rate (% of prompt tokens)")
    ax.set_ylim(0, 75)
    ax.legend(loc="upper left", fontsize=plots.SMALL)
    peak = kvcache.compute_rate(device, n_gpus=n_gpus)  # bf16
    return (  # at most three numbers a sentence
        f"**Hit rate {hit:.1%}** of prompt tokens (ceiling {ceiling:.1%}). The pool holds "
        f"{capacity / 1e6:,.2f} M tokens, {math.floor(capacity / block_tokens):,} blocks of "
        f"{block_tokens}. The trace references {sd.distinct_blocks * block_tokens / 1e6:,.1f} M "
        f"distinct tokens. **Prefill saved: {saved / total:.1%}** of the trace's "
        f"{total / 1e18:,.1f} EFLOP. At peak bf16 that is {saved / peak:,.0f} s of "
        f"{n_gpus} x {device.name}."
    )


def kv_pool(traces: Mapping[str, cachesim.Trace]) -> Calculator:
    """Chapter ``disaggregated_memory``'s calculator: a model, a KV dtype, one of ``traces``, a
    pool size and a block size."""
    block = traces[next(iter(traces))].block_tokens
    controls = {
        "model_name": _controls.model("llama-3-70b"),
        "kv_dtype": widgets.Dropdown(
            options=["bf16", "fp8"], value="bf16", description="KV dtype"
        ),
        "trace": widgets.Dropdown(
            options=list(traces), value=next(iter(traces)), description="trace"
        ),
        "pool_tb": widgets.BoundedFloatText(
            value=2.0, min=0.0, max=1000.0, step=0.5, description="pool (TB)"
        ),
        "block_tokens": widgets.Dropdown(
            options=[block * k for k in (1, 2, 4, 8)], value=block, description="block"
        ),
    }
    return Calculator(controls, functools.partial(render_kv_pool, traces=traces))
