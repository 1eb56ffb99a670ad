"""Part II's calculators (Chapters 6-11: serving a transformer): a ``render_*`` function and a builder each.

* :func:`transformer_inference` (chapter 6) -- prefill and decode bounds, the
  KV cache and the largest batch that fits, against the batch;
* :func:`transfer_or_recompute` (chapter 7) -- recompute a prefix's KV cache
  or fetch it, against the prefix length;
* :func:`kv_pool` (chapter 9) -- a KV-cache pool's hit rate on a trace, and
  the prefill compute it saves;
* :func:`attention_offload` (chapter 10) -- tokens per dollar of attention
  offload against an all-GPU baseline;
* :func:`kv_tiers` (chapter 11) -- a tiered KV cache, fetch or compute per
  part of a prompt.

Conventions are in :mod:`helpers.calculators`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.axes import Axes

from .. import (
    cachesim,
    hardware,
    inference,
    kvcache,
    llm,
    offload,
    papers,
    plots,
    tiers,
)
from ..formatting import format_si
from ..traces import trace_prefill_flops
from ..widgets import Calculator
from . import _controls

ILLUSTRATIVE_PRICE: Mapping[str, float] = MappingProxyType(
    {
        "H100 SXM": 2.50,
        "H200 SXM": 3.50,
        "H20": 1.00,
        "L4": 0.50,
        "A10G": 0.80,
        "RTX 4090": 0.40,
    }
)
"""Dollars per device-hour used as Chapter 10's defaults: round numbers for the example, NOT market quotes."""

TRANSFER_MAX_TOKENS = 131_072
"""Longest prefix Chapter 7's calculator draws and searches (tokens)."""


# ---------------------------------------------------------------------------
# Chapter 6: prefill, decode and the largest batch
# ---------------------------------------------------------------------------


def render_transformer_inference(
    ax: Axes, model: str, acc: str, n_gpus: int, batch: int, context: int, dtype: str
) -> str:
    """Chapter 6: decode step time and tokens/s against the batch; prefill, KV cache and the largest batch.

    Where the book's dataset has published decode steps of the same model, GPU,
    GPU count and dtype, at a mean context within 2x of ``context``
    (:func:`helpers.inference.published_decode_steps`), they are drawn beside
    the bound, and the one at ``batch`` is quoted with its source.
    """
    bound: dict[str, Any] = {
        "dtype": dtype,
        "n_gpus": n_gpus,
        "link": None,
    }  # no TP comm
    step = inference.decode_step(model, context, acc, batch=batch, **bound)
    prefill = inference.prefill_step(model, context, acc, batch=batch, **bound)
    fit = inference.max_decode_batch(model, context, acc, n_gpus=n_gpus, dtype=dtype)
    kv_seq = llm.kv_cache_bytes(model, context + 1, dtype=dtype)
    sweep = _controls.batch_grid(max(4 * batch, 2 * max(fit, 1), 64), points=60)
    times = np.array(
        [
            inference.decode_step_time(model, context, acc, batch=int(b), **bound)
            for b in sweep
        ]
    )
    for extra in ax.figure.axes[1:]:  # the twin axis of the previous draw
        extra.remove()
    ax.loglog(sweep, times * 1e3, label="decode step bound (ms)")
    ax.plot([batch], [step.seconds * 1e3], "ko", ms=5)
    published = _published_near(model, acc, n_gpus, dtype, context)
    if published:
        ax.plot(
            [int(p.setting["batch"]) for p in published],
            [p.value * 1e3 for p in published],
            "ks",
            mfc="none",
            ms=6,
            label="published step (ms), similar context",
        )
    if fit:
        ax.axvline(fit, color="grey", lw=1, label=f"largest batch that fits ({fit})")
    ax.set_xlabel("decode batch (sequences)")
    ax.set_ylabel("time per decode step (ms)")
    rate = ax.twinx()
    rate.loglog(
        sweep, sweep / times, color="C3", ls="-.", label="tokens/s (right axis)"
    )
    rate.set_ylabel("generated tokens/s (upper bound)")
    rate.grid(False)
    plots.plain_log_ticks(ax, rate)
    ax.legend(loc="upper left", fontsize=plots.SMALL)
    rate.legend(loc="lower right", fontsize=plots.SMALL)
    device = f"{n_gpus} x {hardware.get_accelerator(acc).name}"
    if not inference.weights_fit(model, acc, n_gpus=n_gpus, dtype=dtype):
        weights = llm.weight_bytes(model, dtype=dtype)
        warning = (
            f" **The weights alone ({weights / 1e9:,.0f} GB) do not fit** on {device}: "
            "the times are what the memory would allow if they did."
        )
    elif fit == 0:
        warning = f" **Not even one sequence of {context:,} tokens fits** beside the weights on {device}."
    elif batch > fit:
        warning = (
            f" **A batch of {batch} does not fit** (weights + KV exceed {device})."
        )
    else:
        warning = ""
    per_token = llm.kv_cache_bytes_per_token(model, dtype=dtype)
    same = [p for p in published if int(p.setting["batch"]) == batch]
    if same:
        p = min(same, key=lambda p: abs(_mean_context(p) - context))
        measured = (
            f" **Published** at batch {batch}: {format_si(p.value, 's')} per step "
            f"({p.setting['framework']}, {int(p.setting['input_len']):,} -> "
            f"{int(p.setting['output_len']):,} tokens, [source]({p.source}))."
        )
    else:
        measured = ""
    return (
        f"**Prefill** of {batch} prompt(s) x {context:,} tokens: at least "
        f"{format_si(prefill.seconds, 's')} ({prefill.bound}-bound). "
        f"**Decode step** at batch {batch}: at least {format_si(step.seconds, 's')} "
        f"({step.bound}-bound), at most {batch / step.seconds:,.0f} tokens/s. "
        f"**KV cache**: {per_token / 1024:,.0f} KiB/token, {kv_seq / 1e9:,.2f} GB per sequence, "
        f"{batch * kv_seq / 1e9:,.1f} GB for the batch. "
        f"**Largest batch that fits** ({inference.RESERVE * 100:g} % reserve): {fit}.{warning}"
        f"{measured}"
    )


