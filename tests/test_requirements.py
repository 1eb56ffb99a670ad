"""The book's build installs only what it needs (review R19).

``make book`` installs ``requirements-book.txt``; ``make test`` adds ``requirements.txt``. The
closure of the book's requirements is walked through the installed packages' own metadata
(``Requires-Dist``, markers evaluated, extras not taken), so the check needs no network.
"""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
# What only the tests, labs and graded assignments use: never part of the book's build.
TEST_ONLY = {
    "torch",
    "playwright",
    "otter-grader",
    "mooncake-transfer-engine-non-cuda",
    "nbval",
    "pytest",
    "hypothesis",
    "ruff",
}


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirements(path: Path) -> list[Requirement]:
    """The requirement lines of ``path`` (no comments, no ``-r`` includes)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [Requirement(line) for line in lines if line.strip() and line[0] not in "#-"]


def _closure(requirements: list[Requirement]) -> set[str]:
    """Every distribution these requirements pull in, by the installed packages' metadata."""
    seen: set[str] = set()
    todo = [r for r in requirements if r.marker is None or r.marker.evaluate()]
    while todo:
        req = todo.pop()
        name = _canonical(req.name)
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = metadata.requires(req.name) or []
        except metadata.PackageNotFoundError:
            continue
        for line in requires:
            dep = Requirement(line)
            if dep.marker is None or dep.marker.evaluate({"extra": ""}):
                todo.append(dep)
    return seen


def test_book_requirements_pull_no_test_toolchain():
    """Nothing in the book's dependency tree is torch or a test tool (jupyter-book's own tree
    included: a new dependency of one of its packages would show here)."""
    book = _requirements(ROOT / "requirements-book.txt")
    missing = [r.name for r in book if not _installed(r.name)]
    if missing:
        pytest.skip(f"book requirements not installed here: {missing}")
    pulled = _closure(book)
    assert "jupyter-book" in pulled and "numpy" in pulled  # the walk did reach the tree
    assert not pulled & TEST_ONLY, (
        f"the book's build would install {pulled & TEST_ONLY}"
    )


def test_test_requirements_include_the_books_and_the_toolchain():
    """``requirements.txt`` includes the book's file and names each test-only package once, with
    torch pinned to the CPU build's version the Makefile installs."""
    text = (ROOT / "requirements.txt").read_text(encoding="utf-8")
    assert "-r requirements-book.txt" in text.splitlines()
    names = [_canonical(r.name) for r in _requirements(ROOT / "requirements.txt")]
    assert TEST_ONLY <= set(names)
    assert len(names) == len(set(names))
    torch = next(
        r for r in _requirements(ROOT / "requirements.txt") if r.name == "torch"
    )
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    version = re.search(r"^TORCH_VERSION := (\S+)$", makefile, re.M)
    assert version and str(torch.specifier) == f"=={version.group(1)}"


def test_pure_test_tool_never_in_the_book_file():
    """No test-only package is named in requirements-book.txt itself."""
    names = {_canonical(r.name) for r in _requirements(ROOT / "requirements-book.txt")}
    assert not names & TEST_ONLY


def _installed(name: str) -> bool:
    try:
        metadata.version(name)
    except metadata.PackageNotFoundError:
        return False
    return True
