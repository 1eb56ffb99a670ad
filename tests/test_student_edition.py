"""The student edition leaves out every solution and nothing else.

Unit tests of ``tools/student_edition.py`` on hand-written MyST, then (when
``make student`` has built it) checks of the built edition itself: no
solution in its pages, none in its downloadable notebooks, every exercise kept.
"""

from __future__ import annotations

import json
import re
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tools.student_edition import (  # noqa: E402
    _SOLUTION,
    strip_notebook,
    strip_solutions,
)

STUDENT_HTML = ROOT / "_build" / "student" / "_build" / "html"
BOOK_HTML = ROOT / "_build" / "html"


def test_strip_solutions_removes_only_solution_blocks():
    """Backtick and colon fences of any length are removed; exercises and other text stay."""
    text = (
        "Intro.\n\n```{exercise}\n:label: q1\nAsk.\n```\n\n"
        "````{solution} q1\n:class: dropdown\nAnswer with ```code```.\n````\n\n"
        ":::{solution} q1\nOther answer.\n:::\nAfter.\n"
    )
    out = strip_solutions(text)
    assert "{exercise}" in out and "Ask." in out and "Intro." in out and "After." in out
    assert "{solution}" not in out and "Answer" not in out and "Other answer" not in out


def test_strip_notebook_drops_cells_left_empty(tmp_path):
    """A Markdown cell that held only a solution disappears; code cells are untouched."""
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell("```{exercise}\n:label: q\nAsk.\n```"),
            nbformat.v4.new_code_cell("answer = None"),
            nbformat.v4.new_markdown_cell("```{solution} q\n:class: dropdown\n42\n```"),
        ]
    )
    path = tmp_path / "x.ipynb"
    nbformat.write(nb, path)
    stripped = strip_notebook(path)
    assert [c.cell_type for c in stripped.cells] == ["markdown", "code"]


def _chapter_exercise_count() -> int:
    total = 0
    for folder in ("chapters", "labs"):
        for path in (ROOT / folder).glob("*.ipynb"):
            nb = nbformat.read(path, as_version=4)
            total += sum(
                len(re.findall(r"\{exercise\}", c.source))
                for c in nb.cells
                if c.cell_type == "markdown"
            )
    return total


@pytest.mark.built
@pytest.mark.skipif(
    not STUDENT_HTML.exists(), reason="student edition not built (make student)"
)
def test_built_student_edition_has_no_solutions():
    """Pages carry exercises but no solution; the downloadable and live notebooks and the zip carry
    no solution either."""
    pages = [
        p
        for p in STUDENT_HTML.rglob("*.html")
        if p.relative_to(STUDENT_HTML).parts[0] in {"chapters", "labs"}
    ]
    assert pages, "no chapter or lab pages in the student edition"
    exercises = 0
    for page in pages:
        html = page.read_text(encoding="utf-8")
        assert 'class="solution' not in html and "Solution to" not in html, (
            f"solution left in {page.name}"
        )
        exercises += html.count('class="exercise')
    assert exercises >= _chapter_exercise_count()
    # the notebooks offered for download and those the live (JupyterLite) button opens
    live = sorted((STUDENT_HTML / "lite" / "files").rglob("*.ipynb"))
    assert live, "no live notebooks in the student edition"
    for nb_path in [*(STUDENT_HTML / "_sources").rglob("*.ipynb"), *live]:
        assert "{solution}" not in nb_path.read_text(encoding="utf-8"), (
            f"solution left in {nb_path}"
        )
    archive = STUDENT_HTML / "_downloads" / "notebooks-student.zip"
    with zipfile.ZipFile(archive) as zf:
        names = zf.namelist()
        # Every chapter and lab notebook, each once (counted from the tree, not typed).
        expected = sorted(
            str(p.relative_to(ROOT))
            for folder in ("chapters", "labs")
            for p in (ROOT / folder).glob("*.ipynb")
        )
        assert sorted(names) == expected
        assert all("{solution}" not in zf.read(n).decode() for n in names)


def _index_terms(html_dir: Path) -> set[str]:
    """The (stemmed) words a built site's search finds."""
    text = (html_dir / "searchindex.js").read_text(encoding="utf-8")
    index = json.loads(text[text.index("(") + 1 : text.rindex(")")])
    return set(index["terms"])


def _words(text: str, *, shortest: int = 5) -> set[str]:
    """Lower-cased words of at least ``shortest`` letters. Candidates are long words (a short one
    is too common to test with); what they are checked against takes every length, so a
    solution's "hurts" is not taken for solution-only while the question says "hurt"."""
    return {w.lower() for w in re.findall(rf"[A-Za-z]{{{shortest},}}", text)}


