"""Tiny helpers for writing notebooks from Python: ``md("...")`` and ``code("...")`` cells.

Usage in an authoring script::

    from tools.new_notebook import md, code, save
    save("chapters/x.ipynb", [md("# Title"), code("import helpers")], gpu=False)
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook


def md(text: str) -> nbformat.NotebookNode:
    """A Markdown cell (text is dedented and stripped)."""
    return new_markdown_cell(textwrap.dedent(text).strip("\n"))


def code(text: str, tags: list[str] | None = None) -> nbformat.NotebookNode:
    """A code cell (dedented), optionally tagged (e.g. ``["remove-input"]``)."""
    cell = new_code_cell(textwrap.dedent(text).strip("\n"))
    if tags:
        cell.metadata["tags"] = tags
    return cell


def save(path: str | Path, cells: list, gpu: bool = False) -> None:
    """Write a notebook with the book's kernel metadata (``accelerator: GPU`` for labs)."""
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.metadata["language_info"] = {"name": "python"}
    if gpu:
        nb.metadata["accelerator"] = "GPU"
        nb.metadata["colab"] = {"provenance": [], "gpuType": "T4"}
    nbformat.write(nb, str(path))
