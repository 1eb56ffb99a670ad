"""Every example in a helpers docstring runs and prints what it shows.

The API reference (appendix/api.md) renders the docstrings, so a ``>>>``
example is a claim to the reader; this runs each one with :mod:`doctest`.
Covered: the package docstring and every module of ``helpers.MODULES``, with
the private ones and those inside its packages (``helpers.validation._kinds``),
except the modules that measure this machine (``MODULES["measure"]``: their
examples would time the host and need torch).
"""

from __future__ import annotations

import doctest
import importlib
import io
import pkgutil

import pytest

import helpers

MEASURING = set(helpers.MODULES["measure"])
MODULES = ["helpers"] + [
    m.name
    for m in pkgutil.walk_packages(helpers.__path__, "helpers.")
    if m.name.split(".")[1] not in MEASURING
]
WITH_EXAMPLES = {
    "helpers.exercises",
    "helpers.formatting",
    "helpers.inference",
    "helpers.ops",
    "helpers.roofline",
    "helpers._search",
    "helpers.validation._kinds",
    "helpers.validation._workloads",
}
"""Modules whose docstrings show examples today (so the finder cannot silently find none)."""


def _run_examples(name: str) -> tuple[doctest.TestResults, str]:
    module = importlib.import_module(name)
    runner = doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    )
    report = io.StringIO()
    for test in doctest.DocTestFinder().find(module, name):
        runner.run(test, out=report.write)
    return doctest.TestResults(runner.failures, runner.tries), report.getvalue()


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_are_true(name):
    """Each ``>>>`` example of the module prints exactly its shown output."""
    results, report = _run_examples(name)
    assert results.failed == 0, (
        f"{results.failed} of {results.attempted} examples in {name} fail:\n{report}"
    )
    if name in WITH_EXAMPLES:
        assert results.attempted > 0, f"no examples found in {name}"


def test_measuring_modules_are_the_torch_ones():
    """The modules left out are real modules of the package (a rename would otherwise drop a module silently)."""
    names = {m.name for m in pkgutil.iter_modules(helpers.__path__)}
    assert MEASURING <= names
    assert WITH_EXAMPLES <= set(MODULES)
