"""The book's search ranks prose above the API reference and shows no raw TeX (R23)."""

from __future__ import annotations

import re


def _results(browser, site, query: str) -> list[dict]:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        page.goto(f"{site}/search.html?q={query.replace(' ', '+')}")
        # results are listed one by one; Sphinx writes the summary once the last is in
        page.wait_for_function(
            "() => /found/i.test((document.querySelector('#search-results .search-summary')"
            " || {}).textContent || '')",
            timeout=30_000,
        )
        page.wait_for_timeout(500)
        return page.evaluate(
            """() => Array.from(document.querySelectorAll("#search-results ul.search li")).map(li => ({
                href: li.querySelector("a").getAttribute("href"),
                snippet: (li.querySelector("p.context") || {}).textContent || "",
            }))"""
        )
    finally:
        page.close()


def test_kv_cache_lists_prose_before_every_api_entry(browser, site):
    """For "KV cache" the first chapter listed is one of Part II's, where the KV cache is taught
    (review R23 found the L2-cache paragraphs of the roofline chapter first), the
    transformer-inference chapter is among the first five results, and every API entry
    (``helpers.kvcache`` and the rest) comes after every page of prose."""
    results = _results(browser, site, "KV cache")
    hrefs = [r["href"] for r in results]
    chapters = [h for h in hrefs if h.startswith("chapters/")]
    part2 = tuple(f"chapters/{n:02d}_" for n in range(6, 13))  # Chapters 6 to 12
    assert chapters and chapters[0].startswith(part2), hrefs[:5]
    assert any(h.startswith("chapters/06_transformer_inference") for h in hrefs[:5]), (
        hrefs[:5]
    )
    api = [i for i, h in enumerate(hrefs) if h.startswith("appendix/api")]
    prose = [i for i, h in enumerate(hrefs) if not h.startswith("appendix/api")]
    assert not api or min(api) > max(prose), hrefs[:10]


def test_snippets_show_no_raw_tex(browser, site):
    """The snippets of a query whose pages are full of formulas hold no TeX delimiters."""
    results = _results(browser, site, "ridge point")
    snippets = " ".join(r["snippet"] for r in results)
    assert snippets.strip(), "no snippet to check"
    for mark in ("\\(", "\\[", "\\frac", "\\mathsf"):
        assert mark not in snippets, mark


def test_roofline_lists_api_entries_after_the_chapters(browser, site):
    """Searching "roofline" finds the ``helpers.roofline`` module and its functions: they come after
    every page of prose."""
    hrefs = [r["href"] for r in _results(browser, site, "roofline")]
    api = [i for i, h in enumerate(hrefs) if h.startswith("appendix/api")]
    prose = [i for i, h in enumerate(hrefs) if not h.startswith("appendix/api")]
    assert api, f"no API entry found for 'roofline': {hrefs[:10]}"
    assert min(api) > max(prose), hrefs[:12]


def test_kv_cache_ranks_its_chapters_first_with_sentences(browser, site):
    """R4-6: "KV cache" lists Chapter 6 (where the KV cache is taught) and Chapter 7 (moving one)
    first, and the snippets are sentences from the text, not the page's outline ("Contents 11.1")."""
    results = _results(browser, site, "KV cache")
    hrefs = [r["href"].split("#")[0] for r in results]
    assert hrefs[:2] == [
        "chapters/06_transformer_inference.html",
        "chapters/07_transfer_or_recompute.html",
    ], hrefs[:5]
    for result in results[:8]:
        snippet = result["snippet"]
        assert "Contents" not in snippet, snippet
        # an outline lists section numbers one after another: "11.1. Motivation ... 11.2. Where"
        assert not re.search(r"\d+\.\d+\. [^.]{0,80}?\d+\.\d+\. ", snippet), snippet
        if len(snippet) > 40:  # not a glossary term's own name
            assert len(re.findall(r"[a-z]+", snippet)) >= 8, snippet
