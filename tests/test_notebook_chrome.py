"""The notebooks' chrome agrees with ``_config.yml`` (``tools/notebook_chrome.py``).

The repository's address is held once, in ``_config.yml``: every notebook's install line and every
lab's Colab badge must use it, so that a fork or a move changes one line and one tool run. The
set-up cell is hidden under the title, and the student edition's answer digests are current.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tools import notebook_chrome  # noqa: E402


def test_every_install_line_and_badge_uses_the_configured_repository():
    """Each ``gpu-book-helpers @ git+`` line names ``repository.url``; each lab's first line is
    the Colab badge for that lab's own path at that address and branch, served from _static."""
    url, branch = notebook_chrome.repository()
    slug = url.split("github.com/", 1)[1]
    installs = 0
    for path in notebook_chrome.notebooks():
        nb = nbformat.read(ROOT / path, as_version=4)
        for cell in nb.cells:
            for spec in re.findall(r'"gpu-book-helpers @ git\+([^"]*)"', cell.source):
                assert spec == url, f"{path}: installs from {spec}, not {url}"
                installs += 1
            for link in re.findall(
                r"colab\.research\.google\.com/github/([^)\s]+)", cell.source
            ):
                assert link == f"{slug}/blob/{branch}/{path.as_posix()}", (
                    f"{path}: {link}"
                )
        if path.parts[0] == "labs":
            first = nb.cells[0].source.splitlines()[0]
            assert first == notebook_chrome.badge(path, url, branch)
            assert (
                ROOT / path.parent / first.split("](")[1].split(")")[0]
            ).resolve() == (ROOT / "_static" / "colab-badge.svg")
    assert (
        installs >= len(notebook_chrome.notebooks()) - 3
    )  # md appendix pages have none


def test_chrome_is_applied_and_digests_are_current():
    """A run of the tool would change nothing (run ``python tools/notebook_chrome.py`` if this
    fails after a merge, a move of the repository, or a change to a helper an answer uses)."""
    assert notebook_chrome.run(write=False) == []


def test_a_fork_changes_every_address_from_one_value():
    """Applied with another address, the install line and the badge follow it; the set-up cell
    is tagged remove-input instead of hide-input."""
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell(
                "[![Open In Colab](https://x/badge.svg)](https://colab.research.google.com/github/a/b/blob/main/labs/l.ipynb)\n\n# Lab"
            ),
            nbformat.v4.new_code_cell(
                '# Setup: install\n%pip install -q "gpu-book-helpers @ git+https://github.com/a/b"',
                metadata={"tags": ["hide-input"]},
            ),
        ]
    )
    path = Path("labs/l.ipynb")
    changes = notebook_chrome.apply_chrome(
        nb, path, "https://github.com/fork/book", "dev"
    )
    assert len(changes) == 3
    assert 'git+https://github.com/fork/book"' in nb.cells[1].source
    assert nb.cells[1].metadata["tags"] == ["remove-input"]
    assert nb.cells[0].source.startswith(
        "[![Open In Colab](../_static/colab-badge.svg)]"
        "(https://colab.research.google.com/github/fork/book/blob/dev/labs/l.ipynb)"
    )
    assert (
        notebook_chrome.apply_chrome(nb, path, "https://github.com/fork/book", "dev")
        == []
    )
