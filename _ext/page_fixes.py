"""Sphinx extension: fixes to the generated pages that readers' browsers would otherwise complain about.

* sphinx-thebe 0.3 registers its inline configuration script once per
  ``env-before-read-docs``, which Sphinx 7 can emit twice; the page then
  declares ``const THEBE_JS_URL`` twice and the browser throws a SyntaxError.
  We drop repeated scripts from every page.
* jupyterlite-sphinx links a Google Fonts stylesheet (the "Vibur" face of its
  try-it button) into every page: a third-party request on each page view
  for one button that the book's own CSS styles with the page font. We drop it.
* Sphinx loads MathJax only on pages its math domain saw maths in when it read
  them. A page that receives maths later, when its doctree is resolved (the
  exercise index copies each question, formulas included, from its page), would
  show them as raw LaTeX. Any page whose final doctree holds maths is marked as
  having equations before ``sphinx.ext.mathjax`` decides.
* jupyterlite-sphinx's live ("try it") button is a ``div`` that only a mouse
  can press. On the pages that have one, a small script makes it a button for
  the keyboard and screen readers: focusable, announced as a button, pressed
  with Enter or Space.

The first two fixes edit the page's ``script_files`` and ``css_files`` lists in
place. Those lists are the HTML builder's own: handlers of the same
``html-page-context`` event add their page's assets to them through the builder
(``sphinx.ext.mathjax`` adds MathJax there on the pages that hold maths, and the
last fix its script on the pages with a live button). Putting a new list in the
page context instead would detach the page from the builder's list, and every
asset added after us would silently never reach the page (as MathJax once did
not: every formula showed as raw LaTeX).
"""

from __future__ import annotations

from typing import Any, cast

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.builders.html import StandaloneHTMLBuilder

LIVE_BUTTON = "jupyterlite_sphinx_try_it_button"
# Pressing the button is a click, which its container's onclick handler turns into the live notebook.
_LIVE_BUTTON_KEYS = f"""document.addEventListener("DOMContentLoaded", () => {{
  for (const button of document.querySelectorAll(".{LIVE_BUTTON}")) {{
    button.setAttribute("role", "button");
    button.tabIndex = 0;
    button.addEventListener("keydown", (event) => {{
      if (event.key === "Enter" || event.key === " ") {{
        event.preventDefault();
        button.click();
      }}
    }});
  }}
}});"""


def _dedupe_scripts(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    """Drop every script that repeats an earlier one (same file, or same inline body), in place."""
    scripts = context.get("script_files")
    if not scripts:
        return
    seen: set[tuple[str, str]] = set()
    unique = []
    for script in scripts:
        # an inline script is registered with filename None by some extensions and '' by others
        key = (
            str(getattr(script, "filename", script) or ""),
            str(getattr(script, "attributes", {}).get("body", "")),
        )
        if key in seen:
            continue
        seen.add(key)
        unique.append(script)
    scripts[:] = unique


def _drop_remote_fonts(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    """Drop the Google Fonts stylesheet from the page's stylesheets, in place."""
    styles = context.get("css_files")
    if styles:
        styles[:] = [
            s
            for s in styles
            if "fonts.googleapis.com" not in str(getattr(s, "filename", s))
        ]


def _mathjax_where_maths(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    """Mark the page as having equations if its final doctree holds maths, so it gets MathJax."""
    if isinstance(doctree, nodes.document) and any(
        doctree.findall(lambda node: isinstance(node, (nodes.math, nodes.math_block)))
    ):
        app.env.get_domain("math").data["has_equations"][pagename] = True


def _live_button_keys(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    """On a page with a live button, add the script that lets the keyboard press it."""
    if LIVE_BUTTON in context.get("body", ""):
        # through the builder, for this page only (the builder resets its list for the next page)
        cast(StandaloneHTMLBuilder, app.builder).add_js_file("", body=_LIVE_BUTTON_KEYS)


def setup(app: Sphinx) -> dict[str, Any]:
    # Priority 100, ahead of the other handlers: the repeated scripts and the font
    # stylesheet are registered before any page is written, so they are already in
    # the lists; what later handlers add (MathJax) lands in the same lists, kept.
    # The maths mark must also come before sphinx.ext.mathjax's handler (priority 500).
    app.connect("html-page-context", _dedupe_scripts, priority=100)
    app.connect("html-page-context", _drop_remote_fonts, priority=100)
    app.connect("html-page-context", _mathjax_where_maths, priority=100)
    app.connect("html-page-context", _live_button_keys)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
