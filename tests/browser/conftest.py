"""Fixtures for checking the built book in a real browser (Debian's Chromium, driven by Playwright).

The book must be built first (``make book``); ``make test`` does this before running these tests.
Playwright never downloads a browser here: it drives ``/usr/bin/chromium`` (``CHROMIUM`` overrides).
"""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from book_paths import CHROMIUM, HTML, SCREENSHOTS

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
    handler = functools.partial(_QuietHandler, directory=str(HTML))
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
