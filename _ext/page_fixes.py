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

* sphinx-book-theme 1.3 (with pydata-sphinx-theme 0.17) renders each sidebar toggle twice: a
  hidden one in the site header and the visible one in the article header. Both themes bind
  their handlers to the *first* ``.primary-toggle``/``.secondary-toggle`` of the page
  (``document.querySelector``), the hidden one, so the visible hamburger and "Contents" buttons
  did nothing at any width and a phone reader could never open the table of contents.
  :data:`SIDEBAR_TOGGLES` forwards a click on any other toggle to the first one, whose handlers
  then open the sidebar dialog (narrow screens) or collapse the sidebar (wide screens). The empty
  site header the hidden buttons live in (a 64-px band with a second search box) is hidden by
  ``_static/book.css``; a hidden button still takes a forwarded click.

* A plot in a cell's output is an ``img`` a phone shows at the column's width. :data:`FULL_SIZE_FIGURES`
  links each one to its own file, so a tap opens it at full size (the drawn diagrams' ``{figure}``
  blocks carry a ``:target:`` of their own).

* The intro page is titled like the book, and its ``<title>`` read "GPU performance from first
  principles — GPU performance from first principles": such a title is cut to one (:func:`single_title`).

* Markup of the theme and of the extensions that axe-core (``tests/browser/test_accessibility.py``)
  flags as a serious WCAG 2.1 failure is corrected in the written pages: see :data:`MARKUP_FIXES`.

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

import re
from pathlib import Path
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


EQUATION_MIN_SCALE = 0.7
"""The smallest a wide display equation is scaled to on a narrow screen: 70 % of MathJax's size,
about 12 CSS px for body-size symbols (sub- and superscripts about 9 px), the smallest that reads."""

FIT_WIDE_CONTENT = """(() => {
  const MIN_SCALE = __MIN_SCALE__;
  const hint = (box, text) => {
    let note = box.previousElementSibling;
    if (!note || !note.classList.contains("scroll-hint")) {
      note = document.createElement("p");
      note.className = "scroll-hint";
      note.setAttribute("aria-hidden", "true");
      note.textContent = text;
      box.insertAdjacentElement("beforebegin", note);
    }
    return note;
  };
  const fitEquations = () => {
    for (const eq of document.querySelectorAll('mjx-container[display="true"]')) {
      eq.style.fontSize = "";
      const room = eq.clientWidth, need = eq.scrollWidth;
      if (!room || need <= room + 1) { eq.classList.remove("eq-scaled"); continue; }
      const scale = Math.max(MIN_SCALE, Math.floor((room / need) * 100) / 100);
      eq.style.fontSize = `${Math.round(scale * 100)}%`;
      eq.classList.add("eq-scaled");
    }
  };
  const WIDE = [
    [".pst-scrollable-table-container, div.cell_output div.output:has(> table)",
     "⇆ Wider than the page: scroll the table sideways for more columns."],
    ["div.cell_output:has(> a > img), div.cell_output:has(> img)",
     "⇆ Shown at full size so its text reads: scroll the plot sideways, or tap it to open it alone."],
  ];
  const markTables = () => {
    for (const [boxes, text] of WIDE) {
      for (const box of document.querySelectorAll(boxes)) {
        const wide = box.scrollWidth > box.clientWidth + 1;
        box.classList.toggle("is-wider", wide);
        if (wide) hint(box, text).hidden = false;
        const before = box.previousElementSibling;
        if (!wide && before && before.classList.contains("scroll-hint")) before.hidden = true;
      }
    }
  };
  const all = () => { fitEquations(); markTables(); };
  let timer = null;
  window.addEventListener("resize", () => { clearTimeout(timer); timer = setTimeout(all, 150); });
  document.addEventListener("DOMContentLoaded", () => {
    markTables();
    // a plot is only as wide as its image once the image has loaded
    for (const img of document.querySelectorAll("div.cell_output img")) {
      if (!img.complete) img.addEventListener("load", markTables, { once: true });
    }
  });
  window.addEventListener("load", () => {
    const mj = window["MathJax"];  // (not spelled as a MathJax configuration is)
    if (mj && mj.startup && mj.startup.promise) mj.startup.promise.then(all);
    else all();
  });
})();""".replace("__MIN_SCALE__", str(EQUATION_MIN_SCALE))
"""R4-4, R4-7, R4-5: a display equation wider than the column is scaled down to fit, to no less than
:data:`EQUATION_MIN_SCALE` of its size (below that it scrolls, with the edge shadow of
``_static/book.css``); a table wider than the column gets a visible "scroll sideways" line above it
(and keeps the shadow), and so does a plot, which on a phone is shown at its full size so that its
9-point text reads (``_static/book.css``). All are re-measured when the window is resized."""

FULL_SIZE_FIGURES = """document.addEventListener("DOMContentLoaded", () => {
  for (const img of document.querySelectorAll("div.cell_output img")) {
    if (img.closest("a")) continue;
    const link = document.createElement("a");
    link.href = img.getAttribute("src");
    link.className = "figure-full-size";
    img.replaceWith(link);
    link.appendChild(img);
  }
});"""
"""Wrap every output image in a link to its own file: a tap on a phone opens the plot at full size."""

SIDEBAR_TOGGLES = """document.addEventListener("click", (event) => {
  for (const kind of ["primary-toggle", "secondary-toggle"]) {
    const pressed = event.target.closest && event.target.closest("." + kind);
    const bound = document.querySelector("." + kind);
    if (pressed && bound && pressed !== bound) {
      event.preventDefault();
      event.stopPropagation();
      bound.click();
      return;
    }
  }
}, true);"""
"""Forward a click on a visible sidebar toggle to the one the themes bound their handlers to."""


