"""The rendered book meets WCAG 2.1 level AA, as far as a machine can tell (issue 17).

Every page of the built book and of the student edition is loaded once in Chromium, its maths
typeset, and checked by axe-core (Deque's accessibility engine, the npm package pinned and
fetched by ``make axe``) with its default rules: WCAG 2.0 and 2.1 A and AA, and best practices.
A violation of serious or critical impact fails the page; the rest are listed at the end of the
run. The same page load checks what axe cannot judge: every image's alt text says something
(not a file name), and every table has a header row. The calculators' controls are checked in
Python: each has a label.
"""

from __future__ import annotations

import re

import pytest
from book_paths import AXE_JS, CHAPTERS, PAGES, STUDENT_PAGES
from conftest import AXE_MINOR

# Resolves once MathJax has typeset the page (at once on a page without MathJax; 20 s at most).
_MATHJAX_DONE = """async () => {
    const promise = window.MathJax && window.MathJax.startup && window.MathJax.startup.promise;
    if (promise) await Promise.race([promise, new Promise(done => setTimeout(done, 20000))]);
}"""

# axe's default rule set; 'resultTypes' keeps the answer small (only violations carry their nodes).
_RUN_AXE = """async () => {
    const results = await axe.run(document, {resultTypes: ["violations"]});
    return results.violations.map(v => ({
        id: v.id, impact: v.impact, help: v.help, tags: v.tags,
        nodes: v.nodes.map(n => n.target.join(" ")).slice(0, 5), count: v.nodes.length,
    }));
}"""

# What axe does not judge: images' alt text and tables' header rows.
_IMAGES_AND_TABLES = """() => ({
    images: Array.from(document.images).map(i => ({
        src: i.getAttribute("src") || "", alt: i.getAttribute("alt"),
        decorative: i.getAttribute("role") === "presentation" || i.getAttribute("aria-hidden") === "true",
    })),
    tables: Array.from(document.querySelectorAll("main table, article table")).map(t => ({
        header: !!t.querySelector("thead th, tr:first-child th"),
        text: t.innerText.slice(0, 60),
    })),
})"""

FAILING_IMPACTS = {"serious", "critical"}
_FILE_NAME = re.compile(r"^\S+\.(png|jpe?g|svg|gif|webp)$", re.I)


def _alt_problem(image: dict) -> str | None:
    """Why an image's alt text fails a screen-reader user, or None."""
    alt = image["alt"]
    if alt is None:
        return "no alt attribute"
    if alt.strip() == "":
        # decorative: allowed for a logo, which the theme repeats as text beside it
        return (
            None
            if "logo" in image["src"].lower() or image["decorative"]
            else "empty alt"
        )
    if _FILE_NAME.match(alt.strip()) or alt.strip() == image["src"].rsplit("/", 1)[-1]:
        return f"alt is a file name: {alt!r}"
    if len(alt.split()) < 2:
        return f"alt says too little: {alt!r}"
    return None


@pytest.mark.parametrize("path", PAGES)
def test_book_page_is_accessible(browser, site, path: str):
    """No serious or critical axe violation; every image has meaningful (or decorative) alt text;
    every table a header row."""
    _check_page(browser, site, "book", path)


@pytest.mark.parametrize("path", STUDENT_PAGES)
def test_student_edition_page_is_accessible(browser, student_site, path: str):
    """The same checks on the student edition (``make student``; skipped when it is not built)."""
    _check_page(browser, student_site, "student", path)


