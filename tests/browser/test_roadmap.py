"""The landing page's roadmap (R4-11): one row per chapter and lab of the table of contents, each
linked, with what it needs and a reading time, and a "where to start" line."""

from __future__ import annotations

import re

import yaml
from book_paths import HTML, ROOT


def test_roadmap_lists_every_chapter_and_lab(browser, site):
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    files = [
        e["file"]
        for part in toc["parts"]
        for e in part.get("chapters", [])
        if e.get("file", "").startswith(("chapters/", "labs/"))
    ]
    page = browser.new_page(viewport={"width": 390, "height": 844})
    try:
        page.goto(f"{site}/intro.html")
        table = page.locator("div.roadmap table")
        assert table.count() == 1
        links = table.locator("a").evaluate_all(
            "(a) => a.map((e) => e.getAttribute('href'))"
        )
        assert [re.sub(r"\.html.*$", "", h) for h in links] == files
        rows = table.locator("tbody tr").all_inner_texts()
        chapters = [r for r in rows if re.match(r"\d+\. ", r)]
        assert len(chapters) == sum(f.startswith("chapters/") for f in files)
        for row in rows:
            if "\t" in row and re.search(r"\d+\. |Lab \d", row):
                assert re.search(r"\b\d+ min\b", row), row
                assert row.split("\t")[2].strip() not in {"", "—"}, row
        assert "Where to start." in page.locator("main").inner_text()
        assert (HTML / "intro.html").exists()
    finally:
        page.close()
