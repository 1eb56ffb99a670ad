"""Every script and stylesheet the book's extensions add reaches the pages that need it, and works there.

An extension adds its assets to the HTML builder while the page is written
(MathJax on the pages that hold maths) or for every page (sphinx-thebe,
sphinx-togglebutton, sphinx-exercise, jupyterlite-sphinx). A page hook that
mishandles the page's asset lists can drop them silently, as ``page_fixes``
once dropped MathJax from every page. The built HTML is read here for each
extension's ``<script src>`` and ``<link href>`` on the pages whose content
needs them; in Chromium, an exercise solution opens on click and a chapter's
live button takes the keyboard focus and opens on Enter.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from functools import cache
from html.parser import HTMLParser
from typing import NamedTuple

import pytest
from book_paths import CHAPTERS, HTML, LABS, MATH_PAGES, PAGES


class _Assets(HTMLParser):
    """Collect a page's script and stylesheet references, its inline scripts and the classes of its elements."""

    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[tuple[str, dict[str, str | None]]] = []
        self.inline: list[str] = []
        self.styles: list[str] = []
        self.classes: list[set[str]] = []
        self._in_inline_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        self.classes.append(set((attributes.get("class") or "").split()))
        if tag == "script" and attributes.get("src"):
            self.scripts.append((attributes["src"] or "", attributes))
        elif tag == "script":
            self._in_inline_script = True
            self.inline.append("")
        elif tag == "link" and "stylesheet" in (attributes.get("rel") or "").split():
            self.styles.append(attributes.get("href") or "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_inline_script = False

    def handle_data(self, data: str) -> None:
        if self._in_inline_script:
            self.inline[-1] += data


class Page(NamedTuple):
    """One built page: its HTML, and its local scripts and stylesheets as site-relative paths."""

    html: str
    scripts: dict[str, dict[str, str | None]]
    inline: list[str]
    styles: list[str]
    remote: list[str]
    classes: list[set[str]]


def _site_path(page: str, ref: str) -> str | None:
    """``ref`` (as written in ``page``) as a path in the site, query string dropped; None if off-site."""
    if re.match(r"^[a-z]+:|^//", ref):
        return None
    return posixpath.normpath(
        posixpath.join(posixpath.dirname(page), ref.split("?", 1)[0])
    )


@cache
def _page(path: str) -> Page:
    """The built page at site-relative ``path``, parsed (once)."""
    html = (HTML / path).read_text(encoding="utf-8")
    parser = _Assets()
    parser.feed(html)
    scripts = {}
    remote = []
    for src, attributes in parser.scripts:
        local = _site_path(path, src)
        if local is None:
            remote.append(src)
        else:
            scripts[local] = attributes
    styles = []
    for href in parser.styles:
        local = _site_path(path, href)
        if local is None:
            remote.append(href)
        else:
            styles.append(local)
    return Page(html, scripts, parser.inline, styles, remote, parser.classes)


def _has_class(page: Page, *names: str) -> bool:
    """Whether some element of ``page`` carries all of ``names`` as classes."""
    return any(set(names) <= classes for classes in page.classes)


class Need(NamedTuple):
    """An extension's assets, and which pages need them."""

    extension: str
    needs: Callable[[str, Page], bool]
    scripts: tuple[str, ...] = ()
    styles: tuple[str, ...] = ()


NEEDS = [
    Need(
        "MathJax",
        lambda path, page: path in MATH_PAGES,
        scripts=("_static/mathjax/tex-chtml.js",),
    ),
    Need(
        "sphinx-togglebutton (solution dropdowns)",
        lambda path, page: (
            _has_class(page, "admonition", "dropdown")
            or _has_class(page, "admonition", "toggle")
        ),
        scripts=("_static/togglebutton.js",),
        styles=("_static/togglebutton.css",),
    ),
    Need(
        "sphinx-exercise",
        lambda path, page: (
            _has_class(page, "exercise", "admonition")
            or _has_class(page, "solution", "admonition")
        ),
        styles=("_static/exercise.css",),
    ),
    Need(
        "jupyterlite-sphinx (live button)",
        lambda path, page: (
            path in CHAPTERS or _has_class(page, "jupyterlite_sphinx_try_it_button")
        ),
        scripts=("_static/jupyterlite_sphinx.js",),
        styles=("_static/jupyterlite_sphinx.css",),
    ),
    Need(
        "sphinx-thebe",
        lambda path, page: True,
        scripts=("_static/sphinx-thebe.js",),
        styles=("_static/sphinx-thebe.css",),
    ),
]


def test_math_pages_found():
    """Chapters, labs and the intro hold maths (else the MathJax checks would check nothing)."""
    assert set(CHAPTERS) | set(LABS) | {"intro.html"} <= set(MATH_PAGES)


@pytest.mark.parametrize("need", NEEDS, ids=lambda need: need.extension)
def test_extension_assets_reach_the_pages_that_need_them(need: Need):
    """Every page that needs an extension links its scripts and stylesheets, and they are in the site."""
    needing = [path for path in PAGES if need.needs(path, _page(path))]
    assert needing, f"no page needs {need.extension}: is the check out of date?"
    missing = {}
    for path in needing:
        page = _page(path)
        lacks = [s for s in need.scripts if s not in page.scripts] + [
            s for s in need.styles if s not in page.styles
        ]
        if lacks:
            missing[path] = lacks
    assert missing == {}, f"{need.extension}: pages without its assets: {missing}"
    for asset in need.scripts + need.styles:
        assert (HTML / asset).is_file(), (
            f"{need.extension}: {asset} is linked but not in the site"
        )


def test_chapters_have_a_live_button_and_exercises_solutions():
    """The live button and solution dropdowns the browser tests press are in every chapter's HTML."""
    for path in CHAPTERS:
        page = _page(path)
        assert _has_class(page, "jupyterlite_sphinx_try_it_button"), (
            f"{path}: no live button"
        )
        assert _has_class(page, "solution", "dropdown"), f"{path}: no solution dropdown"


@pytest.mark.parametrize("path", MATH_PAGES)
def test_mathjax_is_local_deferred_and_configured(path: str):
    """A page with maths loads the book's own MathJax after myst's configuration (inline, display, amsmath)."""
    page = _page(path)
    assert not [r for r in page.remote if "mathjax" in r.lower()], (
        f"{path} loads MathJax from off-site: {page.remote}"
    )
    script = page.scripts.get("_static/mathjax/tex-chtml.js")
    assert script is not None, (
        f"{path}: no MathJax script (local scripts: {sorted(page.scripts)})"
    )
    assert "defer" in script, (
        f"{path}: MathJax is not deferred, so it may run before its configuration"
    )
    configs = [body for body in page.inline if "window.MathJax" in body]
    assert len(configs) == 1, f"{path}: {len(configs)} MathJax configurations"
    # myst's configuration: MathJax processes only the elements Sphinx marks as maths (and notebook outputs).
    assert (
        '"processHtmlClass": "tex2jax_process|mathjax_process|math|output_area"'
        in configs[0]
    )
    assert page.html.index(configs[0]) < page.html.index("_static/mathjax/tex-chtml.js")


def test_no_page_repeats_a_script_or_loads_remote_fonts():
    """No repeated script (thebe's configuration), no Google Fonts stylesheet; every linked asset is in the site."""
    for path in PAGES:
        page = _page(path)
        assert len([body for body in page.inline if "THEBE_JS_URL" in body]) == 1, (
            f"{path}: thebe configured twice"
        )
        bodies = [body.strip() for body in page.inline if body.strip()]
        assert len(bodies) == len(set(bodies)), f"{path}: an inline script repeats"
        assert not [r for r in page.remote if "fonts.googleapis.com" in r], (
            f"{path} links Google Fonts"
        )
    for asset in sorted(
        {a for path in PAGES for a in (*_page(path).scripts, *_page(path).styles)}
    ):
        assert (HTML / asset).is_file(), (
            f"{asset} is linked by the book's pages but not in the site"
        )


# One page of each kind with solution dropdowns: the assets on the others are checked above.
BROWSER_PAGES = [
    *CHAPTERS[:1],
    *[p for p in LABS if _has_class(_page(p), "solution", "dropdown")][:1],
]


@pytest.mark.parametrize("path", BROWSER_PAGES)
def test_solution_opens_and_live_button_takes_focus(browser, site, path: str):
    """A solution dropdown opens on click; a chapter's live button takes the keyboard focus and opens on Enter."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    # the maths is checked on every page elsewhere: skip typesetting it here (seconds a page)
    page.route(
        "**/_static/mathjax/**",
        lambda route: route.fulfill(body="", content_type="text/javascript"),
    )
    # as if online: the live block's check that Pyodide's CDN answers succeeds, so its frame opens
    page.route(
        re.compile(r"https://cdn\.jsdelivr\.net/.*"),
        lambda route: route.fulfill(status=200, body=""),
    )
    try:
        page.goto(f"{site}/{path}", wait_until="load")
        solution = page.locator(".solution.dropdown").first
        body = solution.locator(".admonition-title ~ *").first
        # togglebutton.js adds the button and hides the solution once the page has loaded
        solution.locator("button.toggle-button").wait_for(timeout=10_000)
        assert not body.is_visible(), (
            f"{path}: the solution is shown before it is opened"
        )
        solution.locator(".admonition-title").click()
        body.wait_for(state="visible", timeout=5_000)
        assert (
            solution.locator("button.toggle-button").get_attribute("aria-expanded")
            == "true"
        )
        if path in CHAPTERS:
            button = page.locator(".jupyterlite_sphinx_try_it_button").first
            assert button.is_visible(), f"{path}: the live button is not shown"
            button.focus()
            assert button.evaluate("b => b === document.activeElement"), (
                f"{path}: the live button cannot take the keyboard focus"
            )
            assert button.get_attribute("role") == "button", (
                f"{path}: the live button is not announced as a button"
            )
            page.keyboard.press("Enter")
            page.locator("iframe.jupyterlite_sphinx_iframe").first.wait_for(
                state="attached", timeout=5_000
            )
    finally:
        context.close()
