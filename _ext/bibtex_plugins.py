"""Sphinx extension: the book's citations, in one style (author-year), and fast.

**One style (review R15).** The chapters cite with ``{footcite}`` (numbered footnotes at each page's
end), the glossary with ``{cite}`` (author-year), and the bibliography listed alpha labels
("[AKP+24]"). As each source is read, ``{footcite}`` becomes ``{cite:p}`` and the per-page
``{footbibliography}`` goes, so every citation reads "(Williams et al., 2009)"
(:class:`RoundAuthorYear`) and links to its entry in the bibliography page, whose entries are
labelled the same way (the ``book`` pybtex style, :class:`AuthorYearLabels`). The notebooks
themselves are not edited: the Markdown some code cells printed cites as plain author-year text.

**Speed.** Each pybtex plugin is looked up once per build, not once per citation.

sphinxcontrib-bibtex asks pybtex for its style plugins on every ``{footcite}``, and
pybtex 0.26 answers each request with ``importlib.metadata.entry_points(group=..., name=...)``,
which reads the metadata of every installed distribution again. With this book's 119 footnote
citations that was 491 scans of the virtual environment: 12 to 16 s of a 75 s build, measured
with cProfile on a 2-core machine, paid by each of the four Sphinx builds ``make test`` runs.

The installed entry points do not change during a build, so the answer to each
``(group, name)`` question is kept for the life of the process. Plugins registered at run
time (``pybtex.plugin.register_plugin``) are unaffected: pybtex checks those before it asks
the entry points.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections import Counter
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Any

import pybtex.plugin
import sphinxcontrib.bibtex.plugin
from pybtex.style.formatting.plain import Style as PlainStyle
from pybtex.style.labels import BaseLabelStyle
from sphinx.application import Sphinx
from sphinxcontrib.bibtex.style.referencing import BracketStyle
from sphinxcontrib.bibtex.style.referencing.author_year import AuthorYearReferenceStyle

_FOOTCITE = re.compile(r"\{footcite(?::[pt])?\}`")
_FOOTBIB = re.compile(r"(?m)^```\{footbibliography\}[ \t]*\n```[ \t]*$\n?")


def author_year_markdown(text: str) -> str:
    """Markdown ``text`` citing author-year: every ``{footcite}`` as ``{cite:p}`` and no
    ``{footbibliography}``."""
    return _FOOTBIB.sub("", _FOOTCITE.sub("{cite:p}`", text))


_FOOTCITE_ROLE = re.compile(r"\{footcite(?::[pt])?\}`([^`]*)`")


def author_year_text(text: str, labels: dict[str, str]) -> str:
    """Markdown a code cell printed, with each ``{footcite}`` as plain "(Author et al., year)"
    text (``labels``: key -> "Author et al., year"). Roles in outputs are rendered after Sphinx
    resolves cross-references, so they cannot be ``{cite:p}``."""

    def cite(match: re.Match[str]) -> str:
        keys = [k.strip() for k in match.group(1).split(",") if k.strip()]
        return "(" + "; ".join(labels.get(k, k) for k in keys) + ")"

    return _FOOTBIB.sub("", _FOOTCITE_ROLE.sub(cite, text))


def author_year_source(text: str, labels: dict[str, str] | None = None) -> str:
    """A page's source (Markdown, or a notebook's JSON: its Markdown cells, and the Markdown its
    code cells printed, by :func:`author_year_text`) citing author-year."""
    if "footcite" not in text and "footbibliography" not in text:
        return text
    if not text.lstrip().startswith("{"):
        return author_year_markdown(text)
    nb = json.loads(text)

    def fix(holder: dict[str, Any], key: str, output: bool) -> None:
        value = holder.get(key)
        if value is not None:
            value = "".join(value) if isinstance(value, list) else value
            holder[key] = (
                author_year_text(value, labels or {})
                if output
                else author_year_markdown(value)
            )

    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "markdown":
            fix(cell, "source", output=False)
        for output in cell.get("outputs", []):
            fix(output.get("data", {}), "text/markdown", output=True)
    return json.dumps(nb)


def _surname(person: Any) -> str:
    return re.sub(r"[{}]", "", " ".join(person.prelast_names + person.last_names))


class AuthorYearLabels(BaseLabelStyle):
    """Labels "Williams et al., 2009", "Qin and Li, 2025", "Shazeer, 2019" (an "a", "b" after
    the year where two entries would share one)."""

    def format_labels(self, sorted_entries: Any) -> Any:
        labels = [self.format_label(entry) for entry in sorted_entries]
        counts = Counter(labels)
        seen: Counter[str] = Counter()
        for label in labels:
            if counts[label] > 1:
                seen[label] += 1
                yield f"{label}{'abcdefghijklmnopqrstuvwxyz'[seen[label] - 1]}"
            else:
                yield label

    def format_label(self, entry: Any) -> str:
        people = entry.persons.get("author") or entry.persons.get("editor") or []
        if not people:
            who = re.sub(r"[{}]", "", entry.fields.get("organization", entry.key))
        elif len(people) == 1:
            who = _surname(people[0])
        elif len(people) == 2:
            who = f"{_surname(people[0])} and {_surname(people[1])}"
        else:
            who = f"{_surname(people[0])} et al."
        return f"{who}, {entry.fields.get('year', 'n.d.')}"


def _round() -> BracketStyle:
    return BracketStyle(left="(", right=")")


@dataclasses.dataclass
class RoundAuthorYear(AuthorYearReferenceStyle):
    """sphinxcontrib-bibtex's author-year citations in round brackets: "(Williams et al., 2009)",
    "Williams et al. (2009)"."""

    bracket_parenthetical: BracketStyle = dataclasses.field(default_factory=_round)
    bracket_textual: BracketStyle = dataclasses.field(default_factory=_round)


class BookStyle(PlainStyle):
    """pybtex's plain style (sorted by author, year, title) with author-year labels."""

    default_label_style = AuthorYearLabels


@functools.cache
def _labels(bibfiles: tuple[str, ...]) -> dict[str, str]:
    """Citation key -> its author-year label, from the book's .bib files."""
    from pybtex.database import parse_file

    style = AuthorYearLabels()
    labels: dict[str, str] = {}
    for bib in bibfiles:
        for key, entry in parse_file(bib).entries.items():
            labels[key] = style.format_label(entry)
    return labels


def _author_year(app: Sphinx, docname: str, source: list[str]) -> None:
    bibs = tuple(str(Path(app.srcdir) / b) for b in app.config.bibtex_bibfiles)
    source[0] = author_year_source(
        source[0], _labels(bibs) if "footcite" in source[0] else None
    )


@functools.cache
def _entry_points(*, group: str, name: str) -> tuple[EntryPoint, ...]:
    """The installed entry points in ``group`` called ``name`` (looked up once per pair)."""
    return tuple(entry_points(group=group, name=name))


def setup(app: Sphinx) -> dict[str, Any]:
    """Point pybtex's entry-point lookup at the memoized one."""
    pybtex.plugin.entry_points = _entry_points
    pybtex.plugin.register_plugin("pybtex.style.formatting", "book", BookStyle)
    sphinxcontrib.bibtex.plugin.register_plugin(
        "sphinxcontrib.bibtex.style.referencing", "author_year_round", RoundAuthorYear
    )
    app.connect("source-read", _author_year)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
