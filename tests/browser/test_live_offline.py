"""The live (JupyterLite) notebooks read as plain Markdown and say when Python cannot load (R14)."""

from __future__ import annotations

import json
import re

from book_paths import CHAPTERS, HTML

_ROLE = re.compile(r"\{[a-z:-]+\}`[^`]*`")


def test_live_notebooks_hold_no_myst_role():
    """Every chapter notebook the live site opens has its roles rewritten (JupyterLite's Markdown
    is not MyST: it would show {footcite}`...` as typed)."""
    staged = sorted((HTML / "lite" / "files" / "chapters").glob("*.ipynb"))
    # each chapter, and the calculator notebook its live button opens
    assert len(staged) == 2 * len(CHAPTERS)
    for path in staged:
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "markdown":
                text = "".join(cell["source"])
                assert not _ROLE.search(text), (
                    f"{path.name}: {_ROLE.search(text).group(0)}"
                )


def test_live_button_offline_says_python_could_not_load(browser, site):
    """With the Pyodide CDN unreachable, pressing the live button shows the message (as an alert)
    above the live block, instead of only the kernel's red icon."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        page.route(
            re.compile(r"https://cdn\.jsdelivr\.net/.*"), lambda route: route.abort()
        )
        page.goto(f"{site}/{CHAPTERS[0]}")
        button = page.locator(".jupyterlite_sphinx_try_it_button").first
        button.scroll_into_view_if_needed()
        button.click()
        note = page.locator(".live-offline[role=alert]")
        note.wait_for(timeout=15_000)
        assert note.inner_text().startswith("Python could not be loaded (offline?)")
        assert note.is_visible()
        # R4-3: no empty frame is left under the message
        box = page.locator(".jupyterlite_sphinx_iframe_container").first
        box_height = box.evaluate("(e) => e.getBoundingClientRect().height")
        assert box_height < 10, f"an empty live frame {box_height:.0f} px tall is left"
    finally:
        page.close()
