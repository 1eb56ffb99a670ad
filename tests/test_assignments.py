"""The otter-grader assignments built by ``tools/assignments.py`` (``make assignments``).

Derived from the notebooks at test time, keyed on exercise labels: every exercise
becomes exactly one question; those with an ``exercises.check`` cell are autograded
(unless ``assignments/spec.yml`` sends them to hand grading) and their hidden test
accepts the book's answer and rejects a unit slip, a bits-for-bytes slip and a blank,
with the book's message. The hand arithmetic in spec.yml must pass those tests.

The end-to-end check runs otter itself (``otter assign``, then ``otter run`` without
Docker) on Chapter 4, the README's worked example: the solutions notebook gets full
marks, the untouched student notebook zero on every autograded question, and a unit
slip zero with a message that names the units. It takes a few minutes, so it runs in
``make test-teaching`` (``TEST_TEACHING=1``), not in the unit-test stage.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tools import assignments  # noqa: E402

SPEC = assignments.load_spec()
NOTEBOOKS = assignments.notebooks()
_EXERCISE = re.compile(r"\{exercise\}[^\n]*\n(?::[a-z]+:[^\n]*\n)*?:label:\s*(\S+)")


def _labels(path: Path) -> tuple[list[str], set[str]]:
    """Exercise labels in order, and those followed (before the next one) by a check cell."""
    labels: list[str] = []
    checked: set[str] = set()
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type == "markdown":
            labels += _EXERCISE.findall(cell.source)
        elif "exercises.check(" in cell.source and labels:
            checked.add(labels[-1])
    return labels, checked


def _question_configs(master: nbformat.NotebookNode) -> list[dict]:
    import yaml

    return [
        yaml.safe_load(c.source.split("\n", 1)[1])
        for c in master.cells
        if c.cell_type == "raw" and c.source.startswith("# BEGIN QUESTION")
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_exercise_is_one_question(path):
    """Each labelled exercise is one question; autograded exactly when the book checks it."""
    labels, checked = _labels(path)
    master = assignments.master_notebook(path, SPEC)
    configs = _question_configs(master)
    assert [c["name"] for c in configs] == labels
    auto = {c["name"] for c in configs if not c.get("manual")}
    assert auto == checked - set(SPEC["manual"])
    raw = [c.source.split("\n")[0] for c in master.cells if c.cell_type == "raw"]
    assert raw.count("# BEGIN QUESTION") == raw.count("# END QUESTION") == len(labels)
    # no MyST solution left outside otter's solution blocks
    for cell in master.cells:
        if cell.cell_type == "markdown":
            assert "{solution}" not in cell.source


def test_spec_names_real_autograded_exercises():
    """spec.yml's answers and hand-graded overrides refer to exercises the book checks."""
    checked = set().union(*(_labels(p)[1] for p in NOTEBOOKS))
    assert set(SPEC["answers"]) <= checked
    assert set(SPEC["manual"]) <= checked
    assert not set(SPEC["answers"]) & set(SPEC["manual"])


def _hidden_tests():
    """(question, test function, its parameters, notebook) for every autograded question."""
    cases = []
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        for q in assignments.questions(nb):
            if q.check is None or q.label in SPEC["manual"]:
                continue
            source = assignments.test_source(q, hidden=True)
            env: dict = {}
            exec(source.split("# END TEST CONFIG\n", 1)[1], env)
            func = next(v for k, v in env.items() if k.startswith("test_"))
            names = func.__code__.co_varnames[: func.__code__.co_argcount]
            cases.append(pytest.param(q, func, names, nb, id=q.label))
    return cases


def _grading_env(names, question, nb) -> dict:
    """What the hidden test's parameters are bound to when otter runs it in the student's
    notebook: a helpers module, or (ch1-q3, ch11-q1, lab6-q2) a variable of the notebook, as the
    notebook's own statements compute it (``assignments.notebook_state``)."""
    env = {}
    state = None
    for name in names:
        if name == "answer":
            continue
        try:
            env[name] = importlib.import_module(f"helpers.{name}")
        except ModuleNotFoundError:
            if state is None:
                state = assignments.notebook_state(nb, question)
            env[name] = state[name]
    return env


