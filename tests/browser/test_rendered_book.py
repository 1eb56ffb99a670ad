"""Open every page of the built book in Chromium and check what a reader sees.

Each page: no console errors except blocked outbound requests (this machine is
offline, and so may a reader's be), every image served by the book loads (an
off-host one, such as the Colab badge, must at least carry alt text), its maths
is typeset by the MathJax the book serves itself, and every chapter shows
its calculator's static default output with the note on using it live. The
JupyterLite site: its notebook UI renders a chapter, and the only off-host
requests the live kernel makes go to the Pyodide CDN.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlparse

import pytest
from book_paths import CHAPTERS, HTML, MATH_PAGES, PAGES

PYODIDE_CDN = "cdn.jsdelivr.net"
# Hosts a book page may contact: only the Colab badge image (MathJax is served by the book itself).
PAGE_HOSTS = {"colab.research.google.com"}
# A chapter running live in the page also fetches Pyodide from its CDN.
LIVE_HOSTS = PAGE_HOSTS | {PYODIDE_CDN}

# Resolves once MathJax has typeset the page (at once on a page without MathJax; 20 s at most).
_MATHJAX_DONE = """async () => {
    const promise = window.MathJax && window.MathJax.startup && window.MathJax.startup.promise;
    if (promise) await Promise.race([promise, new Promise(done => setTimeout(done, 20000))]);
}"""

# What a reader sees of the page's maths: MathJax's version, its output, errors, and raw TeX left in the text.
_MATHS_STATE = r"""() => {
    const containers = Array.from(document.querySelectorAll("mjx-container"));
    // Code legitimately shows TeX delimiters: hide it while reading the visible text.
    const hide = document.createElement("style");
    hide.textContent = "pre, code, kbd, samp, .cell_input, .highlight { display: none !important; }";
    document.head.appendChild(hide);
    const text = document.body.innerText;
    hide.remove();
    const raw = [];
    for (const mark of ["\\(", "\\[", "$$"]) {
        const at = text.indexOf(mark);
        if (at >= 0) raw.push(text.slice(Math.max(0, at - 20), at + 40).replace(/\s+/g, " "));
    }
    return {
        version: (window.MathJax && window.MathJax.version) || null,
        containers: containers.length,
        errors: Array.from(document.querySelectorAll("mjx-merror, [data-mjx-error]"))
            .map(e => e.getAttribute("data-mjx-error") || e.textContent).slice(0, 5),
        untypeset: Array.from(document.querySelectorAll(".math"))
            .filter(e => !e.querySelector("mjx-container")).map(e => e.textContent.slice(0, 60)),
        without_mathml: containers.filter(c => !c.querySelector("mjx-assistive-mml")).length,
        raw: raw,
    };
}"""


def _off_host(url: str) -> bool:
    host = urlparse(url).hostname
    return host not in (None, "127.0.0.1", "localhost") and not url.startswith(
        ("data:", "blob:", "about:")
    )


def _visit(
    browser,
    url: str,
    screenshot: Path | None = None,
    wait_ms: int = 300,
    maths: bool = True,
):
    """Load ``url`` and let MathJax finish (``maths=False``: serve MathJax empty, typeset nothing).

    Returns (context, page, console errors, off-host requests, failed on-host requests).
    """
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    off_host: list[str] = []
    failed: list[str] = []
    page = context.new_page()
    if not maths:  # typesetting takes seconds a page, wasted on checks that do not look at the maths
        page.route(
            "**/_static/mathjax/**",
            lambda route: route.fulfill(body="", content_type="text/javascript"),
        )

    def on_console(msg) -> None:
        if msg.type == "error":
            source = (msg.location or {}).get("url", "")
            if (
                _off_host(source)
                or "net::ERR_" in msg.text
                and any(_off_host(u) for u in off_host)
            ):
                return  # a blocked outbound request, not a fault of the book
            errors.append(f"{msg.text} ({source})")

    page.on("console", on_console)
    page.on("pageerror", lambda exc: errors.append(f"uncaught: {exc}"))
    context.on(
        "request", lambda req: off_host.append(req.url) if _off_host(req.url) else None
    )
    context.on(
        "requestfailed",
        lambda req: failed.append(req.url) if not _off_host(req.url) else None,
    )
    page.goto(url, wait_until="load")
    page.evaluate(_MATHJAX_DONE)
    page.wait_for_timeout(wait_ms)
    if screenshot is not None:
        page.screenshot(path=str(screenshot), full_page=True)
    return context, page, errors, off_host, failed


def _maths_problems(page) -> list[str]:
    """What is wrong with the maths a reader sees on ``page`` (empty when MathJax typeset all of it)."""
    state = page.evaluate(_MATHS_STATE)
    if state["version"] is None:
        return ["MathJax did not load (no window.MathJax.version)"]
    problems = []
    if state["containers"] == 0:
        problems.append("MathJax rendered nothing (no mjx-container)")
    if state["errors"]:
        problems.append(f"MathJax errors: {state['errors']}")
    if state["untypeset"]:
        problems.append(
            f"{len(state['untypeset'])} formulas left as TeX, first {state['untypeset'][:3]}"
        )
    if state["raw"]:
        problems.append(f"raw TeX delimiters in the visible text: {state['raw']}")
    if state["without_mathml"]:
        problems.append(
            f"{state['without_mathml']} formulas without assistive MathML for screen readers"
        )
    return problems


def test_site_has_pages():
    """The build contains the intro, the appendix and (once written) the chapters and labs."""
    assert "intro.html" in PAGES
    assert "appendix/hardware.html" in PAGES
    assert len(PAGES) >= 5


@pytest.mark.parametrize("path", PAGES)
def test_page_renders_cleanly(browser, site, screenshots, path):
    """No console errors (bar blocked outbound requests), no broken local request, images load, maths typeset."""
    shot = screenshots / (
        re.sub(r"[^A-Za-z0-9]+", "_", path.removesuffix(".html")) + ".png"
    )
    context, page, errors, off_host, failed = _visit(browser, f"{site}/{path}", shot)
    try:
        assert errors == [], f"console errors on {path}: {errors}"
        strangers = sorted({urlparse(u).hostname for u in off_host} - PAGE_HOSTS)
        assert strangers == [], f"{path} contacts third-party hosts: {strangers}"
        assert failed == [], f"local requests failed on {path}: {failed}"
        images = page.evaluate(
            "() => Array.from(document.images)"
            ".map(i => [i.currentSrc || i.src, i.complete && i.naturalWidth > 0, i.alt])"
        )
        # Off-host images (the Colab badge) cannot load on an offline machine; they must at least say what they are.
        broken = [src for src, ok, _ in images if not ok and not _off_host(src)]
        assert broken == [], f"images that did not load on {path}: {broken}"
        unlabelled = [
            src for src, ok, alt in images if not ok and _off_host(src) and not alt
        ]
        assert unlabelled == [], (
            f"off-host images without alt text on {path}: {unlabelled}"
        )
        assert page.locator("h1").count() >= 1, f"{path} has no title"
        if path in MATH_PAGES:
            problems = _maths_problems(page)
            assert problems == [], f"maths not typeset on {path}: {problems}"
    finally:
        context.close()


@pytest.mark.parametrize("path", CHAPTERS)
def test_chapter_shows_static_calculator(browser, site, path):
    """A chapter shows its calculator's default figure and the note on using it live, and no dead controls."""
    context, page, _, _, _ = _visit(browser, f"{site}/{path}", maths=False)
    try:
        assert page.locator(".calc-note").count() >= 1, f"{path}: no calculator note"
        assert page.locator(".cell_output img").count() >= 1, (
            f"{path}: no figure in the outputs"
        )
        dead = page.locator(
            ".cell_output input, .cell_output select, .cell_output .widget-slider"
        ).count()
        assert dead == 0, f"{path}: {dead} widget controls rendered without a kernel"
        assert (
            page.locator(
                ".jupyterlite_sphinx_iframe_container, .jupyterlite_sphinx_try_it_button, iframe"
            ).count()
            >= 1
            or page.locator("text=live").count() >= 1
        ), f"{path}: no way to open it live"
    finally:
        context.close()


