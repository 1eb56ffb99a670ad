"""Execute notebooks in place so their committed outputs are real: ``python tools/execute.py NB [NB ...]``.

Runs each notebook top to bottom in the project's kernel from its own folder
(as Colab and nbval do) and saves it with outputs. Widget state is not stored:
the rendered book shows calculators' static default output instead.
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

# A tqdm.auto progress bar is an ipywidget; without a kernel its text fallback is the bar's first
# frame ("0%|          | 0/10"), which would sit in the rendered page as if the sweep had stalled.
_PROGRESS_BAR = re.compile(r"^\s*[^|]*\s*\d+%\|")


def drop_progress_bars(nb) -> int:
    """Remove tqdm widget outputs (live-only progress bars) from ``nb``; return how many."""
    dropped = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        kept = []
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if (
                "application/vnd.jupyter.widget-view+json" in data
                and _PROGRESS_BAR.match(data.get("text/plain", ""))
            ):
                dropped += 1
                continue
            kept.append(out)
        cell.outputs = kept
    return dropped


def execute(path: Path, timeout: int = 600) -> float:
    """Execute ``path`` in place; return the seconds it took."""
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
    nb.metadata.pop("widgets", None)
    drop_progress_bars(nb)
    nbformat.write(nb, path)
    return time.perf_counter() - start


if __name__ == "__main__":
    for name in sys.argv[1:]:
        seconds = execute(Path(name))
        print(f"{name}: executed in {seconds:.1f} s")