def _mean_context(point: Any) -> int:
    """The mean decode context of a published point's requests (``inference.mean_decode_context``)."""
    return inference.mean_decode_context(
        int(point.setting["input_len"]), int(point.setting["output_len"])
    )


def _published_near(
    model: str, acc: str, n_gpus: int, dtype: str, context: int
) -> list[Any]:
    """Published decode steps of this setting whose requests' mean context is within 2x of ``context``."""
    return [
        p
        for p in inference.published_decode_steps(
            model, acc, n_gpus=n_gpus, dtype=dtype
        )
        if context / 2 <= _mean_context(p) <= 2 * context
    ]


def transformer_inference() -> Calculator:
    """Chapter 6's calculator: a model on ``n_gpus`` accelerators, a batch, a context, a dtype."""
    controls = {
        "model": _controls.model("llama-3-8b"),
        "acc": _controls.accelerator("H100 SXM", description="GPU"),
        "n_gpus": widgets.Dropdown(options=[1, 2, 4, 8], value=1, description="GPUs"),
        "batch": widgets.BoundedIntText(value=32, min=1, max=4096, description="batch"),
        "context": widgets.BoundedIntText(
            value=4096, min=1, max=131072, step=512, description="context"
        ),
        "dtype": _controls.dtype("bf16"),
    }
    return Calculator(controls, render_transformer_inference)


