"""In the PDF, a remote image (the labs' Colab badge) becomes its alt text (``_ext/print_edition.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

from docutils import nodes
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Parser
from docutils.utils import new_document

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))

from print_edition import RemoteImageAsText  # noqa: E402

BADGE = "https://colab.research.google.com/assets/colab-badge.svg"


def test_remote_image_becomes_its_alt_text_inside_its_link_and_local_images_stay():
    doc = new_document("lab", get_default_settings(Parser))
    link = nodes.reference(
        "", "", refuri="https://colab.research.google.com/github/x.ipynb"
    )
    link += nodes.image(uri=BADGE, alt="Open In Colab")
    doc += nodes.paragraph("", "", link)
    doc += nodes.image(uri="_images/figure.png", alt="A figure")
    RemoteImageAsText(doc).run()
    assert [i["uri"] for i in doc.findall(nodes.image)] == ["_images/figure.png"]
    assert link.astext() == "Open In Colab"


def test_remote_image_without_alt_text_shows_its_address():
    doc = new_document("lab", get_default_settings(Parser))
    doc += nodes.image(uri=BADGE)
    RemoteImageAsText(doc).run()
    assert doc.astext() == BADGE


def test_calculator_note_becomes_a_line_and_its_figure_a_half_page():
    """The calculator's plain-text note is replaced by one italic line; the figure after it gets
    the printed height and loses any width; another literal block and image stay as they are."""
    from print_edition import (
        CALCULATOR_HEIGHT,
        CALCULATOR_NOTE,
        PRINTED_NOTE,
        CalculatorAsFigure,
    )

    doc = new_document("chapter", get_default_settings(Parser))
    output = nodes.container()
    output += nodes.literal_block(CALCULATOR_NOTE, CALCULATOR_NOTE)
    output += nodes.image(uri="_images/calc.png", width="600px")
    doc += output
    other = nodes.container()
    other += nodes.literal_block("print(1)", "print(1)")
    other += nodes.image(uri="_images/plot.png")
    doc += other
    CalculatorAsFigure(doc).run()
    calc, plot = list(doc.findall(nodes.image))
    assert calc["height"] == CALCULATOR_HEIGHT and "width" not in calc
    assert "height" not in plot
    assert [b.astext() for b in doc.findall(nodes.literal_block)] == ["print(1)"]
    assert PRINTED_NOTE in doc.astext()


def test_lab_steps_lose_their_number_and_other_titles_stay():
    """ "2b. Profile one bottleneck" prints as "Profile one bottleneck"; "Lab 1: ..." and a title
    with a number inside it are untouched."""
    from print_edition import strip_lab_steps

    doc = new_document("lab", get_default_settings(Parser))
    titles = [
        "Lab 1: Measure your roofline",
        "2b. Profile one bottleneck",
        "1. Predict",
        "Step 3.5 of it",
    ]
    for text in titles:
        section = nodes.section()
        section += nodes.title(text, text)
        doc += section
    strip_lab_steps(doc)
    assert [t.astext() for t in doc.findall(nodes.title)] == [
        "Lab 1: Measure your roofline",
        "Profile one bottleneck",
        "Predict",
        "Step 3.5 of it",
    ]


def test_api_reference_keeps_signatures_and_drops_docstrings():
    """Each object's signature (and so its cross-reference target) stays; its docstring goes; a
    note points to the web edition."""
    from print_edition import shorten_api
    from sphinx import addnodes

    doc = new_document("api", get_default_settings(Parser))
    section = nodes.section()
    section += nodes.title("API reference", "API reference")
    desc = addnodes.desc()
    desc += addnodes.desc_signature(
        "time", "time(op, acc)", ids=["helpers.roofline.time"]
    )
    content = addnodes.desc_content()
    content += nodes.paragraph("", "A long docstring.")
    desc += content
    section += desc
    doc += section
    method = addnodes.desc()
    method += addnodes.desc_signature(
        "prefill", "prefill(x)", ids=["helpers.roofline.Model.prefill"]
    )
    inner = addnodes.desc_content()
    inner += nodes.paragraph("", "The method's docstring.")
    method += inner
    content += method
    shorten_api(doc, "https://example.org/appendix/api.html")
    # a class's methods keep their signatures (cross-references to them still land)
    assert (
        "prefill(x)" in doc.astext() and "The method's docstring." not in doc.astext()
    )
    text = doc.astext()
    assert "time(op, acc)" in text and "A long docstring." not in text
    assert "https://example.org/appendix/api.html" in text
    assert any(
        "helpers.roofline.time" in n["ids"]
        for n in doc.findall(addnodes.desc_signature)
    )


def test_local_colab_badge_prints_as_its_alt_text():
    """The badge the book serves itself (an SVG xelatex cannot include) prints as its link text."""
    doc = new_document("lab", get_default_settings(Parser))
    link = nodes.reference(
        "", "", refuri="https://colab.research.google.com/github/x.ipynb"
    )
    link += nodes.image(uri="_static/colab-badge.svg", alt="Open In Colab")
    doc += nodes.paragraph("", "", link)
    RemoteImageAsText(doc).run()
    assert not list(doc.findall(nodes.image)) and link.astext() == "Open In Colab"
