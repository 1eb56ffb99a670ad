"""The calculator of the chapter ``transformer_inference``:
prefill and decode bounds, the KV cache and the largest batch that fits, against the batch.

:func:`transformer_inference` builds it (controls with the chapter's defaults) around
:func:`render_transformer_inference`, which draws and returns a Markdown summary. Conventions
are in :mod:`helpers.calculators`.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.axes import Axes

from .. import hardware, inference, llm, plots
from ..formatting import format_si
from ..widgets import Calculator
from . import _controls

__all__ = ["render_transformer_inference", "transformer_inference"]


def render_transformer_inference(
    ax: Axes, model: str, acc: str, n_gpus: int, batch: int, context: int, dtype: str
) -> str:
    """Chapter ``transformer_inference``: decode step time and tokens/s against the batch; prefill,
    KV cache and the largest batch.

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
    """Chapter ``transformer_inference``'s calculator: a model on ``n_gpus`` accelerators, a batch,
    a context, a dtype."""
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