@pytest.mark.parametrize("question, func, names, nb", _hidden_tests())
def test_hidden_test_grades_like_the_book(question, func, names, nb):
    """The book's value and spec.yml's hand arithmetic pass; a blank, a unit slip and bits
    for bytes fail, each with a message that tells the student what to fix."""
    env = _grading_env(names, question, nb)
    scope = dict(env)
    for line in [*question.check.imports, *question.check.preamble]:
        exec(line, scope)
    expected = eval(question.check.expected, scope)

    def grade(answer):
        func(**{n: (answer if n == "answer" else env[n]) for n in names})

    grade(expected)
    if question.label in SPEC["answers"]:
        grade(eval(str(SPEC["answers"][question.label])))
    with pytest.raises(AssertionError, match="Not checked"):
        grade(...)
    with pytest.raises(AssertionError, match="off by a factor 10\\^3. Check the units"):
        grade(expected * 1000)
    with pytest.raises(AssertionError, match="Not yet: .* too high"):
        grade(expected * 8)


def test_public_test_gives_nothing_away():
    """The visible test only asks for a number: it passes any number, right or wrong."""
    q = next(
        q
        for q in assignments.questions(nbformat.read(NOTEBOOKS[0], as_version=4))
        if q.check is not None
    )
    env: dict = {}
    exec(assignments.test_source(q, hidden=False).split("CONFIG\n", 2)[2], env)
    func = next(v for k, v in env.items() if k.startswith("test_"))
    func(answer=12345.0)
    with pytest.raises(AssertionError, match="as a number"):
        func(answer=...)


def _otter_run(zip_path: Path, notebook: Path, out: Path) -> dict[str, dict]:
    out.mkdir(parents=True)
    subprocess.run(
        [sys.executable, "-m", "otter", "run", "--no-logo", "-a", str(zip_path)]
        + ["-o", str(out), str(notebook)],
        check=True,
        capture_output=True,
    )
    results = json.loads((out / "results.json").read_text())
    return {t["name"]: t for t in results["tests"] if t["name"] != "Public Tests"}


@pytest.mark.slow
@pytest.mark.skipif(
    os.environ.get("TEST_TEACHING") != "1",
    reason="runs otter on a chapter (minutes): make test-teaching",
)
def test_otter_grades_chapter_3(tmp_path):
    """otter assign + otter run (no Docker): solutions full marks, blank student zero,
    a unit slip zero with a message about units."""
    path = ROOT / "chapters" / "04_batching.ipynb"
    dist = assignments.build(path, SPEC, out=tmp_path)
    (zip_path,) = (dist / "autograder").glob("*-autograder_*.zip")
    labels, checked = _labels(path)
    auto = checked - set(SPEC["manual"])
    assert auto, "chapter 4 has no autograded question"

    solved = _otter_run(zip_path, dist / "autograder" / path.name, tmp_path / "sol")
    assert set(solved) == auto
    assert all(t["score"] == t["max_score"] > 0 for t in solved.values()), solved

    student_nb = dist / "student" / path.name
    blank = _otter_run(zip_path, student_nb, tmp_path / "blank")
    assert set(blank) == auto
    assert all(t["score"] == 0 for t in blank.values()), blank
    text = student_nb.read_text(encoding="utf-8")
    assert "# SOLUTION" not in text and "{solution}" not in text

    # a unit slip in every autograded answer: the worked answer times 1,000
    nb = nbformat.read(student_nb, as_version=4)
    answer_cell = None
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        if "otter_answer_cell" in cell.metadata.get("tags", []):
            answer_cell = cell
        elif (
            check := re.match(r'grader\.check\("([^"]+)"\)', cell.source)
        ) and answer_cell:
            worked = SPEC["answers"][check.group(1)]
            answer_cell.source = answer_cell.source.replace(
                "answer = ...", f"answer = ({worked}) * 1e3"
            )
            answer_cell = None
    slipped_nb = tmp_path / "slip" / path.name
    slipped_nb.parent.mkdir()
    nbformat.write(nb, slipped_nb)
    slipped = _otter_run(zip_path, slipped_nb, tmp_path / "slip-out")
    for result in slipped.values():
        assert result["score"] == 0, result
        assert "Check the units" in result["output"], result["output"]


def test_notebook_state_runs_only_the_statements_the_test_needs():
    """The backward slice binds the check's variables from the notebook's own statements, skips
    IPython lines and statements it does not need (one that would raise is never run)."""
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("if False:\n    %pip install nothing\nn = 3"),
            nbformat.v4.new_code_cell("unused = 1 / 0\nsize = n * 4"),
            nbformat.v4.new_markdown_cell("```{exercise}\n:label: t-q1\nAsk.\n```"),
            nbformat.v4.new_code_cell(
                "answer = None  # your answer\n"
                "print(exercises.check(answer, size * 2, rel_tol=0.01))"
            ),
        ]
    )
    (question,) = assignments.questions(nb)
    state = assignments.notebook_state(nb, question)
    assert state["size"] == 12 and state["n"] == 3 and "unused" not in state