MARKUP_FIXES: tuple[tuple[str, str, str], ...] = (
    (
        # pydata-sphinx-theme's search field shows "Search Ctrl+K" but is named "Search" only;
        # a speech-input user saying what they see would not reach it (WCAG 2.5.3 Label in Name).
        # Without the aria-label its name is its visible text.
        '<button class="btn search-button-field search-button__button pst-js-only" '
        'title="Search" aria-label="Search"',
        '<button class="btn search-button-field search-button__button pst-js-only" '
        'title="Search"',
        "search field named unlike its visible text",
    ),
    (
        # The theme switcher's icons carry titles ("Light", "Dark", "System Settings") that become
        # visible text missing from the button's name "Color mode" (2.5.3). The icons are
        # decorative: the button's name says what it does.
        '<i class="theme-switch fa-solid fa-sun                fa-lg" data-mode="light" '
        'title="Light"></i>',
        '<i class="theme-switch fa-solid fa-sun                fa-lg" data-mode="light" '
        'aria-hidden="true"></i>',
        "theme switcher icon with a title",
    ),
    (
        '<i class="theme-switch fa-solid fa-moon               fa-lg" data-mode="dark"  '
        'title="Dark"></i>',
        '<i class="theme-switch fa-solid fa-moon               fa-lg" data-mode="dark"  '
        'aria-hidden="true"></i>',
        "theme switcher icon with a title",
    ),
    (
        '<i class="theme-switch fa-solid fa-circle-half-stroke fa-lg" data-mode="auto"  '
        'title="System Settings"></i>',
        '<i class="theme-switch fa-solid fa-circle-half-stroke fa-lg" data-mode="auto"  '
        'aria-hidden="true"></i>',
        "theme switcher icon with a title",
    ),
    (
        # myst-nb's hidden-input toggle reads "Show code cell source" but is named "Toggle hidden
        # content" (2.5.3); without the aria-label its name is the visible text.
        '<summary aria-label="Toggle hidden content">',
        "<summary>",
        "code toggle named unlike its visible text",
    ),
    (
        # docutils marks each bibliography entry doc-biblioentry, a role ARIA 1.3 deprecates, inside
        # a role="list": the list then has no list items (WCAG 1.3.1 Info and Relationships).
        'class="citation" id="',
        'class="citation" role="listitem" id="',
        "bibliography entry outside a list item",
    ),
    (' role="doc-biblioentry"', "", "deprecated bibliography role"),
    (
        # pydata-sphinx-theme folds a sidebar entry's sub-pages (the API reference's module pages)
        # under a <summary> holding only a chevron icon: a button with no name (axe "summary-name").
        '<summary><span class="toctree-toggle" role="presentation">',
        '<summary aria-label="Show or hide the pages under this one">'
        '<span class="toctree-toggle" role="presentation">',
        "sidebar fold without a name",
    ),
    (
        # The primary sidebar holds the book's title link and search field outside any landmark,
        # so a screen reader's landmark list skips them (axe "region", moderate). The sidebar is
        # the book's navigation: its contents list is already a <nav> inside it.
        '<div id="pst-primary-sidebar" class="bd-sidebar-primary bd-sidebar">',
        '<div id="pst-primary-sidebar" class="bd-sidebar-primary bd-sidebar" '
        'role="navigation" aria-label="Book">',
        "sidebar content outside a landmark",
    ),
)
"""(markup as written, its fix, what was wrong), applied to every page the HTML builder wrote."""


def _fix_markup(app: Sphinx, exception: Exception | None) -> None:
    """Apply :data:`MARKUP_FIXES` to the book's written pages (not the JupyterLite site's)."""
    if exception is not None or app.builder.format != "html":
        return
    out = Path(app.outdir)
    for page in out.rglob("*.html"):
        if page.relative_to(out).parts[0] in {"lite", "_static", "_sources"}:
            continue
        html = page.read_text(encoding="utf-8")
        fixed = html
        for before, after, _ in MARKUP_FIXES:
            fixed = fixed.replace(before, after)
        fixed = single_title(fixed)
        if page.name != "search.html":
            fixed = _SEARCH_INDEX.sub("", fixed)
        if fixed != html:
            page.write_text(fixed, encoding="utf-8")


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


# pydata-sphinx-theme 0.17 loads the whole search index (about 230 KB) on every page, for a
# search-as-you-type the book does not enable: only the search page needs it (review R26).
_SEARCH_INDEX = re.compile(r'\s*<script src="(?:\.\./)*searchindex\.js"></script>')
_DOUBLED_TITLE = re.compile(r"<title>(?P<t>[^<]+?) &#8212; (?P=t)</title>")


def single_title(html: str) -> str:
    """``html`` with a ``<title>`` that repeats the book's title ("X — X") cut to "X"."""
    return _DOUBLED_TITLE.sub(r"<title>\g<t></title>", html)


def setup(app: Sphinx) -> dict[str, Any]:
    # Priority 100, ahead of the other handlers: the repeated scripts and the font
    # stylesheet are registered before any page is written, so they are already in
    # the lists; what later handlers add (MathJax) lands in the same lists, kept.
    # The maths mark must also come before sphinx.ext.mathjax's handler (priority 500).
    app.connect("html-page-context", _dedupe_scripts, priority=100)
    app.connect("html-page-context", _drop_remote_fonts, priority=100)
    app.connect("html-page-context", _mathjax_where_maths, priority=100)
    app.connect("html-page-context", _live_button_keys)
    app.connect("build-finished", _fix_markup)
    app.add_js_file(None, body=SIDEBAR_TOGGLES)
    app.add_js_file(None, body=FULL_SIZE_FIGURES)
    app.add_js_file(None, body=FIT_WIDE_CONTENT)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
