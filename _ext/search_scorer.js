// The book's search ranking (html_search_scorer; Sphinx puts this into language_data.js, after
// searchtools.js). Review R23: prose pages rank above the API reference's entries, a page or
// section whose title holds the whole query ranks first, and result snippets show no raw TeX.
// Best bets (R4-6): for a query that names one of the book's central ideas, the chapters that teach
// it come first, in this order, whatever the word counts say (the glossary and later chapters
// mention "KV cache" as often as Chapter 7, which is about moving one). Queries are compared
// lower-cased, with hyphens and repeated spaces made single spaces.
const BEST_BETS = {
  "kv cache": ["chapters/06_transformer_inference", "chapters/07_transfer_or_recompute"],
  "roofline": ["chapters/02_roofline", "chapters/03_below_roofline"],
  "ridge point": ["chapters/01_two_ceilings", "chapters/02_roofline"],
  "critical batch": ["chapters/04_batching"],
  "batching": ["chapters/04_batching"],
  "prefill": ["chapters/06_transformer_inference", "chapters/08_latency_targets"],
  "transfer or recompute": ["chapters/07_transfer_or_recompute"],
  "disaggregation": ["chapters/08_latency_targets", "chapters/09_disaggregated_memory"],
  "disaggregated memory": ["chapters/09_disaggregated_memory"],
  "attention offload": ["chapters/10_attention_offload"],
  "tensor parallelism": ["chapters/12_many_gpus"],
};
const bestBet = (query, docname) => {
  const key = query.replace(/[-_]+/g, " ").replace(/\s+/g, " ").trim();
  const pages = BEST_BETS[key] || BEST_BETS[key.replace(/s$/, "")] || [];
  const rank = pages.indexOf(docname);
  return rank < 0 ? 0 : 200 - 10 * rank;
};

var Scorer = {
  score: (result) => {
    const [docname, title, anchor, descr, score] = result;
    let query = "";
    try {
      query = (new URLSearchParams(window.location.search).get("q") || "").trim().toLowerCase();
    } catch (error) {}
    let adjusted = score;
    if (query && `${title} ${descr || ""}`.toLowerCase().includes(query)) adjusted += 20;
    if (query) adjusted += bestBet(query, docname);
    // below every prose result: index entries of the API score up to 100
    if (docname === "appendix/api" || docname.startsWith("appendix/api/")) adjusted -= 200;
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
    // ... and the page's own outlines (the print-only table of contents and the "Contents"
    // sidebar, both inside the main element), whose "Contents 11.1 ..." made snippets (R4-6).
    const outlines = "#jb-print-docs-body, .onlyprint, .bd-sidebar-secondary, .bd-toc, .bd-header-article";
    page.querySelectorAll(`.math, mjx-container, .cell_input, .toctree-wrapper, ${outlines}`).forEach((el) => {
      el.replaceWith(page.createTextNode(" … "));
    });
    return pageText(page.documentElement.outerHTML, anchor);
  };
  Search.bookSnippets = true;
}
