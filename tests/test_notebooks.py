"""Structural checks of the book's notebooks: what every chapter and lab promises its readers.

nbval proves that the notebooks run and (for chapters) reproduce; these tests
check the book's own standards: every notebook is in the table of contents,
the Colab setup cell installs helpers from the repository named in
``_config.yml``, chapters never import torch (they run in the browser), labs
open in Colab with a GPU, and every chapter has its exercises, auto-check,
takeaway, lab link and references.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
REPO_URL = CONFIG["repository"]["url"].rstrip("/")
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))
LABS = sorted((ROOT / "labs").glob("*.ipynb"))


def _toc_files() -> set[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    files = set()
    for part in toc.get("parts", []):
        for entry in part.get("chapters", []):
            files.add(entry["file"])
    return files


def _read(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def _markdown(nb: nbformat.NotebookNode) -> str:
    return "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")


def _code(nb: nbformat.NotebookNode) -> str:
    return "\n".join(c.source for c in nb.cells if c.cell_type == "code")


def test_book_has_chapters_and_labs():
    """Every chapter and lab listed in the table of contents exists (and, below, every one on disk is listed)."""
    listed = {f for f in _toc_files() if f.startswith(("chapters/", "labs/"))}
    on_disk = {str(p.relative_to(ROOT).with_suffix("")) for p in CHAPTERS + LABS}
    assert CHAPTERS and LABS
    assert listed == on_disk, (
        f"in the TOC only: {listed - on_disk}; on disk only: {on_disk - listed}"
    )


@pytest.mark.parametrize("path", CHAPTERS + LABS, ids=lambda p: p.name)
def test_notebook_is_in_the_toc(path):
    """No notebook is left out of the rendered book."""
    assert str(path.relative_to(ROOT).with_suffix("")) in _toc_files()


@pytest.mark.parametrize("path", CHAPTERS + LABS, ids=lambda p: p.name)
def test_setup_cell_installs_helpers_from_the_configured_repository(path):
    """The first code cell installs helpers on Colab from _config.yml's repository URL, and never torch."""
    first = next(c for c in _read(path).cells if c.cell_type == "code")
    assert '"google.colab" in sys.modules' in first.source
    urls = re.findall(r"git\+(https://[^\s\"']+)", first.source)
    assert urls == [REPO_URL], (
        f"{path.name}: setup cell installs from {urls}, _config.yml says {REPO_URL}"
    )
    assert "torch" not in first.source.replace("torch is already there", "")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_chapter_does_not_import_torch(path):
    """Chapters run in the browser (Pyodide), where torch does not exist."""
    assert not re.search(r"^\s*(import torch|from torch)", _code(_read(path)), re.M)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_chapter_has_its_parts(path):
    """Each chapter: >= 3 exercises with solutions, an auto-check, a takeaway, a calculator, a lab link, references."""
    nb = _read(path)
    text = _markdown(nb)
    exercises = re.findall(r"\{exercise\}", text)
    solutions = re.findall(r"\{solution\}", text)
    assert len(exercises) >= 3, f"{path.name}: {len(exercises)} exercises"
    assert len(solutions) >= len(exercises), f"{path.name}: an exercise has no solution"
    assert "exercises.check(" in _code(nb), f"{path.name}: no auto-checked exercise"
    assert re.search(r"Takeaway", text), f"{path.name}: no takeaway box"
    assert re.search(r"\bcalculators\.\w+\(", _code(nb)), f"{path.name}: no calculator"
    assert re.search(r"\]\(\.\./labs/lab\d_[a-z0-9_]+\.ipynb\)", text), (
        f"{path.name}: no link to a lab"
    )
    assert "{footbibliography}" in text, f"{path.name}: no references"


@pytest.mark.parametrize("path", LABS, ids=lambda p: p.name)
def test_lab_opens_in_colab_with_a_gpu(path):
    """Each lab: a Colab badge pointing at itself in the repository, GPU metadata, the device printed first."""
    nb = _read(path)
    assert nb.metadata.get("accelerator") == "GPU"
    badge = f"https://colab.research.google.com/github/{REPO_URL.removeprefix('https://github.com/')}/blob/main/labs/{path.name}"
    assert badge in _markdown(nb), f"{path.name}: no Colab badge linking {badge}"
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    assert "describe_device()" in code_cells[1].source, (
        f"{path.name}: the second code cell must print the device"
    )


