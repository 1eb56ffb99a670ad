"""The printable edition built by ``make pdf``: the whole book and the student edition.

Checks read what ``make pdf`` built (``PDF_OUT``, default ``_build/pdf``) and are skipped
when it has not been built. What they expect is derived from the sources at test time:
the title of every page in ``_toc.yml`` must be in the PDF's text, every figure a
notebook outputs must be included by the LaTeX and drawn in the PDF, LaTeX's log must
hold no error, and the page count must be plausible for the number of pages.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
pytestmark = (
    pytest.mark.built
)  # `make test-pdf` runs them on the PDFs it has just built
PDF_OUT = Path(os.environ.get("PDF_OUT", ROOT / "_build" / "pdf"))
if not PDF_OUT.is_absolute():
    PDF_OUT = ROOT / PDF_OUT
EDITIONS = {
    "full": PDF_OUT / "_build" / "latex",
    "student": PDF_OUT / "student" / "_build" / "latex",
}


def _toc_files() -> list[Path]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    files = [toc["root"]]
    for part in toc.get("parts", []):
        files += [chapter["file"] for chapter in part["chapters"]]
    paths = []
    for name in files:
        for suffix in (".ipynb", ".md"):
            if (ROOT / f"{name}{suffix}").exists():
                paths.append(ROOT / f"{name}{suffix}")
    return paths


def _title(path: Path) -> str:
    if path.suffix == ".ipynb":
        nb = nbformat.read(path, as_version=4)
        text = next(c.source for c in nb.cells if c.cell_type == "markdown")
    else:
        text = path.read_text(encoding="utf-8")
    match = re.search(r"(?m)^# (.+)$", text)
    assert match, f"no title in {path}"
    return re.sub(r"[`*]", "", match.group(1)).strip()  # Markdown markup is not printed


def _figure_count() -> int:
    """PNG outputs of the book's notebooks, except cells the book removes."""
    count = 0
    for path in _toc_files():
        if path.suffix != ".ipynb":
            continue
        for cell in nbformat.read(path, as_version=4).cells:
            tags = set(cell.metadata.get("tags", []))
            if tags & {"remove-cell", "remove-output", "remove_cell", "remove_output"}:
                continue
            for output in cell.get("outputs", []):
                count += "image/png" in output.get("data", {})
    return count


def _normalise(text: str) -> str:
    """PDF text with hyphenation and line breaks undone and quotes made plain."""
    text = re.sub(r"-\n(?=[a-z])", "", text)
    text = text.replace("’", "'").replace("‘", "'").replace("“", '"').replace("”", '"')
    return re.sub(r"\s+", " ", text)


needs_poppler = pytest.mark.skipif(
    shutil.which("pdftotext") is None, reason="poppler-utils not installed"
)


@pytest.fixture(params=sorted(EDITIONS), scope="module")
def edition(request):
    latex = EDITIONS[request.param]
    if not (latex / "book.pdf").exists():
        pytest.skip(f"{request.param} PDF not built (make pdf)")
    return request.param, latex


def test_latex_reported_no_error(edition):
    """xelatex's log holds no error ("! ..." lines) and says it wrote the PDF."""
    _, latex = edition
    log = (latex / "book.log").read_text(encoding="utf-8", errors="replace")
    errors = [line for line in log.splitlines() if line.startswith("! ")]
    assert not errors, errors[:5]
    assert "Output written on book.pdf" in log


@needs_poppler
def test_page_count_is_plausible(edition):
    """At least two pages per page of the table of contents, and not absurdly many."""
    name, latex = edition
    info = subprocess.run(
        ["pdfinfo", str(latex / "book.pdf")], capture_output=True, text=True, check=True
    ).stdout
    pages = int(re.search(r"(?m)^Pages:\s+(\d+)", info).group(1))
    n_docs = len(_toc_files())
    assert 2 * n_docs <= pages <= 40 * n_docs, f"{name}: {pages} pages"


@needs_poppler
def test_every_title_is_in_the_pdf(edition):
    """Each page of _toc.yml (intro, chapters, labs, appendix) has its title in the text."""
    _, latex = edition
    text = _normalise(
        subprocess.run(
            ["pdftotext", str(latex / "book.pdf"), "-"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    missing = [
        p.stem for p in _toc_files() if _normalise(_title(p)).strip() not in text
    ]
    assert not missing, missing
    # each lab's Colab badge is printed as its link text (_ext/print_edition.py); the student
    # edition's would open the full notebook, and points to the edition's zip instead
    # (_ext/student_pages.py)
    labs = [p for p in _toc_files() if p.parent.name == "labs"]
    student = latex == EDITIONS["student"]
    assert labs and text.count("Open In Colab") == (0 if student else len(labs))
    if student:
        assert text.count("student edition's notebook zip") == len(labs)


@needs_poppler
def test_every_figure_is_in_the_pdf(edition):
    """Every PNG output of the notebooks is included by the LaTeX and drawn in the PDF."""
    _, latex = edition
    tex = (latex / "book.tex").read_text(encoding="utf-8")
    included = re.findall(
        r"\\sphinxincludegraphics(?:\[[^\]]*\])?\{\{?([0-9a-f]{64})", tex
    )
    assert len(included) == _figure_count()
    listing = subprocess.run(
        ["pdfimages", "-list", str(latex / "book.pdf")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()[2:]
    drawn = [row for row in listing if row.split()[2] == "image"]
    assert len(drawn) >= len(included)


def test_student_edition_has_no_solutions():
    """The student PDF leaves out every solution the full PDF has."""
    full, student = (EDITIONS[e] / "book.tex" for e in ("full", "student"))
    if not (full.exists() and student.exists()):
        pytest.skip("PDFs not built (make pdf)")
    assert "Solution to" in full.read_text(encoding="utf-8")
    assert "Solution to" not in student.read_text(encoding="utf-8")


@needs_poppler
def test_print_edition_reads_like_a_book(edition):
    """The title page carries the subtitle and no build date; no lab section is numbered twice
    ("12.4 2b. Profile"); every calculator prints its one-line note (one per calculator output in
    the notebooks); the API appendix points to the web edition for the docstrings."""
    _, latex = edition

    def pdf_text(*pages: str) -> str:
        return subprocess.run(
            ["pdftotext", *pages, str(latex / "book.pdf"), "-"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout

    title_page = pdf_text("-f", "1", "-l", "1")
    assert "batching and disaggregated memory" in title_page
    assert not re.search(
        r"\b(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d\d, \d{4}", title_page
    )
    text = pdf_text()
    doubled = re.findall(r"(?m)^\d+\.\d+ \d+[a-z]?\. \S.*$", text)
    assert not doubled, doubled[:3]
    calculators = sum(
        "Calculator controls (run the notebook live to use them)" in str(o)
        for p in _toc_files()
        if p.suffix == ".ipynb"
        for c in nbformat.read(p, as_version=4).cells
        if c.cell_type == "code"
        for o in c.outputs
    )
    assert (
        calculators
        and _normalise(text).count("Calculator: its default view, printed.")
        == calculators
    )
    assert (
        "their documentation (parameters, units, sources, examples) is in the web"
        in _normalise(text)
    )
