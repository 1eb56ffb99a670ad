"""Graded assignments: each chapter's and lab's exercises as an otter-grader assignment.

``python tools/assignments.py [NOTEBOOK ...]``
    writes, for each notebook (default: every chapter and lab), an otter "master"
    notebook to ``_build/assignments/<stem>/master/<stem>.ipynb`` and runs
    ``otter assign`` on it, which writes ``autograder/`` (the solutions notebook and
    the autograder zip that Gradescope accepts) and ``student/`` (the notebook to hand out).

The questions come from the book's own exercise structure, keyed on labels, never
on cell positions:

* every ``{exercise}`` block with a ``:label:`` is a question named by its label;
* a code cell that calls ``exercises.check(answer, EXPECTED, ...)`` belongs to the
  most recent exercise above it and makes that question autograded: the student
  fills in ``answer``; a public test checks that it is a number, a hidden test calls
  ``exercises.check`` with the very expression the book checks against (the helper
  call), so a unit slip or a wrong answer fails with the book's own message and hint;
* every other exercise is graded by hand (otter's manual questions), its
  ``{solution}`` block becoming the solutions notebook's answer.

``assignments/spec.yml`` holds what the notebooks do not say: the worked answer of
each autograded question as hand arithmetic (so that a solutions notebook scoring full
marks checks the book's arithmetic against its helpers), points, and the lab questions
whose expected value comes from the student's own measurement, which a grader re-running
the notebook on other hardware cannot reproduce: those are graded by hand.
"""

from __future__ import annotations

import ast
import builtins
import os
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "_build" / "assignments"
SPEC = ROOT / "assignments" / "spec.yml"
OTTER_VERSION = "7.0.0"

# A MyST {exercise} or {solution} block, fenced with backticks or colons (length >= 3).
_BLOCK = re.compile(
    r"(?ms)^(?P<fence>`{3,}|:{3,})\{(?P<kind>exercise|solution)\}(?P<arg>[^\n]*)\n"
    r".*?^(?P=fence)[ \t]*$\n?"
)
_LABEL = re.compile(r"(?m)^:label:\s*(\S+)")


@dataclass
class Check:
    """An ``exercises.check`` cell: what the book checks the reader's ``answer`` against."""

    comment: str  # the placeholder's comment, e.g. "your answer in rows (samples)"
    preamble: list[str]  # statements before the check that the expected value needs
    expected: str  # source of the expected value
    keywords: dict[str, str]  # rel_tol, unit, hint as source
    imports: list[str] = field(default_factory=list)
    source: str = ""  # the whole cell, as the book has it


@dataclass
class Question:
    """One exercise: its label, prompt and solution blocks, and its check if it has one."""

    label: str
    prompt: str
    solutions: list[str] = field(default_factory=list)
    check: Check | None = None


def split_markdown(text: str) -> list[tuple[str, str | None, str]]:
    """Split a Markdown cell into ``(kind, label, text)`` pieces: "text", "exercise" or "solution"."""
    pieces: list[tuple[str, str | None, str]] = []
    pos = 0
    for match in _BLOCK.finditer(text):
        if text[pos : match.start()].strip():
            pieces.append(("text", None, text[pos : match.start()].strip("\n")))
        block = match.group(0).rstrip("\n")
        if match.group("kind") == "exercise":
            label = _LABEL.search(block)
            if label is None:
                raise ValueError(f"an exercise without a :label: {block[:60]!r}")
            pieces.append(("exercise", label.group(1), block))
        else:
            pieces.append(("solution", match.group("arg").strip(), block))
        pos = match.end()
    if text[pos:].strip():
        pieces.append(("text", None, text[pos:].strip("\n")))
    return pieces


def _is_check_call(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "check"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "exercises"
    )


