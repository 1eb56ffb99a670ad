"""Sphinx extension: a remote image in the printed edition becomes its alt text.

The labs open with an "Open in Colab" badge, an image on colab.research.google.com wrapped in a
link. Sphinx's LaTeX builder would download every remote image while it builds (a network request
per badge, a warning per badge offline) and print the badge, an SVG xelatex cannot include without a
converter. On paper the link is what matters: each remote image is replaced by its alt text, which
keeps the enclosing link ("Open In Colab", clickable in the PDF).
"""

from __future__ import annotations

from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.transforms.post_transforms.images import ImageDownloader


class RemoteImageAsText(SphinxPostTransform):
    """Replace each remote image with its alt text (before Sphinx would download it)."""

    default_priority = ImageDownloader.default_priority - 1
    builders = ("latex",)

    def run(self, **kwargs: Any) -> None:
        for image in list(self.document.findall(nodes.image)):
            uri = image["uri"]
            if "://" in uri:
                image.replace_self(nodes.Text(image.get("alt") or uri))


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the post-transform (it runs for the LaTeX builder only)."""
    app.add_post_transform(RemoteImageAsText)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
