"""Sphinx extension: the ``{roadmap}`` directive, the landing page's chapter-by-chapter map (R4-11).

One row per chapter and lab of ``_toc.yml``, in its order, read from the notebooks themselves so the
map never drifts from the book (a chapter added to the table of contents, such as Chapter 13,
appears on the next build):

* the chapter's title, linked;
* what the reader will be able to do: the first item of its "You will be able to" list;
* what it needs: its "**You need:**" line, links reduced to their text;
* a reading time: the words of its prose and generated text at :data:`WORDS_PER_MINUTE`
  (code, exercises and solutions not counted), rounded to 5 minutes.

Parts get their own heading row. The directive writes MyST Markdown and parses it, so links
resolve like any other.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml
from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

WORDS_PER_MINUTE = 200
"""Reading speed for the map's times (myst-parser's own default for its reading-time estimate)."""

_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_FENCED = re.compile(r"(?ms)^(`{3,}|:{3,})\{(exercise|solution)\}.*?^\1[ \t]*$")


def _text(source: Any) -> str:
    return "".join(source) if isinstance(source, list) else str(source)


def chapter_facts(path: Path) -> dict[str, Any]:
    """Title, first objective, prerequisites and minutes of reading of the notebook at ``path``."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    prose: list[str] = []
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "markdown":
            prose.append(_text(cell.get("source", "")))
        for output in cell.get("outputs", []):
            markdown = output.get("data", {}).get("text/markdown")
            if markdown:
                prose.append(_text(markdown))
    text = "\n".join(prose)
    title = re.search(r"(?m)^#\s+(.+)$", text)
    goals = re.search(r"\*\*You will be able to\*\*\s*\n\s*\n?\s*[-*]\s+(.+)", text)
    needs = re.search(
        r"(?s)\*\*You need:?\*\*:?\s*(.+?)(?:\n\s*\n|\n`{3}|\n:{3}|$)", text
    )
    lab_of = ""
    if not goals and title:
        # a lab: the chapter whose prediction it measures, named first in its opening prose
        mention = re.search(r"Chapter (\d+)", text[title.end() :])
        lab_of = f"Chapter {mention.group(1)}" if mention else ""
        goals_text = (
            f"measure what {lab_of} predicts, on your own device" if lab_of else ""
        )
    else:
        goals_text = goals.group(1) if goals else ""
    words = len(re.findall(r"[A-Za-z0-9]+", _FENCED.sub("", text)))
    return {
        "title": title.group(1).strip() if title else path.stem,
        "goal": " ".join(_LINK.sub(r"\1", goals_text).split()).rstrip(";.,"),
        "needs": " ".join(_LINK.sub(r"\1", needs.group(1)).split()).rstrip(".")
        if needs
        else (f"{lab_of}; a GPU on Colab (a free T4), or a CPU" if lab_of else ""),
        "minutes": max(5, 5 * round(words / WORDS_PER_MINUTE / 5)),
        "words": words,
    }


def roadmap_markdown(root: Path) -> str:
    """The map as a MyST Markdown table, from ``root``'s ``_toc.yml`` and notebooks."""
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    rows = [
        "| | What you will be able to do | You need | Reading |",
        "|---|---|---|---:|",
    ]
    number = 0
    for part in toc.get("parts", []):
        numbered = bool(part.get("numbered"))
        entries = [e for e in part.get("chapters", []) if "file" in e]
        notebooks = [root / f"{e['file']}.ipynb" for e in entries]
        notebooks = [p for p in notebooks if p.exists()]
        if not notebooks or not any(
            p.parts[-2] in {"chapters", "labs"} for p in notebooks
        ):
            continue
        rows.append(f"| **{part.get('caption', '')}** | | | |")
        for path in notebooks:
            facts = chapter_facts(path)
            if numbered:
                number += 1
                label = f"{number}. {facts['title']}"
            else:
                label = facts["title"]
            link = f"[{label}]({path.relative_to(root).as_posix()})"
            cells = [
                link,
                facts["goal"],
                facts["needs"] or "—",
                f"{facts['minutes']} min",
            ]
            rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows)


class Roadmap(SphinxDirective):
    """``{roadmap}``: the chapter map (no arguments, no content)."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        root = Path(self.env.srcdir)
        self.env.note_dependency(str(root / "_toc.yml"))
        for path in sorted((root / "chapters").glob("*.ipynb")) + sorted(
            (root / "labs").glob("*.ipynb")
        ):
            self.env.note_dependency(str(path))
        container = nodes.container(classes=["roadmap"])
        self.state.nested_parse(
            StringList(roadmap_markdown(root).split("\n")),
            self.content_offset,
            container,
        )
        return [container]


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("roadmap", Roadmap)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