def _check_page(browser, base: str, edition: str, path: str) -> None:
    """Load ``path`` of the site at ``base`` once, typeset its maths, and check it."""
    if not AXE_JS.is_file():
        pytest.fail(f"axe-core not found at {AXE_JS}: run `make axe`")
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    try:
        page.goto(f"{base}/{path}", wait_until="load")
        page.evaluate(_MATHJAX_DONE)
        page.add_script_tag(path=str(AXE_JS))
        violations = page.evaluate(_RUN_AXE)
        found = page.evaluate(_IMAGES_AND_TABLES)
    finally:
        context.close()
    for v in violations:
        if v["impact"] not in FAILING_IMPACTS:
            AXE_MINOR.setdefault((v["id"], v["impact"], v["help"]), []).append(
                f"{edition}:{path} ({v['count']})"
            )
    serious = [v for v in violations if v["impact"] in FAILING_IMPACTS]
    assert serious == [], f"{edition} {path}: axe violations: " + "; ".join(
        f"{v['id']} ({v['impact']}, {v['count']} nodes: {v['help']}) e.g. {v['nodes'][:3]}"
        for v in serious
    )
    bad_images = [
        (image["src"][-50:], problem)
        for image in found["images"]
        if (problem := _alt_problem(image))
    ]
    assert bad_images == [], (
        f"{edition} {path}: images without meaningful alt: {bad_images}"
    )
    headless = [t["text"] for t in found["tables"] if not t["header"]]
    assert headless == [], f"{edition} {path}: tables without a header row: {headless}"


def test_alt_text_check_catches_file_names():
    """The image check refuses myst-nb's default alt text (the file name) and a missing alt."""
    name = "a1b2c3d4e5.png"
    assert _alt_problem({"src": f"../_images/{name}", "alt": name, "decorative": False})
    assert _alt_problem({"src": "x.png", "alt": None, "decorative": False})
    assert _alt_problem({"src": "x.png", "alt": "", "decorative": False})
    assert not _alt_problem({"src": "_static/logo.svg", "alt": "", "decorative": False})
    assert not _alt_problem(
        {"src": "x.png", "alt": "Roofline of the T4.", "decorative": False}
    )


def test_every_calculator_control_has_a_label():
    """Each control of every calculator carries a description (ipywidgets renders it as the
    control's label), distinct within its calculator."""
    import matplotlib

    matplotlib.use("Agg")
    from helpers import cachesim
    from helpers import calculators as cs

    tiny = cachesim.load_trace("tiny")
    calculators = {
        "two_ceilings": cs.two_ceilings(),
        "rooflines": cs.rooflines(),
        "batched_layer": cs.batched_layer(),
        "resnet50": cs.resnet50(),
        "transformer_inference": cs.transformer_inference(),
        "transfer_or_recompute": cs.transfer_or_recompute(),
        "kv_pool": cs.kv_pool({"tiny": tiny}),
        "attention_offload": cs.attention_offload(),
        "kv_tiers": cs.kv_tiers(cachesim.stack_distances(tiny), 2048),
    }
    for name, calc in calculators.items():
        labels = [control.description.strip() for control in calc.controls.values()]
        assert all(labels), f"{name}: a control without a label: {calc.controls}"
        assert len(set(labels)) == len(labels), f"{name}: repeated labels {labels}"


def test_solution_dropdown_opens_from_the_keyboard(browser, site):
    """A chapter's solution dropdown is a focusable button that Enter opens and closes
    (WCAG 2.1.1 Keyboard); the live button's keyboard use is checked in test_page_assets.py."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.route(  # the maths is not looked at here: skip typesetting it
        "**/_static/mathjax/**",
        lambda route: route.fulfill(body="", content_type="text/javascript"),
    )
    try:
        page.goto(f"{site}/{CHAPTERS[0]}", wait_until="load")
        solution = page.locator(".solution.dropdown").first
        toggle = solution.locator("button.toggle-button")
        toggle.wait_for(timeout=10_000)
        body = solution.locator(".admonition-title ~ *").first
        toggle.focus()
        assert toggle.evaluate("b => b === document.activeElement")
        assert not body.is_visible()
        page.keyboard.press("Enter")
        body.wait_for(state="visible", timeout=5_000)
        assert toggle.get_attribute("aria-expanded") == "true"
        page.keyboard.press("Enter")
        body.wait_for(state="hidden", timeout=5_000)
    finally:
        context.close()