@pytest.mark.built
@pytest.mark.skipif(
    not (STUDENT_HTML.exists() and BOOK_HTML.exists()),
    reason="book and student edition not both built (make book student)",
)
def test_student_search_finds_no_word_only_solutions_hold():
    """The student edition's search index is written from the pages without their solutions: a
    word that only solutions use is in the book's index and not in the student edition's."""
    from sphinx.search.en import SearchEnglish

    stem = SearchEnglish({}).stem
    in_solutions: set[str] = set()
    elsewhere: set[str] = set()
    sources = [
        p
        for folder in ("chapters", "labs", "appendix")
        for p in (ROOT / folder).glob("*.ipynb")
    ]
    sources += list((ROOT / "appendix").glob("*.md")) + [ROOT / "intro.md"]
    for path in sources:
        if path.suffix == ".ipynb":
            nb = nbformat.read(path, as_version=4)
            text = "\n".join(c.source for c in nb.cells)
            # what the page shows of the outputs counts as elsewhere too
            outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
            elsewhere |= _words(
                json.dumps([o.get("text", o.get("data", "")) for o in outputs]),
                shortest=1,
            )
        else:
            text = path.read_text(encoding="utf-8")
        in_solutions |= _words(
            "\n".join(m.group(0) for m in re.finditer(_SOLUTION, text))
        )
        elsewhere |= _words(strip_solutions(text), shortest=1)
    # the API page is written from the helpers' docstrings
    for path in (ROOT / "helpers").glob("*.py"):
        elsewhere |= _words(path.read_text(encoding="utf-8"), shortest=1)
    candidates = in_solutions - elsewhere
    # stem only the words that could share a stem with a candidate
    prefixes = {w[:3] for w in candidates}
    only = {stem(w) for w in candidates} - {
        stem(w) for w in elsewhere if w[:3] in prefixes
    }
    only &= _index_terms(BOOK_HTML)
    assert len(only) >= 5, f"too few solution-only words to test with: {sorted(only)}"
    leaked = only & _index_terms(STUDENT_HTML)
    assert not leaked, (
        f"the student edition's search finds solution-only words: {sorted(leaked)}"
    )


def test_notebook_links_elsewhere_are_recognised():
    """A Colab badge, a Binder launch and a GitHub notebook open a full notebook; the repository's
    home, an issue and the edition's own zip do not."""
    sys.path.insert(0, str(ROOT / "_ext"))
    from student_pages import opens_full_notebook

    repo = "github.com/gpu-first-principles/gpu-book"
    assert opens_full_notebook(
        "https://colab.research.google.com/github/x/y/blob/main/labs/l.ipynb"
    )
    assert opens_full_notebook(
        "https://mybinder.org/v2/gh/x/y/main?urlpath=lab/tree/chapters/c.ipynb"
    )
    assert opens_full_notebook(
        f"https://{repo}/blob/main/chapters/01_two_ceilings.ipynb"
    )
    assert not opens_full_notebook(f"https://{repo}")
    assert not opens_full_notebook(f"https://{repo}/issues/new?title=x")
    assert not opens_full_notebook("../_downloads/notebooks-student.zip")


_HREF = re.compile(r"""\b(?:href|src)=["']([^"'#]+)""")


@pytest.mark.built
@pytest.mark.skipif(
    not STUDENT_HTML.exists(), reason="student edition not built (make student)"
)
def test_no_link_in_the_student_edition_leads_to_a_solution():
    """Every link and source in every page of the student edition: none opens a notebook on
    another site (Colab, Binder, GitHub: the full notebooks), and each local notebook or zip it
    links to holds no solution. The labs' badges lead to the edition's zip, which exists."""
    sys.path.insert(0, str(ROOT / "_ext"))
    from student_pages import STUDENT_ZIP, opens_full_notebook

    pages = [
        p
        for p in STUDENT_HTML.rglob("*.html")
        if p.relative_to(STUDENT_HTML).parts[0] not in {"lite", "_static"}
    ]
    leaks, local, zip_links = [], set(), 0
    for page in pages:
        for uri in _HREF.findall(page.read_text(encoding="utf-8")):
            uri = uri.replace("&amp;", "&")
            if opens_full_notebook(uri):
                leaks.append(f"{page.relative_to(STUDENT_HTML)} -> {uri}")
            elif "://" not in uri and uri.split("?")[0].endswith((".ipynb", ".zip")):
                target = (page.parent / uri.split("?")[0]).resolve()
                local.add(target)
                zip_links += target.name == Path(STUDENT_ZIP).name
    assert not leaks, f"links to full notebooks: {leaks[:5]}"
    labs = [p for p in (ROOT / "labs").glob("*.ipynb")]
    assert zip_links >= len(labs), "the labs' badges do not lead to the edition's zip"
    for target in local:
        assert target.is_file(), f"link to a missing file {target}"
        if target.suffix == ".zip":
            with zipfile.ZipFile(target) as zf:
                bad = [n for n in zf.namelist() if b"{solution}" in zf.read(n)]
            assert not bad, f"{target.name} holds solutions in {bad}"
        else:
            assert "{solution}" not in target.read_text(encoding="utf-8"), target


@pytest.mark.built
@pytest.mark.skipif(
    not STUDENT_HTML.exists(), reason="student edition not built (make student)"
)
def test_student_check_cells_compare_digests_and_never_compute_the_answer():
    """Each auto-checked exercise with a stored digest (every chapter's, and lab 6's) is checked
    with ``exercises.check_digest`` in the edition's pages, downloadable notebooks and zip: no
    cell there calls the helper expression the book's check cell computes the answer with."""
    import html as html_lib

    from tools.student_edition import check_rewrites

    rewrites = check_rewrites()
    assert len(rewrites) >= 10
    labels = {
        re.search(r'check_digest\("([^"]+)"', new).group(1) for new in rewrites.values()
    }
    archive = STUDENT_HTML / "_downloads" / "notebooks-student.zip"
    with zipfile.ZipFile(archive) as zf:
        cells = [
            c.source
            for name in zf.namelist()
            for c in nbformat.reads(zf.read(name).decode(), as_version=4).cells
            if c.cell_type == "code"
        ]
    assert not set(rewrites) & set(cells), "a book check cell left in the zip"
    shown = {m for c in cells for m in re.findall(r'check_digest\("([^"]+)"', c)}
    assert shown == labels
    pages = ""
    for page in (STUDENT_HTML / "chapters").glob("*.html"):
        pages += html_lib.unescape(
            re.sub(r"<[^>]+>", "", page.read_text(encoding="utf-8"))
        )
    for old in rewrites:
        assert old.strip() not in pages
    assert {lab for lab in labels if lab.startswith("ch")} <= set(
        re.findall(r'check_digest\("([^"]+)"', pages)
    )
