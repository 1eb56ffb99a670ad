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
from page_visit import off_host, visit

PYODIDE_CDN = "cdn.jsdelivr.net"
# Hosts a book page may contact: only the Colab badge image (MathJax is served by the book itself).
PAGE_HOSTS = {"colab.research.google.com"}
# A chapter running live in the page also fetches Pyodide from its CDN.
LIVE_HOSTS = PAGE_HOSTS | {PYODIDE_CDN}


def _maths_problems(state: dict) -> list[str]:
    """What is wrong with the maths a reader sees, from the page's MathJax ``state``
    (empty when MathJax typeset all of it)."""
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
def test_page_renders_cleanly(page_report, site, path):
    """No console errors (bar blocked outbound requests), no broken local request, images load, maths typeset."""
    report = page_report(site, path, screenshot=True)
    assert report.errors == [], f"console errors on {path}: {report.errors}"
    strangers = sorted({urlparse(u).hostname for u in report.off_host} - PAGE_HOSTS)
    assert strangers == [], f"{path} contacts third-party hosts: {strangers}"
    assert report.failed == [], f"local requests failed on {path}: {report.failed}"
    # Off-host images (the Colab badge) cannot load on an offline machine; they must at least say what they are.
    broken = [
        i["src"] for i in report.images if not i["loaded"] and not off_host(i["src"])
    ]
    assert broken == [], f"images that did not load on {path}: {broken}"
    unlabelled = [
        i["src"]
        for i in report.images
        if not i["loaded"] and off_host(i["src"]) and not i["alt"]
    ]
    assert unlabelled == [], f"off-host images without alt text on {path}: {unlabelled}"
    assert report.counts["title"] >= 1, f"{path} has no title"
    if path in MATH_PAGES:
        problems = _maths_problems(report.maths)
        assert problems == [], f"maths not typeset on {path}: {problems}"


@pytest.mark.parametrize("path", CHAPTERS)
def test_chapter_shows_static_calculator(page_report, site, path):
    """A chapter shows its calculator's default figure and the note on using it live, and no dead controls."""
    counts = page_report(site, path, screenshot=True).counts
    assert counts["calculator note"] >= 1, f"{path}: no calculator note"
    assert counts["output figure"] >= 1, f"{path}: no figure in the outputs"
    assert counts["dead control"] == 0, (
        f"{path}: {counts['dead control']} widget controls rendered without a kernel"
    )
    assert counts["live page"] >= 1 or counts["live text"] >= 1, (
        f"{path}: no way to open it live"
    )


def test_live_button_opens_the_chapter_in_the_page(browser, site, screenshots):
    """Pressing a chapter's live button replaces it with its calculator notebook running in JupyterLite, in the page."""
    context, page, _, off_host, failed = visit(
        browser, f"{site}/{CHAPTERS[0]}", maths=False
    )
    # as if online: the page's check that Pyodide's CDN answers succeeds (offline the frame folds
    # away, tests/browser/test_live_offline.py), and the notebook UI opens from the site
    page.route(
        re.compile(r"https://cdn\.jsdelivr\.net/.*"),
        lambda route: route.fulfill(status=200, body=""),
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
    context, page, _, off_host, failed = visit(
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
    chapters = {Path(c).with_suffix(".ipynb").name for c in CHAPTERS}
    # each chapter, and the calculator notebook its live button opens (tools/plain_notebooks.py)
    calculators = {n.replace(".ipynb", ".calculator.ipynb") for n in chapters}
    assert shipped == chapters | calculators