# ---------------------------------------------------------------------------
# Chapter 7: transfer or recompute
# ---------------------------------------------------------------------------


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
    """Chapter 7: time to recompute a prefix's KV cache against time to fetch it, over prefix lengths.

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
        label=f"recompute: prefill on {n_gpus} x {device.name} at {mfu:.0%} MFU",
    )
    ax.loglog(lengths, fetch, label=f"fetch: {n_links} x {chosen.name}")
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
    flops_per_link_byte = (
        n_gpus * mfu * device.flops(dtype) / (n_links * chosen.bandwidth)
    )
    m = llm.get_model(model)
    c_n = kvcache.hidden_size_constant(m, dtype=dtype, tokens=tokens)
    return (
        f"**{result.verdict.capitalize()}** is {result.speedup:,.1f}x faster for a {tokens:,}-token "
        f"prefix ({dtype}): recompute {format_si(result.recompute_s, 's')}, fetch "
        f"{format_si(result.transfer_s, 's')} "
        f"({format_si(llm.kv_cache_bytes(m, tokens, dtype=dtype), 'B')} of KV cache). "
        f"Fetching wins above {format_si(result.threshold_bandwidth, 'B/s')} of link bandwidth; "
        f"you have {format_si(n_links * chosen.bandwidth, 'B/s')}. Compute-bound rule: $F/B$ = "
        f"{flops_per_link_byte:,.0f} vs $c(n)\\,d$ = {c_n * m.d_model:,.0f} FLOP/byte. "
        f"Over prefix lengths, {where}.{fits}"
    )


def transfer_or_recompute() -> Calculator:
    """Chapter 7's calculator: recompute on GPUs at an MFU, or fetch over links, for one prefix."""
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


# ---------------------------------------------------------------------------
# Chapter 9: a KV-cache pool replayed against a trace
# ---------------------------------------------------------------------------

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
    """Chapter 9: hit rate against pool size for one trace, and the prefill compute the pool saves.

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
    peak = n_gpus * device.flops("bf16")
    return (
        f"**Hit rate {hit:.1%}** of prompt tokens (ceiling {ceiling:.1%}). The pool holds "
        f"{capacity / 1e6:,.2f} M tokens ({math.floor(capacity / block_tokens):,} blocks of "
        f"{block_tokens}); the trace references {sd.distinct_blocks * block_tokens / 1e6:,.1f} M "
        f"distinct tokens. **Prefill saved: {saved / total:.1%}** of {total / 1e18:,.1f} EFLOP, "
        f"{saved / peak:,.0f} s of {n_gpus} x {device.name} at peak bf16."
    )


def kv_pool(traces: Mapping[str, cachesim.Trace]) -> Calculator:
    """Chapter 9's calculator: a model, a KV dtype, one of ``traces``, a pool size and a block size."""
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


# ---------------------------------------------------------------------------
# Chapter 10: attention offload, priced
# ---------------------------------------------------------------------------


