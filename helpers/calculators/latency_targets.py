"""Chapter ``latency_targets``'s calculator: a co-located decode step with a prompt chunk in it,
and the queue before prefill.

Same pattern as the other calculators: :func:`render_latency_targets` draws
and returns a Markdown summary (and raises ``ValueError``/``KeyError`` naming
a bad input), :func:`latency_targets` wires it to ipywidgets controls. Every
number comes from :mod:`helpers.inference`, :mod:`helpers.serving` and
:mod:`helpers.queueing`; step times are roofline bounds without the
tensor-parallel all-reduces (``link=None``).
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.axes import Axes

from .. import hardware, inference, plots, queueing, serving
from ..widgets import Calculator
from . import _controls

__all__ = ["latency_targets", "latency_targets_controls", "render_latency_targets"]

CHUNKS = (64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768)
"""Chunk sizes (tokens) the calculator draws, up to the whole prompt."""


def render_latency_targets(
    ax: Axes,
    model: str,
    acc: str,
    n_gpus: int,
    context: int,
    prompt: int,
    tbt_ms: float,
    ttft_s: float,
) -> str:
    """Chapter ``latency_targets``: the step that carries a full chunk ending a prompt, against the
    chunk size, beside the TBT target.

    The decode batch is the largest whose step meets ``tbt_ms`` at ``context``
    (:func:`helpers.inference.max_batch_under_slo`). Each chunk is costed as the
    one that ends the prompt, attending to the ``prompt - chunk`` tokens before it
    (:func:`helpers.serving.colocated_step_time` with ``prefix``). The summary
    gives the largest drawn chunk that keeps the step within the target, the
    prompt's prefill time with that chunk, and the prefill utilisation an M/D/1
    queue allows under the mean TTFT target ``ttft_s`` for a prefill of the
    whole prompt on its own instance (:func:`helpers.queueing.md1_max_utilisation`).
    """
    device = hardware.get_accelerator(acc)
    prompt = int(prompt)
    if prompt < 1:
        raise ValueError(f"prompt must be at least 1 token, got {prompt}")
    tbt_s = tbt_ms / 1e3
    opts: dict[str, Any] = {"n_gpus": n_gpus, "link": None}
    decode = inference.max_batch_under_slo(model, context, device, tbt_s=tbt_s, **opts)
    alone = serving.colocated_step_time(
        model, context, device, batch=decode.batch, chunk=0, **opts
    )
    chunks = [c for c in CHUNKS if c < prompt] + [prompt]
    steps = [
        serving.colocated_step_time(
            model,
            context,
            device,
            batch=decode.batch,
            chunk=c,
            prefix=prompt - c,
            **opts,
        )
        for c in chunks
    ]
    ax.loglog(
        chunks,
        np.array(steps) * 1e3,
        marker="o",
        label="step with a full chunk ending the prompt",
    )
    ax.axhline(alone * 1e3, color="C2", linestyle=":", label="decode alone")
    ax.axhline(tbt_ms, color="C3", linestyle="--", label=f"TBT target {tbt_ms:g} ms")
    ax.set_xlabel("chunk (tokens)")
    ax.set_ylabel("step time (ms)")
    plots.plain_log_ticks(ax)
    ax.legend(loc="upper left", fontsize=plots.SMALL)
    within = [c for c, t in zip(chunks, steps) if t <= tbt_s]
    prefill = inference.prefill_time(model, prompt, device, **opts)
    queue = (
        f"Prefilled alone on its own instance the prompt takes {prefill:.2f} s; "
        + (
            f"a mean TTFT of {ttft_s:g} s allows that instance to be at most "
            f"**{queueing.md1_max_utilisation(prefill, ttft_s):.0%} busy** (M/D/1)."
            if ttft_s >= prefill
            else f"no load meets a mean TTFT of {ttft_s:g} s."
        )
    )
    if not within:
        chunked = (
            "No chunk drawn keeps the step within the target"
            f" (decode alone takes {alone * 1e3:.1f} ms)"
        )
    else:
        best = max(within)
        total = sum(
            serving.colocated_step_time(
                model,
                context,
                device,
                batch=decode.batch,
                chunk=min(best, prompt - start),
                prefix=start,
                **opts,
            )
            for start in range(0, prompt, best)
        )
        chunked = (
            f"The largest chunk drawn that keeps the step within the target is **{best:,} tokens**; "
            f"the prompt then takes {total:.2f} s of steps to prefill"
        )
    return (
        f"{decode.batch} sequences decode within {tbt_ms:g} ms at {context:,} tokens "
        f"(limited by {decode.limited_by}). {chunked}. {queue}"
    )


def latency_targets_controls() -> dict[str, Any]:
    """The controls of :func:`latency_targets`, keyed by :func:`render_latency_targets`'s arguments."""
    return {
        "model": _controls.model("llama-3-70b"),
        "acc": _controls.accelerator("A800 SXM4 80GB", description="GPU"),
        "n_gpus": widgets.Dropdown(options=[1, 2, 4, 8], value=8, description="GPUs"),
        "context": widgets.BoundedIntText(
            value=12_206, min=0, max=131_072, description="context"
        ),
        "prompt": widgets.BoundedIntText(
            value=12_035, min=1, max=131_072, description="prompt"
        ),
        "tbt_ms": widgets.FloatSlider(
            value=100.0, min=10.0, max=300.0, step=10.0, description="TBT (ms)"
        ),
        "ttft_s": widgets.FloatLogSlider(
            value=10.0, base=10, min=-1, max=1.5, description="TTFT (s)"
        ),
    }


def latency_targets() -> Calculator:
    """Chapter ``latency_targets``'s calculator (see :func:`render_latency_targets`)."""
    return Calculator(latency_targets_controls(), render_latency_targets)