def test_live_button_opens_the_chapter_in_the_page(browser, site, screenshots):
    """Pressing a chapter's live button replaces it with the chapter running in JupyterLite, in the page."""
    context, page, _, off_host, failed = _visit(
        browser, f"{site}/{CHAPTERS[0]}", maths=False
    )
    try:
        button = page.locator(".jupyterlite_sphinx_try_it_button").first
        button.scroll_into_view_if_needed()
        button.click()
        frame = page.frame_locator("iframe.jupyterlite_sphinx_iframe").first
        frame.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=60_000)
        cells = frame.locator(".jp-Cell")
        for _ in range(
            60
        ):  # the notebook renders its cells progressively, off-screen ones later
            if cells.count() >= 3:
                break
            page.wait_for_timeout(500)
        assert cells.count() >= 3, "the live notebook shows too few cells"
        page.wait_for_timeout(3_000)
        page.locator(".jupyterlite_sphinx_iframe_container").first.screenshot(
            path=str(screenshots / "live_in_page.png")
        )
        strangers = sorted({urlparse(u).hostname for u in off_host} - LIVE_HOSTS)
        assert strangers == [], f"the live chapter contacted {strangers}"
        assert failed == [], f"local requests failed: {failed}"
    finally:
        context.close()


def test_lite_notebook_ui_renders_and_only_calls_pyodide_cdn(
    browser, site, screenshots
):
    """The JupyterLite site opens a chapter in its notebook UI; off-host requests go only to the Pyodide CDN."""
    lite = HTML / "lite"
    assert (lite / "notebooks" / "index.html").exists(), (
        "no JupyterLite site in the build"
    )
    contents = sorted((lite / "files").rglob("*.ipynb"))
    assert contents, "the JupyterLite site holds no notebooks"
    notebook = contents[0].relative_to(lite / "files").as_posix()
    context, page, _, off_host, failed = _visit(
        browser,
        f"{site}/lite/notebooks/index.html?path={notebook}",
        screenshots / "lite_notebook.png",
        wait_ms=100,
    )
    try:
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
        page.wait_for_timeout(8_000)  # let the kernel start and try to fetch Pyodide
        page.screenshot(path=str(screenshots / "lite_notebook.png"), full_page=False)
        assert page.locator(".jp-Cell").count() >= 3
        strangers = sorted({u for u in off_host if urlparse(u).hostname != PYODIDE_CDN})
        assert strangers == [], (
            f"the live site requested hosts other than the Pyodide CDN: {strangers}"
        )
        assert failed == [], f"local requests failed in the lite site: {failed}"
    finally:
        context.close()


def test_lite_site_ships_helpers_and_widgets_wheels():
    """The in-browser kernel installs helpers and ipywidgets from the site itself, not from PyPI."""
    index = HTML / "lite" / "pypi" / "all.json"
    assert index.exists(), "no piplite index in the lite site"
    text = index.read_text()
    for name in ("gpu-book-helpers", "ipywidgets", "comm", "jupyterlab-widgets"):
        assert name in text or name.replace("-", "_") in text, (
            f"{name} missing from the lite site's wheels"
        )
    config = (HTML / "lite" / "jupyter-lite.json").read_text()
    assert '"disablePyPIFallback": true' in config


def test_lite_site_holds_every_chapter():
    """Every chapter's live button has its notebook in the lite site, even after an incremental build."""
    shipped = {p.name for p in (HTML / "lite" / "files" / "chapters").glob("*.ipynb")}
    assert shipped == {Path(c).with_suffix(".ipynb").name for c in CHAPTERS}
