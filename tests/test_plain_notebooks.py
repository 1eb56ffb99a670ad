"""The plain-Jupyter notebooks (``tools/plain_notebooks.py``): what Colab, Binder, JupyterLite and a
download get must show no book markup and no solution before a click (R4-2)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tools import plain_notebooks as plain  # noqa: E402

NOTEBOOKS = plain.notebooks(ROOT)
CITATIONS = plain.load_references(ROOT / "references.bib")
BASE = "https://example.org/book"


def _ctx(path: Path, *, student: bool = False) -> plain.Context:
    return plain.Context(
        docname=path.with_suffix("").as_posix(),
        base_url=BASE,
        citations=CITATIONS,
        student=student,
        root=ROOT,
    )


def _load(path: Path) -> dict:
    return json.loads((ROOT / path).read_text(encoding="utf-8"))


def _solutions(nb: dict) -> list[str]:
    """The text of every {solution} block in a source notebook's Markdown."""
    found = []
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            text = "".join(cell["source"])
            found += re.findall(
                r"(?ms)^(`{3,}|:{3,})\{solution\}[^\n]*\n(.*?)^\1[ \t]*$", text
            )
    return [body for _, body in found]


def _sentences(body: str) -> list[str]:
    """Distinctive lines of a solution (option lines and short lines left out)."""
    return [
        line.strip()
        for line in body.split("\n")
        if len(line.strip()) > 40 and not line.lstrip().startswith(":")
    ]


def test_the_book_has_notebooks_with_solutions():
    """The checks below look at something: chapters, labs and appendix notebooks, with solutions."""
    assert {p.parts[0] for p in NOTEBOOKS} == {"chapters", "labs", "appendix"}
    assert sum(len(_solutions(_load(p))) for p in NOTEBOOKS) >= 50


@pytest.mark.parametrize("path", NOTEBOOKS, ids=str)
def test_no_markup_survives_and_solutions_fold(path):
    """No directive fence, role, option line, target or footnote syntax is left; every solution is
    inside a closed <details> block, so none shows without a click; code cells are untouched."""
    nb = _load(path)
    out = plain.convert(nb, _ctx(path))
    assert plain.leftover_markup(out) == []
    visible = plain.visible_markdown(out)
    every = "\n".join(plain._markdown_texts(out))
    for body in _solutions(nb):
        for line in _sentences(body):
            line = plain._Converter(_ctx(path), plain._State()).markdown(line)
            assert line not in visible, f"{path}: solution visible: {line[:60]}"
            assert line in every, f"{path}: solution lost: {line[:60]}"
    assert "<details open" not in every
    before = [c["source"] for c in nb["cells"] if c["cell_type"] == "code"]
    after = [c["source"] for c in out["cells"] if c["cell_type"] == "code"]
    assert before == after


@pytest.mark.parametrize("path", NOTEBOOKS, ids=str)
def test_student_notebooks_carry_no_solution(path):
    """The student edition's converted notebook holds no solution at all, folded or not."""
    nb = _load(path)
    out = plain.convert(nb, _ctx(path, student=True))
    assert plain.leftover_markup(out) == []
    every = "\n".join(plain._markdown_texts(out))
    assert "<summary>Solution" not in every
    for body in _solutions(nb):
        for line in _sentences(body):
            assert line not in every, f"{path}: solution in the student edition"


