"""A converted chapter opened in JupyterLite (the built site, served locally) reads as plain Jupyter:
no MyST markup on screen and no solution before a click (R4-2); the live button opens the
chapter's calculator notebook (R4-3)."""

from __future__ import annotations

import json
import re

from book_paths import CHAPTERS, HTML

CHAPTER = "chapters/04_batching.ipynb"
_MARKUP = re.compile(
    r"\{(exercise|solution|admonition|figure|margin|footcite|footbibliography)\}|^:class:",
    re.M,
)


def _solution_line() -> str:
    """A long line of the chapter's first solution, as the converted notebook holds it."""
    nb = json.loads((HTML / "lite" / "files" / CHAPTER).read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        text = "".join(cell["source"])
        if cell["cell_type"] == "markdown" and "<summary>Solution" in text:
            body = text.split("</summary>", 1)[1]
            return max(body.split("\n"), key=len).strip()
    raise AssertionError("no folded solution in the staged chapter")


def test_converted_chapter_in_jupyterlite_shows_no_markup_or_solution(browser, site):
    """JupyterLite renders the staged chapter: headed exercises, closed <details> solutions whose
    text is hidden until the summary is clicked, and no directive or role text in any rendered
    Markdown (cells and printed outputs; a code cell's source is code, shown as written)."""
    solution = _solution_line()
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        page.route(
            re.compile(r"https://cdn\.jsdelivr\.net/.*"), lambda route: route.abort()
        )
        page.goto(f"{site}/lite/lab/index.html?path={CHAPTER}")
        page.locator(".jp-MarkdownOutput").first.wait_for(timeout=60_000)
        seen: list[str] = []
        notebook = page.locator(".jp-NotebookPanel .jp-WindowedPanel-outer").first
        page.wait_for_timeout(1000)
        last, still = -1.0, 0
        # JupyterLab renders the cells near the viewport: walk down the notebook to its end
        for _ in range(400):
            seen += page.locator(".jp-Notebook .jp-RenderedMarkdown").all_inner_texts()
            top = notebook.evaluate(
                "(e) => { e.scrollBy(0, e.clientHeight * 0.7); return e.scrollTop; }"
            )
            page.wait_for_timeout(150)
            still = still + 1 if top == last else 0
            last = top
            if still >= 3:
                break
        text = "\n".join(seen)
        assert "Exercise 1" in text
        found = _MARKUP.search(text)
        assert found is None, f"markup on screen: {found.group(0) if found else ''}"
        details = page.locator(".jp-MarkdownOutput details")
        assert details.count() >= 1
        assert all(not d.evaluate("(e) => e.open") for d in details.all())
        summary = details.last.locator("summary")
        assert summary.inner_text().startswith("Solution")
        hidden = details.last.evaluate("(e) => e.innerText")
        details.last.locator("summary").click()
        assert details.last.evaluate("(e) => e.open")
        assert len(details.last.evaluate("(e) => e.innerText")) > len(hidden)
        assert solution[:40] not in text.replace("\n", " ") or len(solution) < 40
    finally:
        page.close()


def test_live_button_opens_the_calculator_notebook():
    """The live block of every chapter page loads that chapter's calculator notebook, which the
    site has."""
    for chapter in CHAPTERS:
        html = (HTML / chapter).read_text(encoding="utf-8")
        stem = chapter.removesuffix(".html")
        assert f"?path={stem}.calculator.ipynb'" in html, chapter
        assert (HTML / "lite" / "files" / f"{stem}.calculator.ipynb").exists()
        assert (HTML / "notebooks" / f"{stem}.ipynb").exists()


def test_launch_buttons_open_the_converted_notebooks():
    """Colab and Binder buttons of every chapter open the `notebooks` branch."""
    for chapter in CHAPTERS:
        html = (HTML / chapter).read_text(encoding="utf-8")
        links = re.findall(r'href="(https://(?:colab\.research|mybinder)[^"]+)"', html)
        assert len(links) >= 2, chapter
        assert all("/notebooks/" in u or "/notebooks?" in u for u in links), links
