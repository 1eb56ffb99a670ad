"""Tests for :mod:`helpers.calculators.plan_deployment`: chapter ``plan_deployment``'s calculator wires the planner to its controls."""

from __future__ import annotations

import importlib
import inspect

import ipywidgets as widgets
import pytest

from helpers import planner

# the package re-exports the builder under the module's name, so import the module itself
cp = importlib.import_module("helpers.calculators.plan_deployment")


def test_builder_wires_every_render_argument_to_a_control() -> None:
    calc = cp.plan_deployment()
    assert calc.render is cp.render_plan_deployment
    wanted = list(inspect.signature(cp.render_plan_deployment).parameters)[1:]
    assert list(calc.controls) == wanted
    assert all(isinstance(c, widgets.ValueWidget) for c in calc.controls.values())


def test_default_summary_is_the_planners_plan(ax) -> None:
    values = cp.plan_deployment().values()
    text = cp.render_plan_deployment(ax, **values)
    p = planner.plan(
        values["model"],
        values["acc"],
        n_gpus=values["n_gpus"],
        input_len=values["input_len"],
        output_len=values["output_len"],
        ttft_slo_s=values["ttft_s"],
        tbt_slo_s=values["tbt_ms"] / 1e3,
        gpu_hour_usd=values["gpu_hour_usd"],
    )
    assert f"**{p.best.label}**" in text
    assert f"{p.goodput_tokens_per_s_per_gpu:,.0f} output tokens/s per GPU" in text
    assert len(ax.patches) == min(cp.SHOWN, len(p.candidates))
    # disaggregated bars are hatched, aggregated ones not: the figure reads without colour
    hatched = [bool(bar.get_hatch()) for bar in ax.patches]
    modes = [c.mode == "disaggregated" for c in p.candidates[: cp.SHOWN][::-1]]
    assert hatched == modes


def test_bad_input_names_it(ax) -> None:
    values = cp.plan_deployment().values()
    with pytest.raises(KeyError, match="accelerator"):
        cp.render_plan_deployment(ax, **(values | {"acc": "no such GPU"}))
    with pytest.raises(ValueError, match="input_len"):
        cp.render_plan_deployment(ax, **(values | {"input_len": 0}))
