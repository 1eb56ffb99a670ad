"""Binder starts with what the notebooks import (review R3): ``binder/`` is repo2docker's
configuration, and it must agree with the book's own requirements."""

from __future__ import annotations

import os
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]


def _pins(path: Path) -> dict[str, str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    reqs = [Requirement(line) for line in lines if line.strip() and line[0] not in "#-"]
    return {r.name: str(r.specifier) for r in reqs}


def test_binder_installs_the_notebooks_packages_at_the_books_versions():
    """numpy, matplotlib, ipywidgets, tqdm and torch, each with the book's own specifier; torch
    from PyTorch's CPU index; no build or test tool."""
    binder = _pins(ROOT / "binder" / "requirements.txt")
    book = _pins(ROOT / "requirements-book.txt") | _pins(ROOT / "requirements.txt")
    assert set(binder) == {"numpy", "matplotlib", "ipywidgets", "tqdm", "torch"}
    for name, spec in binder.items():
        assert spec == book[name], f"{name}: binder {spec}, book {book[name]}"
    text = (ROOT / "binder" / "requirements.txt").read_text(encoding="utf-8")
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in text.splitlines()


def test_binder_post_build_installs_helpers_from_the_checkout():
    """postBuild is executable and installs this repository (helpers) without its dependencies."""
    post = ROOT / "binder" / "postBuild"
    assert os.access(post, os.X_OK)
    assert "pip install --no-deps -e ." in post.read_text(encoding="utf-8")