def test_markup_becomes_plain_markdown():
    """Each kind of markup, one example each: what Jupyter shows instead."""
    text = (
        "(sec-x)=\n## Title\n\nRooflines {footcite}`williams2009roofline`[^a]; see "
        "[Chapter 2](02_roofline.ipynb#the-ridge) and {doc}`the lab <../labs/lab1_roofline>`.\n\n"
        "```{admonition} In this chapter\n:class: tip\n**Goals**\n```\n\n"
        "```{exercise}\n:label: ch4-q1\nHow much?\n```\n\n"
        "````{solution} ch4-q1\n:class: dropdown\nThis much:\n```python\n1 + 1\n```\n````\n\n"
        "```{margin}\nAn aside.\n```\n\n"
        "```{figure} figures/ch01_gpu_memory_hierarchy.*\n:alt: A GPU\n:name: fig-x\n\nIts caption.\n```\n\n"
        "[^a]: A footnote.\n\n## References\n\n```{footbibliography}\n```\n"
    )
    nb = {
        "cells": [{"cell_type": "markdown", "metadata": {}, "source": text}],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    out = plain.convert(nb, _ctx(Path("chapters/04_batching.ipynb")))
    md = "\n".join(c["source"] for c in out["cells"])
    assert "(sec-x)=" not in md
    assert "Rooflines (Williams et al., 2009)<sup>1</sup>" in md
    assert f"[Chapter 2]({BASE}/chapters/02_roofline.html#the-ridge)" in md
    assert f"[the lab]({BASE}/labs/lab1_roofline.html)" in md
    assert "> **In this chapter**\n>\n> **Goals**" in md
    assert "#### Exercise 1\n\nHow much?" in md
    assert (
        "<details>\n<summary>Solution (click to show)</summary>\n\nThis much:\n```python\n1 + 1\n```\n\n</details>"
        in md
    )
    assert "> **Note**\n>\n> An aside." in md
    assert (
        f"![A GPU]({BASE}/_images/ch01_gpu_memory_hierarchy.svg)\n\n*Its caption.*"
        in md
    )
    assert "- Samuel Williams, Andrew Waterman, David Patterson (2009)." in md
    assert md.rstrip().endswith("## Notes\n\n1. A footnote.")


def test_citations_without_a_bibliography_get_a_reference_list():
    """A notebook that cites but has no {footbibliography} ends with "References"."""
    nb = {
        "cells": [
            {
                "cell_type": "markdown",
                "metadata": {},
                "source": "As shown {footcite}`williams2009roofline`.",
            }
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    out = plain.convert(nb, _ctx(Path("labs/lab1_roofline.ipynb")))
    assert out["cells"][-1]["source"].startswith("## References\n\n- Samuel Williams")


def test_reference_texts_are_author_year():
    """One author: "Surname, year"; more than two: "Surname et al., year"."""
    assert CITATIONS["williams2009roofline"].short == "Williams et al., 2009"
    assert all(re.search(r", (\d{4}|n\.d\.)$", r.short) for r in CITATIONS.values())
    assert all("{" not in r.full and "\\" not in r.full for r in CITATIONS.values())


def test_colab_badge_opens_the_converted_notebook():
    """A lab's Colab badge points at the branch of converted notebooks; the student edition drops it."""
    path = Path("labs/lab1_roofline.ipynb")
    out = plain.convert(_load(path), _ctx(path))
    first = out["cells"][0]["source"]
    assert "/blob/notebooks/labs/lab1_roofline.ipynb" in first
    student = plain.convert(_load(path), _ctx(path, student=True))
    assert "colab.research.google.com" not in student["cells"][0]["source"]


@pytest.mark.parametrize(
    "path", [p for p in NOTEBOOKS if p.parts[0] == "chapters"], ids=str
)
def test_calculator_notebook_holds_what_the_calculator_needs(path):
    """The live button's notebook: an introduction, the set-up cell, the calculator last, and every
    name the calculator cell reads is defined by a cell before it (so Run All works)."""
    out = plain.calculator_notebook(plain.convert(_load(path), _ctx(path)), _ctx(path))
    assert out is not None, f"{path}: no calculator cell"
    cells = [{**c, "source": plain._text(c["source"])} for c in out["cells"]]
    assert (
        cells[0]["cell_type"] == "markdown"
        and "the calculator, live" in cells[0]["source"]
    )
    assert cells[1]["source"].startswith("# Setup:")
    assert plain.CALCULATOR_CELL.search(cells[-1]["source"])
    defined: set[str] = set()
    for cell in cells[1:-1]:
        names = plain._names(cell["source"])
        assert names is not None
        defined |= names[0]
    reads = plain._names(cells[-1]["source"])
    assert reads is not None and reads[1] <= defined
    assert all(c.get("outputs", []) == [] for c in cells if c["cell_type"] == "code")
    assert len(cells) < len(_load(path)["cells"]) / 2
