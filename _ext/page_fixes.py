"""Sphinx extension: fixes to the generated pages that readers' browsers would otherwise complain about.

* sphinx-thebe 0.3 registers its inline configuration script once per
  ``env-before-read-docs``, which Sphinx 7 can emit twice; the page then
  declares ``const THEBE_JS_URL`` twice and the browser throws a SyntaxError.
  We drop repeated scripts from every page.
* jupyterlite-sphinx links a Google Fonts stylesheet (the "Vibur" face of its
  try-it button) into every page: a third-party request on each page view
  for one button that the book's own CSS styles with the page font. We drop it.
"""

from __future__ import annotations

from typing import Any

from sphinx.application import Sphinx


def _dedupe_scripts(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    scripts = context.get("script_files")
    if not scripts:
        return
    seen: set[tuple[str, str]] = set()
    unique = []
    for script in scripts:
        # an inline script is registered with filename None by some extensions and '' by others
        key = (str(getattr(script, "filename", script) or ""), str(getattr(script, "attributes", {}).get("body", "")))
        if key in seen:
            continue
        seen.add(key)
        unique.append(script)
    context["script_files"] = unique


def _drop_remote_fonts(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    styles = context.get("css_files")
    if styles:
        context["css_files"] = [s for s in styles if "fonts.googleapis.com" not in str(getattr(s, "filename", s))]


def setup(app: Sphinx) -> dict[str, Any]:
    # priority 100: before any handler that returns a template name and so stops the event
    app.connect("html-page-context", _dedupe_scripts, priority=100)
    app.connect("html-page-context", _drop_remote_fonts, priority=100)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
