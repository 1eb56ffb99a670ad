"""Execute notebooks in place so their committed outputs are real: ``python tools/execute.py NB [NB ...]``.

Runs each notebook top to bottom in the project's kernel from its own folder
(as Colab and nbval do) and saves it with outputs. Widget state is not stored:
the rendered book shows calculators' static default output instead.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient


def execute(path: Path, timeout: int = 600) -> float:
    """Execute ``path`` in place; return the seconds it took."""
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    nb.metadata.pop("widgets", None)
    nbformat.write(nb, path)
    return time.perf_counter() - start


if __name__ == "__main__":
    for name in sys.argv[1:]:
        seconds = execute(Path(name))
        print(f"{name}: executed in {seconds:.1f} s")