@pytest.mark.parametrize("path", CHAPTERS + LABS, ids=lambda p: p.name)
def test_committed_with_outputs_and_no_errors(path):
    """The book renders committed outputs: every code cell has run, none raised."""
    for cell in _read(path).cells:
        if cell.cell_type != "code" or not cell.source.strip():
            continue
        assert cell.get("execution_count") is not None, (
            f"{path.name}: a code cell was never run"
        )
        assert not any(o.get("output_type") == "error" for o in cell.outputs), (
            f"{path.name}: an error output"
        )


_WRITES = re.compile(
    r"""(savefig|to_csv|to_json|write_text|write_bytes|np\.save\w*|json\.dump)\s*\(|open\([^)]*["'][wax]b?["']"""
)


@pytest.mark.parametrize("path", CHAPTERS + LABS, ids=lambda p: p.name)
def test_notebook_writes_no_file_outside_a_temporary_folder(path):
    """Notebooks run in readers' kernels and in CI: a cell that writes a file must write it under tempfile's folder."""
    for index, cell in enumerate(_read(path).cells):
        if cell.cell_type != "code":
            continue
        if _WRITES.search(cell.source) and "tempfile" not in cell.source:
            pytest.fail(
                f"{path.name} cell {index} writes a file outside a temporary folder:\n{cell.source}"
            )
        assert not re.search(r"[\"']/(tmp|home|root|work)/", cell.source), (
            f"{path.name} cell {index} uses an absolute path"
        )


def _prints_only(source: str) -> bool:
    """True if every statement of a cell is a call to ``Markdown``/``display`` (it only prints prose or a table)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:  # IPython magics: not a prose cell
        return False
    if not tree.body:
        return False
    for node in tree.body:
        if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
            return False
        func = node.value.func
        if not (isinstance(func, ast.Name) and func.id in {"Markdown", "display"}):
            return False
    return True


@pytest.mark.parametrize("path", CHAPTERS + LABS, ids=lambda p: p.name)
def test_prose_cells_hide_their_input(path):
    """A cell whose only job is to print prose or a table hides its input: readers read each sentence once."""
    for index, cell in enumerate(_read(path).cells):
        if cell.cell_type == "code" and _prints_only(cell.source):
            tags = cell.metadata.get("tags", [])
            assert "hide-input" in tags or "remove-input" in tags, (
                f"{path.name} cell {index} only prints prose but shows its code:\n{cell.source[:200]}"
            )


_FILE_NAME = re.compile(
    r"^\S+\.(png|jpe?g|svg|gif)$|^(figure|fig\.?|image|plot)\s*\d*$", re.I
)


@pytest.mark.parametrize(
    "path",
    CHAPTERS + LABS + [ROOT / "appendix" / "hardware.ipynb"],
    ids=lambda p: p.name,
)
def test_every_figure_has_alt_text(path):
    """Every cell that outputs an image says in words what it shows (WCAG 2.1, 1.1.1 Non-text content).

    myst-nb writes cell metadata ``mystnb.image.alt`` into the ``<img alt>``; without it the alt
    text is the image's file name. The text must be at least a sentence, not a file name or "figure 3".
    """
    for index, cell in enumerate(_read(path).cells):
        if cell.cell_type != "code" or not any(
            mime.startswith("image/")
            for output in cell.get("outputs", [])
            for mime in output.get("data", {})
        ):
            continue
        alt = str(cell.metadata.get("mystnb", {}).get("image", {}).get("alt", ""))
        where = f"{path.name} cell {index} ({cell.source.strip()[:60]!r})"
        assert alt.strip(), f"{where}: a figure without alt text"
        assert not _FILE_NAME.match(alt.strip()), (
            f"{where}: alt text {alt!r} says nothing"
        )
        assert len(alt.split()) >= 12 and alt.rstrip().endswith("."), (
            f"{where}: alt text {alt!r} is not a sentence saying what the figure shows"
        )


def test_one_largest_batch_in_every_chapter():
    """Chapters 6, 8, 10 and 12 state the same largest batch for Llama-3-70B on 8xH100 at 4,096 tokens.

    The number is the one home's, :func:`helpers.inference.max_decode_batch`;
    each chapter's committed outputs must print it (they once said 323 and 371).
    """
    from helpers import inference

    expected = inference.max_decode_batch("llama-3-70b", 4096, "H100", n_gpus=8)
    for name in (
        "06_transformer_inference",
        "08_latency_targets",
        "10_attention_offload",
        "12_many_gpus",
    ):
        nb = _read(ROOT / "chapters" / f"{name}.ipynb")
        text = "\n".join(
            str(o.get("text", "")) + str(o.get("data", {}).get("text/markdown", ""))
            for c in nb.cells
            if c.cell_type == "code"
            for o in c.outputs
        )
        assert re.search(rf"\b{expected:,}\b|\b{expected}\b", text), (
            f"{name} never prints {expected}"
        )
