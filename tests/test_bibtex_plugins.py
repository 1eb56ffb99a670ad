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
    bibtex_plugins.setup(SimpleNamespace(connect=lambda *args, **kwargs: None))
    for _ in range(3):
        assert pybtex.plugin.find_plugin("pybtex.style.formatting", "plain") is expected
    # registering the book's own style looks its name up once too
    assert scans.count(("pybtex.style.formatting", "plain")) == 1


def test_footnote_citations_become_author_year_and_footbibliography_goes():
    """In Markdown, {footcite} becomes {cite:p} and the per-page {footbibliography} block goes; in
    a notebook, the Markdown a code cell printed gets plain "(Author et al., year)" text instead
    (roles there are rendered after references are resolved), and code stays as written."""
    import json

    md = "Fast {footcite}`williams2009roofline`.\n\n```{footbibliography}\n```\n"
    assert (
        bibtex_plugins.author_year_source(md)
        == "Fast {cite:p}`williams2009roofline`.\n\n"
    )
    nb = {
        "cells": [
            {
                "cell_type": "markdown",
                "source": ["A {footcite}`k1`\n", "```{footbibliography}\n", "```"],
            },
            {
                "cell_type": "code",
                "source": 'Markdown("{footcite}`k1`")',
                "outputs": [{"data": {"text/markdown": "B {footcite}`k1,k2`."}}],
            },
        ]
    }
    labels = {"k1": "Williams et al., 2009", "k2": "Qin et al., 2025"}
    out = json.loads(bibtex_plugins.author_year_source(json.dumps(nb), labels))
    assert out["cells"][0]["source"] == "A {cite:p}`k1`\n"
    assert out["cells"][1]["outputs"][0]["data"]["text/markdown"] == (
        "B (Williams et al., 2009; Qin et al., 2025)."
    )
    assert out["cells"][1]["source"] == 'Markdown("{footcite}`k1`")'


def test_bibliography_labels_are_author_year_and_unique():
    """One author "Surname, year", two "A and B, year", more "A et al., year"; two entries that
    would share a label get "a" and "b"."""
    from pybtex.database import Entry, Person

    def entry(year, *names):
        e = Entry("article", fields={"year": year, "title": "T"})
        e.persons["author"] = [Person(n) for n in names]
        return e

    style = bibtex_plugins.AuthorYearLabels()
    entries = [
        entry("2019", "Noam Shazeer"),
        entry("2024", "A Qin", "B Li"),
        entry("2009", "Samuel Williams", "Andrew Waterman", "David Patterson"),
        entry("2009", "Samuel Williams", "X Y", "Z W"),
    ]
    assert list(style.format_labels(entries)) == [
        "Shazeer, 2019",
        "Qin and Li, 2024",
        "Williams et al., 2009a",
        "Williams et al., 2009b",
    ]
