"""The package's module map and its calling convention, checked over every module.

``helpers.MODULES`` is the one list of modules: every module on disk is in it
(and nothing else), and the README's layout table and the API page name each
one. The convention of ``helpers/__init__.py``: every parameter with a default
is keyword-only, so ``f(model, 4096, "H100", 8)`` is a TypeError instead of a
silently different question. The few exceptions are listed in :data:`EXEMPT`,
each with its reason. The modules that measure this machine (``MODULES["measure"]``,
torch) are left out here: their signatures follow the labs' timing harness.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import sys
from pathlib import Path

import pytest

import helpers

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))
import api_pages  # noqa: E402

PUBLIC = [
    m.name for m in pkgutil.iter_modules(helpers.__path__) if not m.name.startswith("_")
]
CHECKED = sorted(set(PUBLIC) - set(helpers.MODULES["measure"]))

EXEMPT: dict[str, str] = {
    "ops.resnet50_layers.batch": "the batch is the only input; ops.resnet50_layers() reads as batch 1",
    "fusion.resnet50_kernels.batch": "the batch is the only input, as in ops.resnet50_layers",
    "formatting.format_si.unit": "the unit is part of the value printed: format_si(t, 's')",
    "plots.roofline_plot.dtypes": "devices and dtypes together are what is drawn",
    "published.load.kind": "the kind is what is loaded; published.load() reads as every kind",
    "traces.load_traces.names": "the names are what is loaded; load_traces() reads as both open traces",
    "tiers.example_hierarchy.acc": "the accelerator is the 'where' of the convention, positional",
    "achievable.achievable_device.dtype": "GPU and precision together name a published device",
    "achievable.fractions.dtype": "as achievable.achievable_device",
}
"""``module.function.parameter`` -> why that defaulted parameter may stay positional."""


def test_the_module_map_lists_every_module_once():
    """``MODULES`` holds each public module exactly once, and every one exists."""
    listed = [name for group in helpers.MODULES.values() for name in group]
    assert len(listed) == len(set(listed)), "a module is listed twice"
    assert sorted(listed) == sorted(PUBLIC)
    assert set(helpers.MODULES) == {"model", "measure", "book"}


def test_readme_and_api_page_name_every_module():
    """The README's layout table names each module in backticks; appendix/api.md documents each."""
    readme = (ROOT / "README.md").read_text()
    layout = next(
        line for line in readme.splitlines() if line.startswith("| `helpers/`")
    )
    api = api_pages.reference_text(
        ROOT
    )  # appendix/api.md and its generated module pages
    documented = set(re.findall(r"\.\. automodule:: helpers\.(\w+)", api))
    missing_readme = [m for m in PUBLIC if f"`{m}`" not in layout]
    assert missing_readme == [], f"README.md's layout table lacks {missing_readme}"
    assert documented == set(PUBLIC), (
        f"appendix/api.md: missing {sorted(set(PUBLIC) - documented)}, "
        f"unknown {sorted(documented - set(PUBLIC))}"
    )


def test_measuring_modules_do_not_load_torch_with_the_package():
    """``import helpers`` and every model and book module import without torch (the chapters run in the browser)."""
    import subprocess
    import sys

    names = ", ".join(f"helpers.{m}" for m in CHECKED)
    code = f"import sys, {names}; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def _public_functions():
    for name in CHECKED:
        module = importlib.import_module(f"helpers.{name}")
        for attr, func in inspect.getmembers(module, inspect.isfunction):
            if not attr.startswith("_") and func.__module__.startswith(module.__name__):
                yield f"{name}.{attr}", func


@pytest.mark.parametrize(
    "qualified, func",
    list(_public_functions()),
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_defaulted_parameters_are_keyword_only(qualified, func):
    """Every parameter with a default is keyword-only, unless :data:`EXEMPT` says why not."""
    params = inspect.signature(func).parameters.values()
    positional = [
        p.name
        for p in params
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        and p.default is not p.empty
        and f"{qualified}.{p.name}" not in EXEMPT
    ]
    assert positional == [], f"{qualified}: {positional} must be keyword-only"


def test_exemptions_name_real_positional_defaults():
    """Each exemption names a parameter that exists, has a default and is positional (no stale entries)."""
    for key in EXEMPT:
        module, function, param = key.rsplit(".", 2)
        p = inspect.signature(
            getattr(importlib.import_module(f"helpers.{module}"), function)
        ).parameters[param]
        assert p.default is not p.empty and p.kind is p.POSITIONAL_OR_KEYWORD, key