def parse_check(source: str) -> Check | None:
    """The check in a code cell, or None if the cell calls no ``exercises.check``."""
    if "exercises.check" not in source:
        return None
    tree = ast.parse(source)
    calls = [node for node in ast.walk(tree) if _is_check_call(node)]
    if len(calls) != 1 or len(calls[0].args) < 2:
        raise ValueError(
            f"expected one exercises.check(answer, expected) in {source!r}"
        )
    call = calls[0]
    comment = ""
    preamble: list[str] = []
    imports: list[str] = []
    for stmt in tree.body:
        text = ast.get_source_segment(source, stmt) or ""
        targets = stmt.targets if isinstance(stmt, ast.Assign) else []
        if any(isinstance(t, ast.Name) and t.id == "answer" for t in targets):
            line = source.splitlines()[stmt.lineno - 1]
            comment = line.split("#", 1)[1].strip() if "#" in line else ""
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            imports.append(text)
        elif any(_is_check_call(node) for node in ast.walk(stmt)):
            continue  # the print(exercises.check(...)) itself
        else:
            preamble.append(text)
    keywords = {
        kw.arg: ast.get_source_segment(source, kw.value) or ""
        for kw in call.keywords
        if kw.arg
    }
    return Check(
        comment=comment,
        preamble=preamble,
        expected=ast.get_source_segment(source, call.args[1]) or "",
        keywords=keywords,
        imports=imports,
        source=source,
    )


def _free_names(code: str) -> list[str]:
    """Names ``code`` reads but does not assign or import: what it takes from the notebook."""
    tree = ast.parse(code)
    bound = {"answer", "exercises"} | set(dir(builtins))
    loads: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Store):
                bound.add(node.id)
            elif node.id not in loads:
                loads.append(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
    return [name for name in loads if name not in bound]


def _bound_names(stmt: ast.stmt) -> set[str]:
    """Names a top-level statement binds (assignment targets, imports, defs)."""
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in stmt.names}
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    targets: list[ast.expr] = []
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
        targets = [stmt.target]
    return {
        node.id
        for target in targets
        for node in ast.walk(target)
        if isinstance(node, ast.Name)
    }


def notebook_state(nb: nbformat.NotebookNode, question: Question) -> dict[str, object]:
    """The notebook variables ``question``'s hidden test reads, as the notebook computes them.

    The top-level statements of the code cells above the check that bind a name the test needs
    are run in notebook order, with every statement they in turn need (a backward slice of the
    notebook): the variables come from the book's own code, never from a copy of it. IPython
    lines (``%pip``, ``!cmd``) are left out.
    """
    check = question.check
    assert check is not None
    code = "\n".join([*check.imports, *check.preamble, check.expected])
    index = next(i for i, c in enumerate(nb.cells) if c.source == check.source)
    statements: list[ast.stmt] = []
    sources: list[str] = []
    for cell in nb.cells[:index]:
        if cell.cell_type != "code":
            continue
        text = "\n".join(
            line[: len(line) - len(line.lstrip())] + "pass"
            if line.lstrip().startswith(("%", "!"))
            else line
            for line in cell.source.splitlines()
        )
        for stmt in ast.parse(text).body:
            statements.append(stmt)
            sources.append(ast.get_source_segment(text, stmt) or "")
    needed = set(_free_names(code))
    chosen: list[int] = []
    for k in range(len(statements) - 1, -1, -1):
        bound = _bound_names(statements[k])
        if bound & needed:
            chosen.append(k)
            needed -= bound
            needed |= set(_free_names(sources[k])) - bound
    scope: dict[str, object] = {}
    exec("\n".join(sources[k] for k in sorted(chosen)), scope)
    if missing := needed - set(scope) - set(dir(builtins)):
        raise KeyError(f"{question.label}: the notebook never binds {sorted(missing)}")
    return scope


def test_source(question: Question, *, hidden: bool) -> str:
    """An otter exception-based test cell for an autograded question."""
    check = question.check
    assert check is not None
    name = re.sub(r"\W", "_", question.label)
    if not hidden:
        body = (
            f"def test_{name}_is_a_number(answer):\n"
            "    import math\n"
            "    from numbers import Real\n\n"
            "    assert isinstance(answer, Real) and not isinstance(answer, bool), (\n"
            f"        {'Write your answer as a number in the cell above: ' + check.comment!r}\n"
            "    )\n"
            '    assert math.isfinite(answer), "Your answer must be a finite number."\n'
        )
        config = "hidden: false\npoints: 0"
    else:
        kwargs = "".join(f", {k}={v}" for k, v in check.keywords.items())
        lines = [*check.imports, *check.preamble]
        lines.append(f"message = exercises.check(answer, {check.expected}{kwargs})")
        code = "\n".join(lines)
        params = ", ".join(["answer", *_free_names(code)])
        inner = "\n".join(
            "    " + line if line.strip() else ""
            for line in ["from helpers import exercises", *code.splitlines()]
        )
        body = (
            f"def test_{name}({params}):\n"
            + inner
            + '\n    assert message.startswith("Right"), message\n'
        )
        config = "hidden: true"
    return f'""" # BEGIN TEST CONFIG\n{config}\n""" # END TEST CONFIG\n{body}'


