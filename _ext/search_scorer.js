// The book's search ranking (html_search_scorer; Sphinx puts this into language_data.js, after
// searchtools.js). Review R23: prose pages rank above the API reference's entries, a page or
// section whose title holds the whole query ranks first, and result snippets show no raw TeX.
var Scorer = {
  score: (result) => {
    const [docname, title, anchor, descr, score] = result;
    let query = "";
    try {
      query = (new URLSearchParams(window.location.search).get("q") || "").trim().toLowerCase();
    } catch (error) {}
    let adjusted = score;
    if (query && `${title} ${descr || ""}`.toLowerCase().includes(query)) adjusted += 20;
    // below every prose result: index entries of the API score up to 100
    if (docname === "appendix/api") adjusted -= 200;
    return adjusted;
  },
  objNameMatch: 11,
  objPartialMatch: 6,
  objPrio: { 0: 15, 1: 5, 2: -5 },
  objPrioDefault: 0,
  title: 15,
  partialTitle: 7,
  term: 5,
  partialTerm: 2,
};

// Snippets are cut from each page's text: its formulas (TeX until MathJax typesets them) and
// hidden code are left out of it.
if (typeof Search !== "undefined" && Search.htmlToText && !Search.bookSnippets) {
  const pageText = Search.htmlToText;
  Search.htmlToText = (htmlString, anchor) => {
    const page = new DOMParser().parseFromString(htmlString, "text/html");
    page.querySelectorAll(".math, mjx-container, .cell_input, .toctree-wrapper").forEach((el) => {
      el.replaceWith(page.createTextNode(" … "));
    });
    return pageText(page.documentElement.outerHTML, anchor);
  };
  Search.bookSnippets = true;
}
