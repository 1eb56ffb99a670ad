"""Chapter ``plan_deployment``'s calculator: plan a deployment and draw its candidates' goodput.

Same pattern as the other calculators: :func:`render_plan_deployment` draws and
returns a Markdown summary (and raises ``ValueError``/``KeyError`` naming a bad
input), :func:`plan_deployment` wires it to ipywidgets controls. Every number
comes from :func:`helpers.planner.plan`.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets
from matplotlib.axes import Axes

from .. import planner, plots
from ..widgets import Calculator
from . import _controls

__all__ = ["plan_deployment", "plan_deployment_controls", "render_plan_deployment"]

SHOWN = 8
"""Candidates the calculator draws (the best first)."""


def render_plan_deployment(
    ax: Axes,
    model: str,
    acc: str,
    n_gpus: int,
    input_len: int,
    output_len: int,
    ttft_s: float,
    tbt_ms: float,
    hit_rate: float,
    gpu_hour_usd: float,
) -> str:
    """Chapter ``plan_deployment``: the planner's ranked layouts as bars of goodput per GPU, and the plan in words.

    Bars: output tokens per second per GPU of the best ``SHOWN``
    candidates of :func:`helpers.planner.plan`, hatched by mode (aggregated
    plain, disaggregated hatched) so the figure reads without colour.
    """
    p = planner.plan(
        model,
        acc,
        n_gpus=int(n_gpus),
        input_len=int(input_len),
        output_len=int(output_len),
        ttft_slo_s=ttft_s,
        tbt_slo_s=tbt_ms / 1e3,
        hit_rate=hit_rate or None,
        gpu_hour_usd=gpu_hour_usd,
    )
    shown = p.candidates[:SHOWN][::-1]
    ax.barh(
        range(len(shown)),
        [c.goodput_tokens_per_s_per_gpu for c in shown],
        color=["0.75" if c.mode == "aggregated" else "0.45" for c in shown],
        hatch=None,
        edgecolor="black",
    )
    for i, c in enumerate(shown):
        if c.mode == "disaggregated":
            ax.patches[i].set_hatch("//")
    ax.set_yticks(range(len(shown)), [c.label for c in shown], fontsize=plots.SMALL)
    ax.set_xlabel("output tokens/s per GPU within both targets")
    b = p.best
    cost = (
        f" At \\${gpu_hour_usd:g} per GPU-hour that is"
        f" **\\${p.usd_per_million_tokens:,.2f} per million output tokens**."
        if p.usd_per_million_tokens is not None
        else ""
    )
    return (
        f"Plan: **{b.label}**, on {b.gpus} GPUs. "
        f"It serves **{p.goodput_tokens_per_s_per_gpu:,.0f} output tokens/s per GPU**. "
        f"It runs {b.batch} sequences per step. "
        f"Binding: {p.binding}.{cost} Runner-up: {p.why_not_runner_up or 'none'}."
    )


def plan_deployment_controls() -> dict[str, Any]:
    """The controls of :func:`plan_deployment`, keyed by :func:`render_plan_deployment`'s arguments."""
    return {
        "model": _controls.model("llama-3-70b"),
        "acc": _controls.accelerator("H100 SXM", description="GPU"),
        "n_gpus": widgets.Dropdown(
            options=[1, 2, 4, 8, 16, 32, 64], value=16, description="GPUs"
        ),
        "input_len": widgets.BoundedIntText(
            value=4096, min=1, max=131_072, description="prompt"
        ),
        "output_len": widgets.BoundedIntText(
            value=512, min=1, max=32_768, description="output"
        ),
        "ttft_s": widgets.FloatSlider(
            value=2.0, min=0.2, max=20.0, step=0.2, description="TTFT p90 (s)"
        ),
        "tbt_ms": widgets.FloatSlider(
            value=50.0, min=10.0, max=300.0, step=5.0, description="TBT p90 (ms)"
        ),
        "hit_rate": widgets.FloatSlider(
            value=0.0, min=0.0, max=0.9, step=0.05, description="cache hits"
        ),
        "gpu_hour_usd": widgets.FloatSlider(
            value=2.5, min=0.25, max=10.0, step=0.25, description="$/GPU-h"
        ),
    }


def plan_deployment() -> Calculator:
    """Chapter ``plan_deployment``'s calculator (see :func:`render_plan_deployment`)."""
    return Calculator(plan_deployment_controls(), render_plan_deployment)
