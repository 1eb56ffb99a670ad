"""Sphinx extension: what the printed edition (``make pdf``) does differently from the web.

* **Remote images, and the Colab badge, become their alt text.** The labs open with an "Open in
  Colab" badge, an image wrapped in a link: an SVG the book serves itself, which xelatex cannot
  include without a converter (and a remote image would be downloaded while the book builds, a
  warning each offline). On paper the link is what matters: each such image is replaced by its alt
  text, which keeps the enclosing link ("Open In Colab", clickable in the PDF).
* **Calculators print as their figure.** A calculator's static output is a plain-text note
  ("Calculator controls (run the notebook live to use them)"), its default figure and its summary.
  In print the note becomes one italic line and the figure is held to :data:`CALCULATOR_HEIGHT`,
  so that it sits directly under the note instead of jumping to the next page and leaving half a
  page blank.
* **Lab steps are not numbered twice.** The labs' sections are titled "1. Predict", "2b. Profile
  one bottleneck"; LaTeX numbers every section of a chapter, which printed "12.4 2b. Profile...".
  In print the leading step number goes, and LaTeX's number stays.
* **The API reference is a short index.** On the web each function's docstring is one click from
  the notation table; in print the reference filled about a quarter of the book. The printed
  appendix keeps each module's description and each object's signature (so every cross-reference
  still lands), drops the docstrings, and points to the web edition for them.
"""

from __future__ import annotations

import re
from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.transforms.post_transforms.images import ImageDownloader

CALCULATOR_NOTE = "Calculator controls (run the notebook live to use them)"
"""The text a calculator's static output shows in place of its controls (``helpers.widgets``)."""
PRINTED_NOTE = (
    "Calculator: its default view, printed. Run the notebook to change its inputs."
)
CALCULATOR_HEIGHT = "8cm"
"""The printed height of a calculator's figure: with its note and summary it fits a half page."""
LAB_STEP = re.compile(r"^\d+[a-z]?\.\s+")
"""A lab section's step number, "1. " or "2b. "."""
API_DOC = "appendix/api"


BADGE_FILE = "colab-badge.svg"
"""The labs' Colab badge, served by the book (``_static/``): an SVG, which xelatex cannot include."""


class RemoteImageAsText(SphinxPostTransform):
    """Replace each remote image, and the Colab badge, with its alt text (before Sphinx would
    download it or look for a printable version)."""

    default_priority = ImageDownloader.default_priority - 1
    builders = ("latex",)

    def run(self, **kwargs: Any) -> None:
        for image in list(self.document.findall(nodes.image)):
            uri = image["uri"]
            if "://" in uri or uri.rsplit("/", 1)[-1] == BADGE_FILE:
                image.replace_self(nodes.Text(image.get("alt") or uri))


class CalculatorAsFigure(SphinxPostTransform):
    """Print each calculator's note as one italic line and hold its figure to a half page."""

    default_priority = 400
    builders = ("latex",)

    def run(self, **kwargs: Any) -> None:
        for block in list(self.document.findall(nodes.literal_block)):
            if block.astext().strip() != CALCULATOR_NOTE or block.parent is None:
                continue
            parent = block.parent
            for sibling in parent.children[parent.index(block) + 1 :]:
                for image in sibling.findall(nodes.image):
                    image["height"] = CALCULATOR_HEIGHT
                    for option in ("width", "scale"):
                        if option in image:
                            del image[option]
            block.replace_self(
                nodes.paragraph("", "", nodes.emphasis(PRINTED_NOTE, PRINTED_NOTE))
            )


def strip_lab_steps(document: nodes.Element) -> None:
    """Drop the step number from each section title of a lab ("2b. Profile" -> "Profile")."""
    for section in document.findall(nodes.section):
        title = section.next_node(nodes.title)
        if title is None or not title.children:
            continue
        first = title.children[0]
        if isinstance(first, nodes.Text) and LAB_STEP.match(first.astext()):
            first.parent.replace(first, nodes.Text(LAB_STEP.sub("", first.astext(), 1)))


def shorten_api(document: nodes.Element, online: str) -> None:
    """Keep the API reference's module descriptions and signatures (a class's methods' too);
    drop every docstring."""
    for content in list(document.findall(addnodes.desc_content)):
        members = [
            child for child in content.children if isinstance(child, addnodes.desc)
        ]
        if members:
            content.children = []
            content.extend(members)
        else:
            content.parent.remove(content)
    first = document.next_node(nodes.section)
    if first is None:
        return
    text = (
        "This printed appendix lists each module and the signature of each function and class; "
        "their documentation (parameters, units, sources, examples) is in the web edition"
    )
    para = nodes.paragraph("", text)
    if online:
        para += nodes.Text(": ")
        para += nodes.reference(online, online, refuri=online)
    para += nodes.Text(".")
    title = first.next_node(nodes.title)
    first.insert(first.index(title) + 1 if title is not None else 0, para)


def _doctree_resolved(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """Apply the print-only edits to each page of the book's one LaTeX tree.

    The LaTeX builder resolves the whole book as one tree, each page in a ``start_of_file`` node
    naming it (``docname`` is then the root page's).
    """
    if app.builder.format != "latex":
        return
    pages = [
        (node["docname"], node) for node in doctree.findall(addnodes.start_of_file)
    ]
    for name, tree in pages or [(docname, doctree)]:
        if name.startswith("labs/"):
            strip_lab_steps(tree)
        elif name == API_DOC or name.startswith(f"{API_DOC}/"):
            base = (app.config.html_baseurl or "").rstrip("/")
            shorten_api(tree, f"{base}/{name}.html" if base else "")


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the print-only transforms (they run for the LaTeX builder only)."""
    app.add_post_transform(RemoteImageAsText)
    app.add_post_transform(CalculatorAsFigure)
    app.connect("doctree-resolved", _doctree_resolved)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
