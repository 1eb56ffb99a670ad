"""Where the built book, its screenshots and the browser are (overridable by environment variables), and its pages."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HTML = Path(os.environ.get("BOOK_HTML", ROOT / "_build" / "html"))
SCREENSHOTS = Path(os.environ.get("BOOK_SCREENSHOTS", ROOT / "_build" / "screenshots"))
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")

# The book's own pages (site-relative paths), without the JupyterLite site, assets and generated indices.
PAGES = sorted(
    str(p.relative_to(HTML))
    for p in HTML.rglob("*.html")
    if p.relative_to(HTML).parts[0]
    not in {"lite", "_static", "_sources", "_downloads", "_images"}
    and p.name not in {"genindex.html", "search.html", "py-modindex.html", "index.html"}
)
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
