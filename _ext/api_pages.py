"""Sphinx extension: the API reference, one page per module of ``helpers`` (R4-10).

The reference was one page of 1.7 MB. At ``builder-inited`` this writes ``appendix/api/<module>.md``
for every module that ``helpers.MODULES`` lists (a package's submodules on its page), in the order
of its kinds, and removes the pages of modules no longer listed; ``_toc.yml`` takes them in with a
glob under ``appendix/api``. A module added to ``helpers.MODULES`` therefore gets its page on the
next build with no other edit. The pages are build output (``.gitignore``): edit the docstrings,
or :data:`PREAMBLES` for a page's opening prose.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx

FOLDER = "appendix/api"
KINDS = {
    "model": "the formulas, the specs and the evidence (no torch)",
    "measure": "measuring this machine (the labs; these import torch when used)",
    "book": "figures, calculators, answer checks and printed numbers",
}
"""What each kind of ``helpers.MODULES`` holds, as the pages say it."""

PREAMBLES = {
    "calculators": (
        "Each chapter's calculator is a builder and a `render_*` function here: Chapter 1's "
        "`two_ceilings` (`render_two_ceilings`, sizes up to `OP_SIZE_LIMITS` per operation, "
        "elementwise work on the vector peak), Chapter 2's `rooflines`, Chapter 4's "
        "`batched_layer` (the first-order bound beside the second-order prediction on published "
        "ceilings) and Chapter 5's `resnet50`. The chapters name the controls, not the code or its "
        "limits: a size past a limit, or a dtype the chosen device has no peak for, shows an input "
        "error that says which."
    ),
}
"""Prose a module's page opens with, before its docstrings."""


def _modules(root: Path) -> dict[str, tuple[str, ...]]:
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    helpers = importlib.import_module("helpers")
    return dict(helpers.MODULES)


def submodules(root: Path, name: str) -> list[str]:
    """The public submodules of ``helpers.<name>`` if it is a package (dotted, in file order)."""
    folder = root / "helpers" / name
    if not (folder / "__init__.py").exists():
        return []
    return [
        f"helpers.{name}.{info.name}"
        for info in sorted(pkgutil.iter_modules([str(folder)]), key=lambda i: i.name)
        if not info.name.startswith("_")
    ]


def module_page(root: Path, name: str, kind: str) -> str:
    """The MyST source of module ``helpers.<name>``'s page."""
    lines = [
        f"# `helpers.{name}`",
        "",
        f"*One of the package's {kind!r} modules: {KINDS.get(kind, kind)}.*",
        "",
    ]
    if name in PREAMBLES:
        lines += [PREAMBLES[name], ""]
    subs = submodules(root, name)
    lines.append("```{eval-rst}")
    if subs:
        lines.append(f".. automodule:: helpers.{name}")
        for sub in subs:
            lines += ["", f".. automodule:: {sub}", "   :members:"]
    else:
        lines += [f".. automodule:: helpers.{name}", "   :members:"]
    lines += ["```", ""]
    return "\n".join(lines)


def pages(root: Path) -> dict[str, str]:
    """File name (``NN_<module>.md``, numbered in ``helpers.MODULES``' order) -> page source."""
    found = {}
    index = 0
    for kind, names in _modules(root).items():
        for name in names:
            index += 1
            found[f"{index:02d}_{name}.md"] = module_page(root, name, kind)
    return found


def reference_text(root: Path) -> str:
    """The whole reference's source: ``appendix/api.md`` and every generated page (for the tests
    that check each module is documented)."""
    text = (root / "appendix" / "api.md").read_text(encoding="utf-8")
    return "\n".join([text, *pages(root).values()])


def write_pages(root: Path) -> list[Path]:
    """Write the pages under ``root/appendix/api`` (only those whose text changed, so Sphinx does
    not re-read the others) and delete stale ones; return the pages."""
    folder = root / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    wanted = pages(root)
    for old in folder.glob("*.md"):
        if old.name not in wanted:
            old.unlink()
    written = []
    for file, text in wanted.items():
        path = folder / file
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def _builder_inited(app: Sphinx) -> None:
    write_pages(Path(app.srcdir))


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("builder-inited", _builder_inited)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
