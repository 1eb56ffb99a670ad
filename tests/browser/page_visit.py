"""Loading a built page in Chromium, and what a reader (and axe-core) finds on it.

Each book page is loaded, typeset and inspected **once** per run (``inspect_page``):
the render checks in ``test_rendered_book.py`` and the accessibility checks in
``test_accessibility.py`` read the same ``PageReport``. Loading a page and letting
MathJax typeset it is most of a browser check's cost (seconds a page, half a minute
for the API page); doing it twice per page doubled the browser stage.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from book_paths import AXE_JS

# Resolves once MathJax has typeset the page (at once on a page without MathJax; 20 s at most).
MATHJAX_DONE = """async () => {
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

# Every image as the browser loaded it: source, whether it decoded, its alt text and role.
_IMAGES = """() => Array.from(document.images).map(i => ({
    src: i.currentSrc || i.src, loaded: i.complete && i.naturalWidth > 0,
    attr_src: i.getAttribute("src") || "", alt: i.getAttribute("alt"),
    decorative: i.getAttribute("role") === "presentation" || i.getAttribute("aria-hidden") === "true",
}))"""

# The content's tables, and whether each has a header row (axe does not judge this).
_TABLES = """() => Array.from(document.querySelectorAll("main table, article table")).map(t => ({
    header: !!t.querySelector("thead th, tr:first-child th"),
    text: t.innerText.slice(0, 60),
}))"""

# axe's default rule set; 'resultTypes' keeps the answer small (only violations carry their nodes).
_RUN_AXE = """async () => {
    const results = await axe.run(document, {resultTypes: ["violations"]});
    return results.violations.map(v => ({
        id: v.id, impact: v.impact, help: v.help, tags: v.tags,
        nodes: v.nodes.map(n => n.target.join(" ")).slice(0, 5), count: v.nodes.length,
    }));
}"""


# Elements the page checks count (Playwright locators): a chapter's calculator note, its
# figures, widget controls rendered without a kernel (dead), and its ways to open it live.
COUNTED = {
    "title": "h1",
    "calculator note": ".calc-note",
    "output figure": ".cell_output img",
    "dead control": ".cell_output input, .cell_output select, .cell_output .widget-slider",
    "live page": ".jupyterlite_sphinx_iframe_container, .jupyterlite_sphinx_try_it_button, iframe",
    "live text": "text=live",
}


def off_host(url: str) -> bool:
    """Whether ``url`` leaves the machine (not the local server, not data/blob/about)."""
    host = urlparse(url).hostname
    return host not in (None, "127.0.0.1", "localhost") and not url.startswith(
        ("data:", "blob:", "about:")
    )


def visit(
    browser,
    url: str,
    screenshot: Path | None = None,
    wait_ms: int = 300,
    maths: bool = True,
):
    """Load ``url`` and let MathJax finish (``maths=False``: serve MathJax empty, typeset nothing).

    Returns (context, page, console errors, off-host requests, failed on-host requests);
    the caller closes the context.
    """
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    outbound: list[str] = []
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
                off_host(source)
                or "net::ERR_" in msg.text
                and any(off_host(u) for u in outbound)
            ):
                return  # a blocked outbound request, not a fault of the book
            errors.append(f"{msg.text} ({source})")

    page.on("console", on_console)
    page.on("pageerror", lambda exc: errors.append(f"uncaught: {exc}"))
    context.on(
        "request", lambda req: outbound.append(req.url) if off_host(req.url) else None
    )
    context.on(
        "requestfailed",
        lambda req: failed.append(req.url) if not off_host(req.url) else None,
    )
    page.goto(url, wait_until="load")
    page.evaluate(MATHJAX_DONE)
    page.wait_for_timeout(wait_ms)
    if screenshot is not None:
        page.screenshot(path=str(screenshot))
    return context, page, errors, outbound, failed


@dataclass(frozen=True)
class PageReport:
    """What one load of a page found, after its maths was typeset.

    ``errors``, ``off_host`` and ``failed`` are as ``visit`` returns them; ``counts``
    how many of each of ``COUNTED`` the page holds; ``images``
    and ``tables`` as the page's DOM has them; ``maths`` is MathJax's state
    (``_MATHS_STATE``); ``violations`` is axe-core's answer, run last so that the
    checks before it see the page as a reader does.
    """

    errors: list[str]
    off_host: list[str]
    failed: list[str]
    counts: dict[str, int]
    images: list[dict]
    tables: list[dict]
    maths: dict
    violations: list[dict]


def inspect_page(browser, url: str, screenshot: Path | None = None) -> PageReport:
    """Load ``url`` once, typeset its maths, and collect everything the page checks read."""
    if not AXE_JS.is_file():
        raise FileNotFoundError(f"axe-core not found at {AXE_JS}: run `make axe`")
    context, page, errors, outbound, failed = visit(browser, url, screenshot)
    try:
        # what the page did on loading, before axe's own script runs in it
        errors, outbound, failed = list(errors), list(outbound), list(failed)
        counts = {name: page.locator(css).count() for name, css in COUNTED.items()}
        images = page.evaluate(_IMAGES)
        tables = page.evaluate(_TABLES)
        maths = page.evaluate(_MATHS_STATE)
        page.add_script_tag(path=str(AXE_JS))
        violations = page.evaluate(_RUN_AXE)
    finally:
        context.close()
    return PageReport(
        errors, outbound, failed, counts, images, tables, maths, violations
    )
