"""The rendered book meets WCAG 2.1 level AA, as far as a machine can tell (issue 17).

Every page of the built book and of the student edition is loaded once in Chromium, its maths
typeset (``page_visit.inspect_page``, whose one load the render checks share), and checked by axe-core (Deque's accessibility engine, the npm package pinned and
fetched by ``make axe``) with its default rules: WCAG 2.0 and 2.1 A and AA, and best practices.
A violation of serious or critical impact fails the page; the rest are listed at the end of the
run. The same page load checks what axe cannot judge: every image's alt text says something
(not a file name), and every table has a header row. The calculators' controls are checked in
Python: each has a label.
"""

from __future__ import annotations

import re
import shutil

import pytest
from book_paths import CHAPTERS, PAGES, STUDENT_PAGES, student_page_is_book_page
from conftest import AXE_MINOR
from page_visit import PageReport

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
            if "logo" in image["attr_src"].lower() or image["decorative"]
            else "empty alt"
        )
    if (
        _FILE_NAME.match(alt.strip())
        or alt.strip() == image["attr_src"].rsplit("/", 1)[-1]
    ):
        return f"alt is a file name: {alt!r}"
    if len(alt.split()) < 2:
        return f"alt says too little: {alt!r}"
    return None


@pytest.mark.parametrize("path", PAGES)
def test_book_page_is_accessible(page_report, site, path: str):
    """No serious or critical axe violation; every image has meaningful (or decorative) alt text;
    every table a header row."""
    _check_page(page_report(site, path, screenshot=True), "book", path)


@pytest.mark.parametrize("path", STUDENT_PAGES)
def test_student_edition_page_is_accessible(page_report, site, student_site, path: str):
    """The same checks on the student edition (``make student``; skipped when it is not built).

    A student page that is the book's page bar the edition's title (``student_page_is_book_page``:
    every page without a solution) is judged on the book page's load, the same document."""
    if student_page_is_book_page(path):
        report = page_report(site, path, screenshot=True)
    else:
        report = page_report(student_site, path)
    _check_page(report, "student", path)


def _check_page(report: PageReport, edition: str, path: str) -> None:
    """Judge one page's report: axe's violations, its images' alt text, its tables' headers."""
    for v in report.violations:
        if v["impact"] not in FAILING_IMPACTS:
            AXE_MINOR.setdefault((v["id"], v["impact"], v["help"]), []).append(
                f"{edition}:{path} ({v['count']})"
            )
    serious = [v for v in report.violations if v["impact"] in FAILING_IMPACTS]
    assert serious == [], f"{edition} {path}: axe violations: " + "; ".join(
        f"{v['id']} ({v['impact']}, {v['count']} nodes: {v['help']}) e.g. {v['nodes'][:3]}"
        for v in serious
    )
    bad_images = [
        (image["attr_src"][-50:], problem)
        for image in report.images
        if (problem := _alt_problem(image))
    ]
    assert bad_images == [], (
        f"{edition} {path}: images without meaningful alt: {bad_images}"
    )
    headless = [t["text"] for t in report.tables if not t["header"]]
    assert headless == [], f"{edition} {path}: tables without a header row: {headless}"


def test_alt_text_check_catches_file_names():
    """The image check refuses myst-nb's default alt text (the file name) and a missing alt."""
    name = "a1b2c3d4e5.png"
    assert _alt_problem(
        {"attr_src": f"../_images/{name}", "alt": name, "decorative": False}
    )
    assert _alt_problem({"attr_src": "x.png", "alt": None, "decorative": False})
    assert _alt_problem({"attr_src": "x.png", "alt": "", "decorative": False})
    assert not _alt_problem(
        {"attr_src": "_static/logo.svg", "alt": "", "decorative": False}
    )
    assert not _alt_problem(
        {"attr_src": "x.png", "alt": "Roofline of the T4.", "decorative": False}
    )


def test_student_page_shares_the_book_load_only_when_it_is_the_same_document(tmp_path):
    """Only a page equal to the book's bar the edition's title, on identical assets, is judged on
    the book's load: a dropped solution or a changed asset makes it load on its own."""
    from book_paths import EDITION_NOTE, same_document

    page = '<html><title>Book</title><body><div class="solution">s</div></body></html>'
    sites = {}
    for edition, title in (("book", "Book"), ("student", f"Book{EDITION_NOTE}")):
        root = sites[edition] = tmp_path / edition
        for folder in ("_static", "_images"):
            (root / folder).mkdir(parents=True)
            (root / folder / "a.css").write_text("p {}")
        (root / "same.html").write_text(page.replace("Book", title))
        (root / "cut.html").write_text(
            page.replace("Book", title)
            if edition == "book"
            else page.replace('<div class="solution">s</div>', "")
        )
    book, student = sites["book"], sites["student"]
    assert same_document(book, student, "same.html")
    assert not same_document(book, student, "cut.html")
    assert not same_document(book, student, "missing.html")
    restyled = tmp_path / "restyled"  # a new site: digests are cached per folder
    shutil.copytree(student, restyled)
    (restyled / "_static" / "a.css").write_text("p { color: red }")
    assert not same_document(book, restyled, "same.html")


def test_every_calculator_control_has_a_label():
    """Each control of every calculator carries a description (ipywidgets renders it as the
    control's label), distinct within its calculator."""
    import matplotlib

    matplotlib.use("Agg")
    from helpers import cachesim, traces
    from helpers import calculators as cs

    tiny = traces.load_trace("tiny")
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
