"""pybtex finds each plugin with one entry-point scan per build (``_ext/bibtex_plugins.py``)."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pybtex.plugin

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))

import bibtex_plugins  # noqa: E402


def test_each_plugin_is_looked_up_once_and_found_as_before(monkeypatch):
    scans: list[tuple[str, str]] = []
    real = bibtex_plugins.entry_points

    def counting(*, group: str, name: str):
        scans.append((group, name))
        return real(group=group, name=name)

    monkeypatch.setattr(bibtex_plugins, "entry_points", counting)
    monkeypatch.setattr(pybtex.plugin, "entry_points", pybtex.plugin.entry_points)
    bibtex_plugins._entry_points.cache_clear()
    expected = pybtex.plugin.find_plugin("pybtex.style.formatting", "plain")
    bibtex_plugins.setup(SimpleNamespace())
    for _ in range(3):
        assert pybtex.plugin.find_plugin("pybtex.style.formatting", "plain") is expected
    assert scans == [("pybtex.style.formatting", "plain")]
