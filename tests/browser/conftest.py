"""Fixtures for checking the built book in a real browser (Debian's Chromium, driven by Playwright).

The book must be built first (``make book``); ``make test`` does this before running these tests.
Playwright never downloads a browser here: it drives ``/usr/bin/chromium`` (``CHROMIUM`` overrides).
"""

from __future__ import annotations

import functools
import http.server
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from book_paths import CHROMIUM, HTML, SCREENSHOTS, STUDENT_HTML
from page_visit import PageReport, inspect_page

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:  # keep pytest output readable
        pass


@pytest.fixture(scope="session")
def site() -> Iterator[str]:
    """Serve the built book on 127.0.0.1 and yield its base URL."""
    if not (HTML / "intro.html").exists():
        pytest.fail(f"no built book at {HTML}: run `make book` first")
    yield from _serve(HTML)


@pytest.fixture(scope="session")
def student_site() -> Iterator[str]:
    """Serve the built student edition on 127.0.0.1 and yield its base URL (skip if not built)."""
    if not (STUDENT_HTML / "intro.html").exists():
        pytest.skip(f"no student edition at {STUDENT_HTML}: `make student` builds it")
    yield from _serve(STUDENT_HTML)


def _serve(directory: Path) -> Iterator[str]:
    """Serve ``directory`` over HTTP on 127.0.0.1 until the generator is closed."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="session")
def browser():
    """A headless Chromium from Debian's package."""
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(
            f"Chromium not found at {CHROMIUM}: `apt-get install chromium` (make test does this)"
        )
    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(
            executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
        )
        try:
            yield instance
        finally:
            instance.close()


@pytest.fixture(scope="session")
def screenshots() -> Path:
    """Folder for page screenshots (uploaded as CI artifacts)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS


# axe violations below serious impact, by (rule, impact, help): the pages they occur on. Filled by
# test_accessibility.py, listed after the run (they do not fail it).
AXE_MINOR: dict[tuple[str, str, str], list[str]] = {}


def pytest_terminal_summary(terminalreporter) -> None:
    """List what axe reported below serious impact, rule by rule."""
    if not AXE_MINOR:
        return
    terminalreporter.section("axe violations below serious impact (not failing)")
    for (rule, impact, help_text), pages in sorted(AXE_MINOR.items()):
        terminalreporter.write_line(
            f"{rule} ({impact}): {help_text}: {len(pages)} pages, e.g. {', '.join(pages[:3])}"
        )


@pytest.fixture(scope="session")
def page_report(browser, screenshots):
    """``page_report(base, path)``: the one ``PageReport`` of the page at ``base/path`` this run.

    A book page's screenshot (its first screen, as a reader opens it) goes to the
    screenshots folder; a student-edition page, a copy of it, is not photographed.
    """
    reports: dict[str, PageReport] = {}

    def report(base: str, path: str, screenshot: bool = False) -> PageReport:
        url = f"{base}/{path}"
        if url not in reports:
            shot = (
                screenshots
                / (re.sub(r"[^A-Za-z0-9]+", "_", path.removesuffix(".html")) + ".png")
                if screenshot
                else None
            )
            reports[url] = inspect_page(browser, url, shot)
        return reports[url]

    return report
