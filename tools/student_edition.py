"""The student edition: the same book without exercise solutions.

``python tools/student_edition.py config OUT.yml``
    writes the book's ``_config.yml`` with ``student_edition: true`` (``_ext/student_pages.py``
    drops every solution from the written pages) and an edition note in the title, for
    ``jupyter-book build --config``.
``python tools/student_edition.py strip HTML_DIR``
    removes the solution blocks from the notebooks the built site offers for
    download (``_sources``, ``notebooks``) and opens live (JupyterLite's ``lite/files``), and packs
    all chapter and lab notebooks into ``HTML_DIR/_downloads/notebooks-student.zip``. The build
    has already written them converted to plain Jupyter Markdown without solutions
    (``tools/plain_notebooks.py``); this pass is a second guard.
"""

from __future__ import annotations

import functools
import re
import sys
import zipfile
from pathlib import Path
from typing import Any

import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
# What the student edition adds to the book's title (and so to every page's HTML).
EDITION_NOTE = " (student edition)"
# A MyST ```{solution} ...``` block (any fence length >= 3) or :::{solution} ... ::: block.
_SOLUTION = re.compile(
    r"(?ms)^(?P<fence>`{3,}|:{3,})\{solution\}.*?^(?P=fence)[ \t]*$\n?"
)


def student_config(out: Path) -> None:
    """Write the student-edition configuration to ``out``."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    config["title"] = f"{config['title']}{EDITION_NOTE}"
    # Solutions are dropped as pages are written (_ext/student_pages.py), so the sources read
    # into the book's doctrees and this edition's build can reuse them.
    config.setdefault("sphinx", {}).setdefault("config", {})["student_edition"] = True
    # No Colab or Binder button: they would open the full notebooks, solutions included, from the
    # repository. The edition's own notebooks are its download button's and its zip's
    # (_ext/student_pages.py points the labs' badges at the zip).
    config["launch_buttons"] = {
        k: v
        for k, v in (config.get("launch_buttons") or {}).items()
        if k not in {"colab_url", "binderhub_url", "jupyterhub_url", "thebe"}
    }
    local = config["sphinx"].get("local_extensions") or {}
    config["sphinx"]["local_extensions"] = {
        name: str(ROOT / path) for name, path in local.items()
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")


def strip_solutions(text: str) -> str:
    """``text`` without its ``{solution}`` blocks."""
    return _SOLUTION.sub("", text)


def digest_check_source(label: str, check: Any) -> str:
    """The student edition's check cell for exercise ``label``: the same answer placeholder, and
    :func:`helpers.exercises.check_digest` on the exercise's stored digests instead of the helper
    expression that computes the answer (``check`` is the book cell's ``assignments.Check``)."""
    lines = [line for line in check.imports if "exercises" in line]
    if lines:
        lines.append("")
    lines.append("answer = None" + (f"  # {check.comment}" if check.comment else ""))
    keywords = "".join(
        f", {k}={v}" for k, v in check.keywords.items() if k in {"unit", "hint"}
    )
    lines.append(f'print(exercises.check_digest("{label}", answer{keywords}))')
    return "\n".join(lines)


@functools.cache
def check_rewrites() -> dict[str, str]:
    """{a book check cell's source: the student edition's} for every exercise with stored digests."""
    from helpers import exercises
    from tools import assignments

    stored = set(exercises._stored_digests())
    rewrites = {}
    for path in assignments.notebooks():
        for q in assignments.questions(nbformat.read(path, as_version=4)):
            if q.check is not None and q.label in stored:
                rewrites[q.check.source] = digest_check_source(q.label, q.check)
    return rewrites


def strip_notebook(path: Path) -> nbformat.NotebookNode:
    """Load a notebook, drop the solution blocks from its Markdown cells and replace each check
    cell that computes its answer by one that compares against the answer's digest."""
    nb = nbformat.read(path, as_version=4)
    rewrites = check_rewrites()
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = strip_solutions(cell.source)
        elif cell.source in rewrites:
            cell.source = rewrites[cell.source]
    # a cell that held only a solution is now empty: drop it
    nb.cells = [c for c in nb.cells if c.cell_type != "markdown" or c.source.strip()]
    return nb


def strip_site(html_dir: Path) -> Path:
    """Strip solutions from the downloadable and the live notebooks and write the notebooks
    zip; return its path."""
    for folder in ("_sources", "lite/files", "notebooks"):
        for path in (html_dir / folder).rglob("*.ipynb"):
            nbformat.write(strip_notebook(path), path)
    archive = html_dir / "_downloads" / "notebooks-student.zip"
    archive.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        for folder in ("chapters", "labs"):
            for path in sorted((ROOT / folder).glob("*.ipynb")):
                # the build's plain-Jupyter copy (tools/plain_notebooks.py), stripped again
                converted = html_dir / "notebooks" / folder / path.name
                source = converted if converted.exists() else path
                zf.writestr(
                    f"{folder}/{path.name}", nbformat.writes(strip_notebook(source))
                )
    return archive


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in {"config", "strip"}:
        sys.exit(__doc__)
    if sys.argv[1] == "config":
        student_config(Path(sys.argv[2]))
    else:
        print(f"wrote {strip_site(Path(sys.argv[2]))}")
