"""Wide content on a phone and a desktop: plots shown at a size whose text reads (R4-5), and a
visible scroll cue on every table or plot wider than its column (R4-7)."""

from __future__ import annotations

import pytest

_BOXES = """(selector) => Array.from(document.querySelectorAll(selector)).map((box) => {
    const before = box.previousElementSibling;
    const hint = before && before.classList.contains("scroll-hint") && !before.hidden
        && before.getBoundingClientRect().height > 0 ? before.textContent : "";
    return {wide: box.scrollWidth > box.clientWidth + 1, hint,
            overflow: getComputedStyle(box).overflowX};
})"""
TABLES = ".pst-scrollable-table-container, div.cell_output div.output:has(> table)"


def _open(browser, url: str, width: int):
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.goto(url)
    page.wait_for_load_state("load")
    page.wait_for_timeout(1500)
    return page


def test_plots_on_a_phone_keep_their_text_legible(browser, site):
    """At 390 px every plot of Chapter 4 is drawn at (nearly) its own pixel size, so that the
    figures' smallest text, 9 pt at 100 dpi (helpers.plots.SMALL), is at least 12 CSS px; its box
    scrolls sideways and says so above it."""
    from helpers import plots

    page = _open(browser, f"{site}/chapters/04_batching.html", 390)
    try:
        images = page.evaluate(
            """() => Array.from(document.querySelectorAll("div.cell_output img")).map((img) => ({
                shown: img.getBoundingClientRect().width, natural: img.naturalWidth}))"""
        )
        boxes = page.evaluate(
            _BOXES, "div.cell_output:has(> a > img), div.cell_output:has(> img)"
        )
    finally:
        page.close()
    assert images, "no plot on Chapter 4"
    dpi = plots.STYLE["savefig.dpi"]
    for image in images:
        scale = image["shown"] / image["natural"]
        smallest_px = plots.SMALL / 72 * dpi * scale
        assert smallest_px >= 12, f"plot text {smallest_px:.1f} px on a phone: {image}"
    for box in boxes:
        if box["wide"]:
            assert box["overflow"] in {"auto", "scroll"}
            assert box["hint"].startswith("⇆"), box


@pytest.mark.parametrize(
    ("path", "width"),
    [("appendix/gpu_measurements.html", 1280), ("chapters/04_batching.html", 390)],
)
def test_wide_tables_say_they_scroll(browser, site, path, width):
    """Every table wider than its column, on a desktop and on a phone, has a visible line above it
    saying it scrolls sideways; one that fits has none."""
    page = _open(browser, f"{site}/{path}", width)
    try:
        boxes = page.evaluate(_BOXES, TABLES)
    finally:
        page.close()
    wide = [b for b in boxes if b["wide"]]
    assert wide, f"no table wider than the column on {path} at {width} px"
    assert all(b["hint"].startswith("⇆") for b in wide), wide
    assert not any(b["hint"] for b in boxes if not b["wide"])