def solution_source(question: Question, worked: str | None = None) -> str:
    """The answer cell: the placeholder for students, ``worked`` (or the book's value) in the solutions."""
    check = question.check
    assert check is not None
    lines = [*check.imports]
    if check.comment:
        lines.append(f"# {check.comment}")
    if worked is None:
        # No hand arithmetic in spec.yml: the solution is the book's own expected value.
        if check.preamble:
            lines += ["# BEGIN SOLUTION NO PROMPT", *check.preamble, "# END SOLUTION"]
        worked = check.expected
    if "\n" in str(worked).strip():
        raise ValueError(f"{question.label}: the answer in spec.yml must be one line")
    lines.append(f"answer = {worked}  # SOLUTION")
    return "\n".join(lines)


def _raw(text: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_raw_cell(text)


def _md(text: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_markdown_cell(text)


def load_spec() -> dict:
    """``assignments/spec.yml``: per-label answers, points, and questions graded by hand."""
    return yaml.safe_load(SPEC.read_text(encoding="utf-8")) or {}


def questions(nb: nbformat.NotebookNode) -> list[Question]:
    """The notebook's exercises, in order, with their solutions and checks attached by label."""
    found: dict[str, Question] = {}
    last: str | None = None
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for kind, label, text in split_markdown(cell.source):
                if kind == "exercise":
                    found[label] = Question(label, text)
                    last = label
                elif kind == "solution":
                    if label not in found:
                        raise ValueError(f"solution {label!r} before its exercise")
                    found[label].solutions.append(text)
        elif cell.cell_type == "code" and (check := parse_check(cell.source)):
            if last is None:
                raise ValueError("an exercises.check cell before any exercise")
            found[last].check = check
    return list(found.values())


def master_notebook(path: Path, spec: dict) -> nbformat.NotebookNode:
    """The otter master notebook for one chapter or lab (``path`` is never written)."""
    nb = nbformat.read(path, as_version=4)
    stem = path.stem
    by_label = {q.label: q for q in questions(nb)}
    manual = spec.get("manual", {})
    points = spec.get("points", {"auto": 2, "manual": 2})
    cells: list[nbformat.NotebookNode] = [
        _raw(
            "# ASSIGNMENT CONFIG\n"
            + yaml.safe_dump(
                {
                    "name": stem,
                    "requirements": "requirements.txt",
                    "generate": {"pdf": False, "zips": False},
                    "export_cell": False,
                    "tests": {"ok_format": False},
                    "run_tests": False,
                    "init_cell": False,
                    "check_all_cell": False,
                    "environment": None,
                },
                sort_keys=False,
            ).replace("environment: null\n", "")
        )
    ]
    emitted: set[str] = set()

    def question_cells(q: Question) -> list[nbformat.NotebookNode]:
        auto = q.check is not None and q.label not in manual
        pts = points["auto"] if auto else points["manual"]
        config = {"name": q.label, "points": pts}
        if not auto:
            config["manual"] = True
        out = [_raw("# BEGIN QUESTION\n" + yaml.safe_dump(config, sort_keys=False))]
        out.append(_md(plain_markdown(q.prompt)))
        if not auto and q.check is not None:
            reason = manual[q.label]
            out.append(
                _md(
                    f"*Graded by hand: {reason} Run the check below, then explain your "
                    "answer in the cell after it.*"
                )
            )
            out.append(nbformat.v4.new_code_cell(q.check.source))
        if auto:
            worked = spec.get("answers", {}).get(q.label)
            out.append(_raw("# BEGIN SOLUTION"))
            out.append(nbformat.v4.new_code_cell(solution_source(q, worked)))
            out.append(_raw("# END SOLUTION"))
            out.append(_raw("# BEGIN TESTS"))
            out.append(nbformat.v4.new_code_cell(test_source(q, hidden=False)))
            out.append(nbformat.v4.new_code_cell(test_source(q, hidden=True)))
            out.append(_raw("# END TESTS"))
        if q.solutions:
            out.append(_raw("# BEGIN SOLUTION"))
            out.append(_md("\n\n".join(plain_markdown(s) for s in q.solutions)))
            out.append(_raw("# END SOLUTION"))
        out.append(_raw("# END QUESTION"))
        return out

    for cell in nb.cells:
        if cell.cell_type == "markdown":
            pieces = split_markdown(cell.source)
            if all(kind == "text" for kind, _, _ in pieces):
                cells.append(cell)
                continue
            for kind, label, text in pieces:
                if kind == "text":
                    cells.append(_md(text))
                elif kind == "exercise":
                    cells += question_cells(by_label[label])
                    emitted.add(label)
                # solutions were placed in their question
        elif cell.cell_type == "code" and parse_check(cell.source):
            continue  # placed in its question
        else:
            cells += _with_otter(cell, stem) if cell.cell_type == "code" else [cell]
    if emitted != set(by_label):
        raise ValueError(f"{stem}: exercises not emitted: {set(by_label) - emitted}")
    return nbformat.v4.new_notebook(cells=cells, metadata=nb.metadata)


_CITE = re.compile(r"\{(?:foot)?cite(?::\w+)?\}`([^`]*)`")


def plain_markdown(block: str) -> str:
    """An exercise or solution block as plain Markdown (Jupyter does not render MyST directives)."""
    lines = block.splitlines()[1:-1]
    body = "\n".join(line for line in lines if not re.match(r":\w+:", line)).strip()
    return _CITE.sub(lambda m: f"[{m.group(1)}]", body)


_SETUP = re.compile(
    r'(?m)^(?P<indent>[ \t]+)%pip install -q "gpu-book-helpers @ [^\n]*$'
)


def _with_otter(cell: nbformat.NotebookNode, stem: str) -> list[nbformat.NotebookNode]:
    """The Colab set-up cell, also installing otter, followed by the grader's start."""
    if "google.colab" not in cell.source or not _SETUP.search(cell.source):
        return [cell]
    cell = nbformat.from_dict(dict(cell))
    cell.source = _SETUP.sub(
        lambda m: (
            f"{m.group(0)}\n{m.group('indent')}%pip install -q otter-grader=="
            + OTTER_VERSION
        ),
        cell.source,
    )
    start = nbformat.v4.new_code_cell(
        "# The autograder: grader.check(...) below an answer runs its public tests.\n"
        f'import otter\n\ngrader = otter.Notebook("{stem}.ipynb")'
    )
    return [cell, start]


def requirements(*, lab: bool) -> str:
    """The autograder's requirements: helpers from this repository and what notebooks import.

    Versions are those of the book's ``requirements-book.txt`` and ``requirements.txt``; labs
    also need torch.
    """
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    pins = {
        re.split(r"[=<>;]", line)[0].strip(): line
        for name in ("requirements-book.txt", "requirements.txt")
        for line in (ROOT / name).read_text(encoding="utf-8").splitlines()
        if line and not line.startswith(("#", "-r"))
    }
    names = ["numpy", "matplotlib", "ipywidgets"] + (["torch"] if lab else [])
    lines = [f"gpu-book-helpers @ git+{config['repository']['url']}"]
    return "\n".join(lines + [pins[name] for name in names]) + "\n"


def build(path: Path, spec: dict, out: Path = OUT) -> Path:
    """Write the master notebook for ``path`` and run ``otter assign``; return the output folder."""
    folder = out / path.stem
    master = folder / "master" / f"{path.stem}.ipynb"
    master.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(master_notebook(path, spec), master)
    (master.parent / "requirements.txt").write_text(
        requirements(lab=path.parent.name == "labs"), encoding="utf-8"
    )
    dist = folder / "dist"
    shutil.rmtree(dist, ignore_errors=True)  # one autograder zip, not one per build
    from otter.assign import main as otter_assign  # slow to import: only when building

    cwd = Path.cwd()
    os.chdir(master.parent)  # otter resolves the config's requirements.txt from here
    try:
        otter_assign(str(master), str(dist))
    finally:
        os.chdir(cwd)
    return dist


def notebooks() -> list[Path]:
    """Every chapter and lab."""
    return sorted((ROOT / "chapters").glob("*.ipynb")) + sorted(
        (ROOT / "labs").glob("*.ipynb")
    )


if __name__ == "__main__":
    paths = [Path(p).resolve() for p in sys.argv[1:]] or notebooks()
    spec = load_spec()
    for nb_path in paths:
        print(f"wrote {build(nb_path, spec)}")
