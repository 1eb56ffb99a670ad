"""Where the built book, its screenshots and the browser are (overridable by environment variables), and its pages."""

from __future__ import annotations

import functools
import hashlib
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tools.student_edition import EDITION_NOTE  # noqa: E402

HTML = Path(os.environ.get("BOOK_HTML", ROOT / "_build" / "html"))
SCREENSHOTS = Path(os.environ.get("BOOK_SCREENSHOTS", ROOT / "_build" / "screenshots"))
# The student edition (`make student`), checked for accessibility like the book when it is built.
STUDENT_HTML = Path(
    os.environ.get("BOOK_STUDENT_HTML", ROOT / "_build" / "student" / "_build" / "html")
)
# axe-core, fetched by `make axe`, for the accessibility checks.
AXE_JS = Path(os.environ.get("AXE_JS", ROOT / "_axe" / "axe.min.js"))
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")


def book_pages(html: Path) -> list[str]:
    """The book's own pages in the site at ``html`` (site-relative paths), without the JupyterLite
    site, assets and generated indices."""
    return sorted(
        str(p.relative_to(html))
        for p in html.rglob("*.html")
        if p.relative_to(html).parts[0]
        not in {"lite", "_static", "_sources", "_downloads", "_images"}
        and p.name
        not in {"genindex.html", "search.html", "py-modindex.html", "index.html"}
    )


PAGES = book_pages(HTML)
STUDENT_PAGES = book_pages(STUDENT_HTML)
CHAPTERS = [p for p in PAGES if p.startswith("chapters/")]
LABS = [p for p in PAGES if p.startswith("labs/")]
# Pages holding maths as Sphinx writes it for MathJax: \( \) inline, \[ \] or $$ display, in a "math" element.
MATH_PAGES = [
    p
    for p in PAGES
    if any(
        mark in (HTML / p).read_text(encoding="utf-8")
        for mark in ("\\(", "$$", 'class="math')
    )
]


@functools.cache
def _tree_digest(folder: Path) -> str:
    """One sha256 over every file's relative path and bytes under ``folder``."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode())
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def same_document(book_html: Path, student_html: Path, path: str) -> bool:
    """Whether the student edition's page ``path`` is the book's, byte for byte once the
    edition's note is taken out of its title, and both sites serve the same assets.

    Such a page is the same document in the browser: its checks can read the book page's
    load. A page that lost a solution, or differs in any other byte, is loaded on its own.
    """
    student, book = student_html / path, book_html / path
    if not student.is_file() or not book.is_file():
        return False
    same_assets = all(
        _tree_digest(book_html / folder) == _tree_digest(student_html / folder)
        for folder in ("_static", "_images")
    )
    return same_assets and student.read_text(encoding="utf-8").replace(
        EDITION_NOTE, ""
    ) == book.read_text(encoding="utf-8")


def student_page_is_book_page(path: str) -> bool:
    """``same_document`` for the built book and student edition."""
    return same_document(HTML, STUDENT_HTML, path)
