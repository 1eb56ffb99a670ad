"""Tests of :mod:`helpers.calculators` as a whole: the registry, and what every calculator shares.

Each calculator's own tests (its default, its controls, bad input) are in
``tests/test_calculators_<builder>.py``. Here: :data:`helpers.calculators.CALCULATORS` names
every calculator module once, by a chapter slug that exists; every builder wires its render
function's keywords to controls; dropdowns list the catalogs; one key for an accelerator.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import ipywidgets as widgets
import pytest

from helpers import calculators, formatting, hardware, llm
from helpers.widgets import Calculator

ROOT = Path(__file__).resolve().parents[1]
DATA = {"kv_pool", "kv_tiers"}
"""Builders that take the chapter's loaded data (a trace, its stack distances) as arguments."""
WITHOUT_DATA = [b for b in calculators.CALCULATORS.values() if b.__name__ not in DATA]


def _render(build):
    return getattr(calculators, f"render_{build.__name__}")


def test_the_registry_names_every_calculator_module_once_by_a_real_chapter():
    """A module in ``helpers/calculators/`` that is neither private nor an old home (a moved-name
    shim) is in CALCULATORS, under the slug of a chapter in ``_toc.yml``; each builder lives in
    the module of its own name, beside ``render_<builder>``, and no module exceeds 200 lines."""
    from helpers._moved import MOVED

    shims = {old.split(".")[1] for old in MOVED if old.startswith("calculators.")}
    folder = ROOT / "helpers" / "calculators"
    modules = {
        p.stem for p in folder.glob("*.py") if not p.stem.startswith("_")
    } - shims
    builders = [b.__name__ for b in calculators.CALCULATORS.values()]
    assert sorted(builders) == sorted(modules)
    toc = (ROOT / "_toc.yml").read_text(encoding="utf-8")
    slugs = set(re.findall(r"file: \w+/(?:\d+_)?(\w+)", toc))
    assert set(calculators.CALCULATORS) <= slugs, set(calculators.CALCULATORS) - slugs
    for build in calculators.CALCULATORS.values():
        assert build.__module__ == f"helpers.calculators.{build.__name__}"
        assert _render(build).__module__ == build.__module__
        lines = len((folder / f"{build.__name__}.py").read_text().splitlines())
        assert lines <= 200, f"{build.__name__}.py has {lines} lines: split it"


def test_each_chapter_shows_the_calculator_the_registry_names():
    """The chapter of each slug calls its builder (``calculators.<builder>(``)."""
    for slug, build in calculators.CALCULATORS.items():
        [page] = [
            p
            for p in ROOT.glob("chapters/*.ipynb")
            if re.fullmatch(rf"\d+_{slug}", p.stem)
        ]
        assert f"calculators.{build.__name__}(" in page.read_text(encoding="utf-8"), (
            slug
        )


@pytest.mark.parametrize("build", WITHOUT_DATA, ids=lambda f: f.__name__)
def test_builder_wires_every_render_argument_to_a_control(build):
    """Each builder returns a Calculator whose controls are exactly its render function's
    keywords; where the module has ``<builder>_controls()`` (as a chapter may build them), the
    same defaults both ways."""
    render = _render(build)
    calc = build()
    assert isinstance(calc, Calculator)
    assert calc.render is render
    wanted = list(inspect.signature(render).parameters)[1:]  # all but ax
    assert list(calc.controls) == wanted
    assert all(isinstance(c, widgets.ValueWidget) for c in calc.controls.values())
    make = getattr(inspect.getmodule(build), f"{build.__name__}_controls", None)
    if make is not None:
        controls = make()
        assert {k: c.value for k, c in controls.items()} == calc.values()
        assert Calculator(controls, render).update() == calc.update()


def test_dropdowns_enumerate_the_catalogs():
    """Every accelerator, link and model of the catalogs is offered, in catalog order."""
    accelerators = [a.name for a in hardware.accelerators()]
    models = [m.name for m in llm.models()]
    calc = calculators.transformer_inference()
    assert list(calc.controls["acc"].options) == accelerators
    assert list(calc.controls["model"].options) == models
    calc = calculators.transfer_or_recompute()
    assert list(calc.controls["link"].options) == [
        link.name for link in hardware.links()
    ]
    calc = calculators.attention_offload()
    assert (
        list(calc.controls["compute"].options)
        == accelerators
        == list(calc.controls["memory"].options)
    )


def test_plain_log_ticks_labels_plain_numbers():
    """Log axes show 4, 6, 10, 20 rather than powers of ten."""
    calc = calculators.transformer_inference()
    calc.update()
    formatter = calc.axes.yaxis.get_major_formatter()
    assert formatter(20.0, 0) == "20"


def test_format_intensity():
    """No decimals from 100 FLOP/byte up (thousands separated), three significant digits below."""
    assert formatting.format_intensity(2730.67) == "2,731"
    assert formatting.format_intensity(227.6) == "228"
    assert formatting.format_intensity(0.25) == "0.25"
    assert formatting.format_intensity(85.333) == "85.3"


# --------------------------------------------------------------------------------------------------
# Chapter ``two_ceilings``


# --------------------------------------------------------------------------------------------------
# Chapter ``roofline``


# --------------------------------------------------------------------------------------------------
# Chapter ``batching``


# --------------------------------------------------------------------------------------------------
# Chapter ``convolutions``


def test_every_single_accelerator_control_is_keyed_acc():
    """Parts I and II share one key: a calculator with one accelerator dropdown names it ``acc``
    (Chapter ``two_ceilings``'s ``two_ceilings`` and Chapter ``transformer_inference``'s ``transformer_inference`` alike), offering the
    whole catalog; Chapter ``roofline``'s multi-select keeps its plural ``accelerators``."""
    from helpers.hardware import accelerators

    names = [a.name for a in accelerators()]
    for build in WITHOUT_DATA:
        controls = build().controls
        assert "accelerator" not in controls, build.__name__
        if "acc" in controls:
            assert list(controls["acc"].options) == names, build.__name__
    assert calculators.two_ceilings().controls["acc"].value == "T4"


def test_overhead_slider_starts_at_the_default_overhead():
    """The shared t0 slider starts at ``batching.DEFAULT_OVERHEAD_S`` in microseconds and spans
    0.1 us to 10**max_exponent us."""
    from helpers import batching
    from helpers.calculators import _controls

    slider = _controls.overhead_us(max_exponent=3)
    assert slider.value == pytest.approx(batching.DEFAULT_OVERHEAD_S * 1e6)
    assert (slider.min, slider.max) == (-1, 3)
