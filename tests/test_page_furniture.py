"""Page furniture of every chapter: an objectives box under the title, a drawn diagram, no visible plumbing."""

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))
SVG = "{http://www.w3.org/2000/svg}"


def _cells(path):
    return json.loads(path.read_text())["cells"]


def _src(cell):
    return "".join(cell["source"])


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_objectives_box_follows_the_title(path):
    """The cell after the title is the objectives box, with what the reader will do and what they need."""
    cells = _cells(path)
    assert _src(cells[0]).startswith("# ")
    box = _src(cells[1])
    assert box.startswith("```{admonition} In this chapter")
    assert "You will be able to" in box and "**You need:**" in box
    assert 3 <= len(re.findall(r"^- ", box, re.M)) <= 4, "3 or 4 objectives"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_chapter_has_a_drawn_diagram_with_alt_text(path):
    """At least one {figure} of a committed SVG (and its PNG for the PDF), with a sentence of alt text and a caption."""
    figures = re.findall(
        r"```\{figure\} figures/(\S+)\.\*\n:alt: (.+)\n:name: \S+\n:target: \S+\n\n(.+)\n```",
        "\n".join(_src(c) for c in _cells(path) if c["cell_type"] == "markdown"),
    )
    assert figures, f"{path.name}: no drawn diagram"
    for name, alt, caption in figures:
        assert (ROOT / "chapters" / "figures" / f"{name}.svg").is_file()
        assert (ROOT / "chapters" / "figures" / f"{name}.png").is_file()
        assert len(alt.split()) >= 12 and alt.endswith("."), alt
        assert caption.strip()


@pytest.mark.parametrize(
    "svg", sorted((ROOT / "chapters" / "figures").glob("*.svg")), ids=lambda p: p.name
)
def test_diagram_scales_and_describes_itself(svg):
    """Each SVG has a viewBox (it scales to a phone), a white background (dark mode), a <title> and a <desc>,
    and no text smaller than 12 px at its natural width."""
    root = ET.parse(svg).getroot()
    assert root.get("viewBox"), "no viewBox"
    assert root.find(f"{SVG}title") is not None and root.find(f"{SVG}desc") is not None
    assert len(root.find(f"{SVG}desc").text.split()) >= 20
    style = root.find(f"{SVG}style").text
    sizes = [float(s) for s in re.findall(r"font-size:\s*([\d.]+)px", style)]
    sizes += [
        float(s)
        for el in root.iter()
        for s in re.findall(r"font-size:\s*([\d.]+)px", el.get("style", ""))
    ]
    assert sizes and min(sizes) >= 12
    assert any(
        el.tag == f"{SVG}rect" and el.get("fill") == "#fff" and el.get("x") == "0"
        for el in root
    ), "no white background"


PLUMBING = re.compile(r"Markdown\(\s*f?[\"']|markdown_table\(|rows\.append\(")
HIDDEN = {"hide-input", "remove-input", "remove-cell", "hide-cell"}


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_no_visible_cell_only_formats_prose_or_tables(path):
    """A code cell that builds Markdown or a table (the page's plumbing) is hidden, so the visible code teaches."""
    visible = [
        i
        for i, c in enumerate(_cells(path))
        if c["cell_type"] == "code"
        and PLUMBING.search(_src(c))
        and not HIDDEN & set(c.get("metadata", {}).get("tags", []))
    ]
    assert visible == [], f"{path.name}: visible plumbing in cells {visible}"
