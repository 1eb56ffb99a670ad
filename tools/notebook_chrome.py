"""Re-apply the notebooks' chrome: what each chapter, lab and appendix notebook carries around its content.

``python tools/notebook_chrome.py``
    rewrites, in every notebook of ``chapters/``, ``labs/`` and ``appendix/``:

    * the **install line** of the set-up cell, ``%pip install -q "gpu-book-helpers @ git+URL"``,
      with the repository address of ``_config.yml`` (``repository.url``), the one place it is held;
    * each lab's **Colab badge** (the first line of its first cell): the badge image served by the
      book itself (``_static/colab-badge.svg``) linking to the notebook on Colab at that address
      and ``repository.branch``;
    * the **set-up cell's tag**: ``remove-input``, so the page opens on its title and prose rather
      than on a "Show code cell source" bar (it prints nothing);

    and writes ``helpers/data/exercise_digests.jsonl``, the digests of every auto-checked exercise's
    answer that the student edition's check cells compare against (``helpers.exercises.check_digest``),
    computed from the very expression each check cell uses.

``python tools/notebook_chrome.py --check``
    changes nothing; exits 1, listing what is out of date, if a run would change anything.

Only sources, tags and the digests file change, never outputs: no notebook needs re-executing.
Run it again after merging notebook edits from elsewhere, or after changing the repository's address
or a helper that an exercise's answer depends on (``tests/test_notebook_chrome.py`` fails until then).
"""

from __future__ import annotations

import importlib
import json
import re
import sys
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tools import assignments  # noqa: E402

FOLDERS = ("chapters", "labs", "appendix")
BADGE_IMAGE = "_static/colab-badge.svg"
DIGESTS = ROOT / "helpers" / "data" / "exercise_digests.jsonl"
SETUP_MARK = "# Setup:"
_INSTALL = re.compile(r'"gpu-book-helpers @ git\+[^"]*"')
_BADGE = re.compile(r"^\[!\[Open In Colab\]\([^)]*\)\]\([^)]*\)[ \t]*$", re.M)


def repository() -> tuple[str, str]:
    """The repository's address and branch, from ``_config.yml``."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    repo = config["repository"]
    return repo["url"].rstrip("/"), repo.get("branch", "main")


def install_spec(url: str) -> str:
    """The quoted pip requirement that installs ``helpers`` from the repository at ``url``."""
    return f'"gpu-book-helpers @ git+{url}"'


def badge(path: Path, url: str, branch: str) -> str:
    """The Markdown of the Colab badge of the notebook at ``path`` (relative to the repository)."""
    slug = url.split("github.com/", 1)[1]
    image = Path("..", *[".."] * (len(path.parts) - 2), BADGE_IMAGE).as_posix()
    return (
        f"[![Open In Colab]({image})]"
        f"(https://colab.research.google.com/github/{slug}/blob/{branch}/{path.as_posix()})"
    )


def notebooks() -> list[Path]:
    """Every notebook of the book (relative to the repository root)."""
    return sorted(
        p.relative_to(ROOT)
        for folder in FOLDERS
        for p in (ROOT / folder).glob("*.ipynb")
    )


def apply_chrome(
    nb: nbformat.NotebookNode, path: Path, url: str, branch: str
) -> list[str]:
    """Apply the chrome to ``nb`` (the notebook at ``path``) in place; return what changed."""
    changes: list[str] = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        new = _INSTALL.sub(install_spec(url), cell.source)
        if new != cell.source:
            cell.source = new
            changes.append(f"cell {index}: install line")
        if cell.source.lstrip().startswith(SETUP_MARK):
            tags = list(cell.metadata.get("tags", []))
            wanted = [t for t in tags if t != "hide-input"]
            if "remove-input" not in wanted:
                wanted.append("remove-input")
            if wanted != tags:
                cell.metadata["tags"] = wanted
                changes.append(f"cell {index}: set-up cell tagged remove-input")
    if path.parts[0] == "labs" and nb.cells and nb.cells[0].cell_type == "markdown":
        first = nb.cells[0]
        line = badge(path, url, branch)
        if _BADGE.search(first.source):
            new = _BADGE.sub(line, first.source, count=1)
        else:
            new = f"{line}\n\n{first.source}"
        if new != first.source:
            first.source = new
            changes.append("cell 0: Colab badge")
    return changes


def expected_answers() -> list[tuple[str, float, float]]:
    """(label, the book's answer, rel_tol) of every auto-checked exercise whose answer a reader's
    own measurement does not decide (``assignments/spec.yml``'s manual list)."""
    spec = assignments.load_spec()
    found = []
    for path in assignments.notebooks():
        nb = nbformat.read(path, as_version=4)
        for q in assignments.questions(nb):
            if q.check is None or q.label in spec.get("manual", {}):
                continue
            code = "\n".join([*q.check.imports, *q.check.preamble, q.check.expected])
            scope: dict[str, object] = {}
            for name in assignments._free_names(code):
                try:
                    scope[name] = importlib.import_module(f"helpers.{name}")
                except ModuleNotFoundError:
                    scope.update(assignments.notebook_state(nb, q))
            for line in [*q.check.imports, *q.check.preamble]:
                exec(line, scope)
            value = float(eval(q.check.expected, scope))
            rel_tol = float(eval(q.check.keywords.get("rel_tol", "0.05"), {}))
            found.append((q.label, value, rel_tol))
    return found


def digests_text() -> str:
    """The contents of ``helpers/data/exercise_digests.jsonl``."""
    from helpers import exercises

    lines = [
        json.dumps(
            {
                "label": label,
                "rel_tol": rel_tol,
                "digests": exercises.answer_digests(label, value, rel_tol),
            }
        )
        for label, value, rel_tol in expected_answers()
    ]
    return "\n".join(lines) + "\n"


def run(*, write: bool) -> list[str]:
    """Apply everything (``write``) or only report it; return what is or was out of date."""
    url, branch = repository()
    stale: list[str] = []
    for path in notebooks():
        nb = nbformat.read(ROOT / path, as_version=4)
        changes = apply_chrome(nb, path, url, branch)
        if changes:
            stale += [f"{path}: {c}" for c in changes]
            if write:
                nbformat.write(nb, ROOT / path)
    text = digests_text()
    if not DIGESTS.exists() or DIGESTS.read_text(encoding="utf-8") != text:
        stale.append(f"{DIGESTS.relative_to(ROOT)}: exercise digests")
        if write:
            DIGESTS.write_text(text, encoding="utf-8")
    return stale


if __name__ == "__main__":
    check = sys.argv[1:] == ["--check"]
    if sys.argv[1:] not in ([], ["--check"]):
        sys.exit(__doc__)
    out_of_date = run(write=not check)
    for line in out_of_date:
        print(("out of date: " if check else "updated: ") + line)
    sys.exit(1 if check and out_of_date else 0)
