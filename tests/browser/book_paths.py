"""Where the built book, its screenshots and the browser are (overridable by environment variables), and its pages."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
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
