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
