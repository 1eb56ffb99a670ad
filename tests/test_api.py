"""The package's module map and its calling convention, checked over every module.

``helpers.MODULES`` is the one list of modules: every module on disk is in it
(and nothing else), and the README's layout table and the API page name each
one. The convention of ``helpers/__init__.py``: every parameter with a default
is keyword-only, so ``f(model, 4096, "H100", 8)`` is a TypeError instead of a
silently different question. The few exceptions are listed in :data:`EXEMPT`,
each with its reason. Public methods are held to it as functions are, and the modules that
measure this machine (``MODULES["measure"]``) too, where torch is installed.
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
from helpers._moved import MOVED as _MOVED_NAMES

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
    "bench.device_name.dev": "the device is what is named: device_name() reads as this machine's",
    "bench.describe_device.dev": "the device is what is described, as bench.device_name",
    "bench.supported_dtypes.dev": "the device is what is asked about, as bench.device_name",
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


def _callables(name: str):
    """``module.function`` and ``module.Class.method`` for every public function of module
    ``name`` and every public method of its public classes (static and class methods too)."""
    module = importlib.import_module(f"helpers.{name}")
    for attr, obj in inspect.getmembers(module):
        if attr.startswith("_") or not getattr(obj, "__module__", "").startswith(
            module.__name__
        ):
            continue
        if inspect.isfunction(obj):
            yield f"{name}.{attr}", obj
        elif inspect.isclass(obj):
            for method, member in vars(obj).items():
                func = getattr(member, "__func__", member)
                if not method.startswith("_") and inspect.isfunction(func):
                    yield f"{name}.{attr}.{method}", func


def _positional_defaults(qualified: str, func) -> list[str]:
    params = inspect.signature(func).parameters.values()
    return [
        p.name
        for p in params
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        and p.default is not p.empty
        and f"{qualified}.{p.name}" not in EXEMPT
    ]


@pytest.mark.parametrize(
    "qualified, func",
    [c for name in CHECKED for c in _callables(name)],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_defaulted_parameters_are_keyword_only(qualified, func):
    """Every parameter with a default is keyword-only, in functions and public methods alike,
    unless :data:`EXEMPT` says why not."""
    positional = _positional_defaults(qualified, func)
    assert positional == [], f"{qualified}: {positional} must be keyword-only"


MEASURE_PENDING: dict[str, str] = {}
"""Positional defaults of the measure modules that the labs branch makes keyword-only this round.
Neither skipped nor expected to fail: the test below fails on a new one, and on an entry that is
already keyword-only (delete this table once that branch is merged)."""


@pytest.mark.parametrize("name", helpers.MODULES["measure"])
def test_measure_modules_follow_the_convention_too(name):
    """The modules that measure this machine (torch) keep the convention, methods included; they
    are imported only where torch is installed (CI and ``make test`` have it)."""
    pytest.importorskip("torch")
    found = {
        f"{qualified}.{param}"
        for qualified, func in _callables(name)
        for param in _positional_defaults(qualified, func)
    }
    pending = {key for key in MEASURE_PENDING if key.startswith(f"{name}.")}
    assert sorted(found - pending) == [], "must be keyword-only"
    assert sorted(pending - found) == [], (
        "keyword-only now: delete from MEASURE_PENDING"
    )


def test_exemptions_name_real_positional_defaults():
    """Each exemption names a parameter that exists, has a default and is positional (no stale entries)."""
    for key in EXEMPT:
        module, function, param = key.rsplit(".", 2)
        p = inspect.signature(
            getattr(importlib.import_module(f"helpers.{module}"), function)
        ).parameters[param]
        assert p.default is not p.empty and p.kind is p.POSITIONAL_OR_KEYWORD, key


# ---------------------------------------------------------------------------
# No module takes another module's private name
# ---------------------------------------------------------------------------

PRIVATE_IMPORTS_PENDING: dict[str, str] = {}
"""Crossings of the rule below that other branches remove this round, each with its owner.
The list may only shrink: a test fails on an entry that no longer crosses."""


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT / "helpers").with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _private_crossings() -> list[str]:
    """``importer <- module._name`` for every private name a module takes from a public module
    other than itself or its own package (``from .x import _name``, or ``x._name`` after
    ``from . import x``). A private module (``_args``, ``_prefix_cache``) may share anything."""
    import ast

    found = []
    for path in sorted((ROOT / "helpers").rglob("*.py")):
        me = _module_name(path)
        package = me.split(".")[:-1] if path.name != "__init__.py" else me.split(".")
        bound: dict[str, str] = {}
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom) or not node.level:
                continue
            base = (
                package[: len(package) - (node.level - 1)]
                if node.level > 1
                else package
            )
            source = ".".join([*base, *([node.module] if node.module else [])]).strip(
                "."
            )
            for alias in node.names:
                private = alias.name.startswith("_") and not alias.name.startswith("__")
                if private and source and not source.split(".")[-1].startswith("_"):
                    if source != me and not me.startswith(f"{source}."):
                        found.append(f"{me} <- {source}.{alias.name}")
                elif not private:
                    bound[alias.asname or alias.name] = f"{source}.{alias.name}".strip(
                        "."
                    )
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in bound
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                module = bound[node.value.id]
                if not module.split(".")[-1].startswith("_") and module != me:
                    found.append(f"{me} <- {module}.{node.attr}")
    return sorted(set(found))


def test_no_module_imports_another_modules_private_name():
    """A private name is its module's business: a name two modules share is public, or lives in
    a private module (``helpers._prefix_cache`` holds the LRU that cachesim and routing share)."""
    crossings = _private_crossings()
    new = [c for c in crossings if c not in PRIVATE_IMPORTS_PENDING]
    assert new == [], f"modules take private names of others: {new}"
    fixed = sorted(set(PRIVATE_IMPORTS_PENDING) - set(crossings))
    assert fixed == [], (
        f"no longer crossing, delete from PRIVATE_IMPORTS_PENDING: {fixed}"
    )


def test_the_private_import_rule_sees_both_spellings(tmp_path, monkeypatch):
    """The scan is not vacuous: ``from .cachesim import _x`` and ``cachesim._x`` are both found,
    and a private module's names and a module's own are not."""
    pkg = tmp_path / "helpers"
    pkg.mkdir()
    (pkg / "a.py").write_text(
        "from .cachesim import _lru\nfrom . import traces\nfrom ._args import _is_number\n"
        "x = traces._check\ny = _lru\n"
    )
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    assert _private_crossings() == ["a <- cachesim._lru", "a <- traces._check"]


# ---------------------------------------------------------------------------
# One table of moved names, with an end
# ---------------------------------------------------------------------------


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def test_moved_names_are_removed_on_time():
    """Every moved name goes in ``_moved.REMOVE_IN``: from that version on, the table must be
    empty (delete the shims, their tests, and the ``__getattr__`` lines)."""
    from helpers import _moved

    assert _version(_moved.REMOVE_IN) > (0, 2, 0), "REMOVE_IN is a future release"
    if _version(helpers.__version__) >= _version(_moved.REMOVE_IN):
        assert dict(_moved.MOVED) == {}, (
            f"version {helpers.__version__} removes the moved names: {sorted(_moved.MOVED)}"
        )


@pytest.mark.parametrize("old", sorted(_MOVED_NAMES))
def test_each_moved_name_warns_and_reaches_its_new_home(old):
    """Each old name still resolves, to the very object of its new home, with a warning that
    names the new home and the removal version."""
    import warnings

    from helpers import _moved

    module, _, name = old.rpartition(".")
    home, _, new = _moved.MOVED[old].rpartition(".")
    target = getattr(importlib.import_module(f"helpers.{home}"), new)
    with pytest.warns(
        DeprecationWarning, match=rf"is now helpers\.{home}\.{new} .*{_moved.REMOVE_IN}"
    ):
        value = getattr(importlib.import_module(f"helpers.{module}"), name)
    assert value is target
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(AttributeError, match="no_such_name"):
            _ = importlib.import_module(f"helpers.{module}").no_such_name


def test_shims_are_the_one_forwarder():
    """No module hand-writes a ``__getattr__``: a module with moved names ends with
    ``__getattr__ = forwarder(__name__)``, and only such a module has one."""
    from helpers import _moved

    olds = {old.rpartition(".")[0] for old in _moved.MOVED}
    for path in sorted((ROOT / "helpers").rglob("*.py")):
        if path.name == "_moved.py":
            continue
        text = path.read_text(encoding="utf-8")
        me = _module_name(path)
        assert "def __getattr__" not in text, path
        assert ("__getattr__ = forwarder(__name__)" in text) == (me in olds), me


def test_the_convention_scan_sees_methods():
    """Not vacuous: public methods are collected (a dataclass's method, a class method alike)."""
    names = {qualified for qualified, _ in _callables("tiers")}
    assert "tiers.ReplayedPrefill.saved_fraction" in names
    assert _positional_defaults("x.f", lambda a, b=1, *, c=2: a) == ["b"]
