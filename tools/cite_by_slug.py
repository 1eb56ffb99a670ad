"""Rewrite "Chapter 7" in helpers' docstrings and comments as "Chapter ``transfer_or_recompute``".

Code cites the book's chapters by slug (the chapter's file name in ``_toc.yml`` without its
number), because numbers change when chapters are added or reordered; ``tests/test_docs.py``
fails on a number left in a docstring or comment. Only docstrings (and attribute docstrings)
and comments are edited, never a string the code prints: a reader of the book sees numbers.

    python tools/cite_by_slug.py           # rewrite helpers/ in place, listing what changed
    python tools/cite_by_slug.py --check   # list only; exit 1 if anything would change
"""

from __future__ import annotations

import ast
import io
import re
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CITE = re.compile(
    r"\b([Cc]hapters?|[Cc]h\.) ?(\d+(?:(?:, | and | to | or |-|–)\d+)*)\b"
)


def slugs_by_number(toc: str) -> dict[int, str]:
    """``{7: "transfer_or_recompute", ...}`` from ``_toc.yml``'s ``chapters/NN_slug`` lines."""
    return {int(n): s for n, s in re.findall(r"file: chapters/(\d+)_(\w+)", toc)}


def cite(text: str, slugs: dict[int, str]) -> str:
    """``text`` with each chapter number cited by its slug (ranges and lists too)."""

    def one(m: re.Match[str]) -> str:
        word = m.group(1)
        if word.lower().startswith("ch."):
            word = "chapter"
        parts = re.split(r"(, | and | to | or |-|–)", m.group(2))
        out = []
        for part in parts:
            if part.isdigit():
                if int(part) not in slugs:
                    return m.group(0)
                out.append(f"``{slugs[int(part)]}``")
            else:
                out.append(" to " if part in "-–" else part)
        return f"{word} {''.join(out)}"

    return CITE.sub(one, text)


def rewrite(path: Path, slugs: dict[int, str]) -> str:
    """The file's text with its docstrings' and comments' chapter numbers cited by slug."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    spans: set[int] = set()  # 0-based lines wholly inside a docstring
    for node in ast.walk(ast.parse(text)):
        value = getattr(node, "value", None)
        if isinstance(node, ast.Expr) and isinstance(value, ast.Constant):
            if isinstance(value.value, str):
                spans.update(range(node.lineno - 1, node.end_lineno or node.lineno))
    comments = {
        t.start[0] - 1: t.start[1]
        for t in tokenize.generate_tokens(io.StringIO(text).readline)
        if t.type == tokenize.COMMENT
    }
    for i, line in enumerate(lines):
        if i in spans:
            lines[i] = cite(line, slugs)
        elif i in comments:
            col = comments[i]
            lines[i] = line[:col] + cite(line[col:], slugs)
    return "".join(lines)


def main(argv: list[str]) -> int:
    slugs = slugs_by_number((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    changed = []
    for path in sorted((ROOT / "helpers").rglob("*.py")):
        new = rewrite(path, slugs)
        if new != path.read_text(encoding="utf-8"):
            changed.append(path.relative_to(ROOT))
            if "--check" not in argv:
                path.write_text(new, encoding="utf-8")
    for path in changed:
        print(path)
    return 1 if changed and "--check" in argv else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