def render_attention_offload(
    ax: Axes,
    model: str,
    context: int,
    compute: str,
    n_compute: int,
    memory: str,
    n_memory: int,
    link: str,
    n_baseline: int,
    price_compute: float,
    price_memory: float,
    dtype: str,
) -> str:
    """Chapter 10: tokens per dollar against the batch, all-GPU baseline against attention offload."""
    if not inference.weights_fit(model, compute, n_gpus=n_compute, dtype=dtype):
        raise ValueError(
            f"n_compute: the weights of {model} do not fit on {n_compute} × {compute}"
        )
    base_cap = inference.max_decode_batch(
        model, context, compute, n_gpus=n_baseline, dtype=dtype
    )
    off_cap = inference.max_decode_batch(
        model, context, memory, n_gpus=n_memory, dtype=dtype, holds_weights=False
    )
    if base_cap == 0 or off_cap == 0:
        raise ValueError(
            "n_baseline / n_memory: not even one sequence's KV cache fits; "
            "add devices or shorten the context"
        )
    base_price = n_baseline * price_compute
    off_price = n_compute * price_compute + n_memory * price_memory
    base_b, off_b = _controls.batch_grid(base_cap), _controls.batch_grid(off_cap)
    base = [
        b
        / inference.decode_step_time(
            model,
            context,
            compute,
            batch=int(b),
            dtype=dtype,
            n_gpus=n_baseline,
            link=None,  # offload's model has no TP communication either
        )
        for b in base_b
    ]
    steps = [
        offload.offload_step_time(
            model,
            context,
            compute,
            memory,
            link,
            batch=int(b),
            n_compute=n_compute,
            n_memory=n_memory,
            dtype=dtype,
        )
        for b in off_b
    ]
    over = [b / s.overlapped_s for b, s in zip(off_b, steps, strict=True)]
    serial = [b / s.serial_s for b, s in zip(off_b, steps, strict=True)]

    def per_dollar(rates: list[float], price: float) -> list[float]:
        return [offload.tokens_per_dollar(r, price) for r in rates]

    ax.loglog(
        base_b,
        per_dollar(base, base_price),
        label=f"{n_baseline} × {compute} (baseline)",
    )
    ax.loglog(
        off_b,
        per_dollar(over, off_price),
        label=f"offload, overlapped: {n_compute} × {compute} + {n_memory} × {memory}",
    )
    ax.loglog(off_b, per_dollar(serial, off_price), ls="--", label="offload, serial")
    ax.set_xlabel("batch (sequences per decode step)")
    ax.set_ylabel("tokens per dollar (your prices)")
    ax.legend(fontsize=plots.SMALL)
    last = steps[-1]
    ratio = offload.breakeven_price_ratio(
        over[-1], n_compute, n_memory, base[-1], n_baseline
    )
    verdict = " (it cannot win even with free memory devices)." if ratio <= 0 else "."
    return (
        f"**Baseline** {n_baseline} × {compute}: batch {base_cap}, {base[-1]:,.0f} tokens/s, "
        f"**{offload.tokens_per_dollar(base[-1], base_price):,.0f} tokens/\\$**.  \n"
        f"**Offload** {n_compute} × {compute} + {n_memory} × {memory}: batch {off_cap}, step "
        f"{last.linear_s * 1e3:.1f} ms linear / {last.attention_s * 1e3:.1f} ms attention / "
        f"{last.transfer_s * 1e3:.1f} ms link; {over[-1]:,.0f} tokens/s overlapped "
        f"({serial[-1]:,.0f} serial), "
        f"**{offload.tokens_per_dollar(over[-1], off_price):,.0f} tokens/\\$** overlapped.  \n"
        f"Price-free: at these batches offload ties when one {memory} costs **{ratio:.2f} ×** "
        f"one {compute}{verdict}"
    )


def attention_offload() -> Calculator:
    """Chapter 10's calculator: compute GPUs, memory devices, the link, a baseline and prices per hour."""
    controls = {
        "model": _controls.model("llama-3-70b"),
        "context": widgets.BoundedIntText(
            value=4096, min=0, max=1_000_000, step=1024, description="context"
        ),
        "compute": _controls.accelerator("H100 SXM", description="compute"),
        "n_compute": widgets.BoundedIntText(
            value=4, min=1, max=64, description="# compute"
        ),
        "memory": _controls.accelerator("H20", description="memory"),
        "n_memory": widgets.BoundedIntText(
            value=8, min=1, max=512, description="# memory"
        ),
        "link": _controls.link("ConnectX-7 (400 Gb/s)"),
        "n_baseline": widgets.BoundedIntText(
            value=8, min=1, max=64, description="# baseline"
        ),
        "price_compute": widgets.BoundedFloatText(
            value=ILLUSTRATIVE_PRICE["H100 SXM"],
            min=0,
            max=1000,
            step=0.1,
            description="$/h compute",
        ),
        "price_memory": widgets.BoundedFloatText(
            value=ILLUSTRATIVE_PRICE["H20"],
            min=0,
            max=1000,
            step=0.1,
            description="$/h memory",
        ),
        "dtype": _controls.dtype("bf16"),
    }
    return Calculator(controls, render_attention_offload)


# ---------------------------------------------------------------------------
# Chapter 11: a tiered KV cache, per chunk
# ---------------------------------------------------------------------------


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
    """Chapter 11: per part of a prompt, fetch from its tier or compute; the expected prefill time.

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
    """Chapter 11's calculator: the example hierarchy's capacities and links, replayed on ``distances``."""
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


__all__ = [
    "ILLUSTRATIVE_PRICE",
    "TRANSFER_MAX_TOKENS",
    "attention_offload",
    "kv_pool",
    "kv_tiers",
    "render_attention_offload",
    "render_kv_pool",
    "render_kv_tiers",
    "render_transfer_or_recompute",
    "render_transformer_inference",
    "transfer_or_recompute",
    "transformer_inference",
]
