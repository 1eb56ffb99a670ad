"""Sphinx extension: put a "run it live in the page" block above each chapter's calculator.

For every notebook under ``chapters/``, at read time (the file on disk is not
touched), a Markdown cell holding jupyterlite-sphinx's ``notebooklite``
directive is inserted before the first cell that builds a calculator
(a call into :mod:`helpers.calculators`). In the rendered page it is a button; a click replaces it
with the whole chapter running in JupyterLite (Pyodide, in the browser), where
the calculator's controls work. Colab and Jupyter users never see the
directive, since the notebook itself does not contain it.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx

CALCULATOR_CELL = re.compile(r"\bcalculators\.\w+\(")
"""A code cell that builds one of the book's calculators (``calculators.two_ceilings().show()``)."""

PROMPT = (
    "▶ Run this chapter live, with working controls, right here in the page "
    "(Python loads in your browser: about 30 MB the first time)"
)


def _live_cell(notebook_name: str, prompt: str, height: str) -> dict[str, Any]:
    text = f"```{{notebooklite}} {notebook_name}\n:width: 100%\n:height: {height}\n:prompt: {prompt}\n```"
    return {
        "cell_type": "markdown",
        "id": "live-calculator",
        "metadata": {},
        "source": text,
    }


def insert_live_cell(
    source: str, notebook_name: str, prompt: str = PROMPT, height: str = "760px"
) -> str:
    """Return the notebook JSON ``source`` with the live block before its first calculator (unchanged if none)."""
    nb = json.loads(source)
    cells = nb.get("cells", [])
    for index, cell in enumerate(cells):
        text = (
            "".join(cell.get("source", "")) if cell.get("cell_type") == "code" else ""
        )
        if CALCULATOR_CELL.search(text):
            cells.insert(index, _live_cell(notebook_name, prompt, height))
            return json.dumps(nb)
    return source


def _source_read(app: Sphinx, docname: str, source: list[str]) -> None:
    if not docname.startswith(app.config.live_notebooks_folder + "/"):
        return
    path = app.env.doc2path(docname)
    if not str(path).endswith(".ipynb"):
        return
    source[0] = insert_live_cell(
        source[0], str(path).rsplit("/", 1)[-1], app.config.live_notebooks_prompt
    )


def _stage_all_notebooks(app: Sphinx) -> None:
    """Copy every live notebook into the JupyterLite contents folder.

    jupyterlite-sphinx empties that folder at the start of each build and
    refills it only from the pages it reads, so an incremental build (one
    changed chapter) would ship a live site holding that chapter alone and
    leave the other chapters' live buttons opening nothing.
    """
    source = Path(app.srcdir) / app.config.live_notebooks_folder
    target = (
        Path(app.srcdir)
        / app.config.jupyterlite_content_dir
        / app.config.live_notebooks_folder
    )
    target.mkdir(parents=True, exist_ok=True)
    for notebook in sorted(source.glob("*.ipynb")):
        shutil.copy2(notebook, target / notebook.name)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("live_notebooks_folder", "chapters", "env")
    app.add_config_value("live_notebooks_prompt", PROMPT, "env")
    app.connect("source-read", _source_read)
    app.connect("builder-inited", _stage_all_notebooks)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
