"""Plain-Jupyter notebooks: the book's notebooks with their MyST markup turned into what Jupyter shows.

The chapters, labs and appendix notebooks are written in MyST Markdown for Jupyter Book. Opened
anywhere else (Colab, Binder, JupyterLite, a downloaded copy) the markup would show as typed: every
exercise's solution in plain sight under its question, ``{footcite}`` roles, figures without their
image. :func:`convert` rewrites a notebook's Markdown (its Markdown cells and the Markdown its code
cells printed) into Markdown any Jupyter front end renders:

* an ``{exercise}`` becomes a headed question ("#### Exercise 2");
* a ``{solution}`` is folded in ``<details>`` (one click shows it) or, in the student edition,
  left out with its cell;
* admonitions (``{admonition}``, ``{note}``, ``{tip}``...) and ``{margin}`` notes become quoted
  blocks opened by their title; ``{dropdown}`` folds in ``<details>``;
* a ``{figure}`` becomes its image at an absolute address on the published book (Colab cannot
  read the repository's files), with its caption;
* a citation becomes "(Author, year)" and ``{footbibliography}`` the list of the works the
  notebook cites (from ``references.bib``); footnotes are numbered, their text gathered under
  "Notes" at the end;
* links to other pages of the book, and cross-references, point at the online book; other roles
  become their text; ``(label)=`` targets are dropped;
* the labs' "Open in Colab" badge opens the plain notebook on the branch the deploy workflow
  writes them to (:data:`NOTEBOOKS_BRANCH`).

:func:`calculator_notebook` cuts from a chapter the short notebook the page's live button opens:
its calculator cell and the cells it needs. :func:`leftover_markup` lists whatever markup survived
(the tests require none).

``python tools/plain_notebooks.py OUT_DIR [--student]`` writes every chapter, lab and appendix
notebook, converted, under ``OUT_DIR`` (the book's build does the same through
``_ext/live_notebooks.py``).
"""

from __future__ import annotations

import ast
import builtins
import copy
import glob
import json
import posixpath
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("chapters", "labs", "appendix")
NOTEBOOKS_BRANCH = "notebooks"
"""The git branch the deploy workflow writes the converted notebooks to (Colab and Binder open it)."""

_FENCE = re.compile(
    r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|:{3,})\{(?P<name>[A-Za-z][\w:-]*)\}[ \t]*(?P<arg>.*?)[ \t]*$"
)
_OPTION = re.compile(r"^[ \t]*:(?P<key>[\w-]+):[ \t]*(?P<value>.*)$")
_ROLE = re.compile(r"\{(?P<name>[A-Za-z][\w:-]*)\}`(?P<body>[^`]*)`")
_TITLED = re.compile(r"^(?P<title>.*?)\s*<(?P<target>[^<>]+)>$", re.S)
_TARGET_LINE = re.compile(r"(?m)^\([\w:.-]+\)=[ \t]*\n?")
_EQ_LABEL = re.compile(r"(\$\$)[ \t]*\([\w:.-]+\)[ \t]*$", re.M)
_FOOTNOTE_DEF = re.compile(r"^\[\^(?P<label>[^\]\s]+)\]:[ \t]?(?P<text>.*)$")
_FOOTNOTE_REF = re.compile(r"\[\^(?P<label>[^\]\s]+)\](?!:)")
_LINK = re.compile(
    r"(?P<bang>!?)\[(?P<text>[^\]]*)\]\((?P<url>[^)\s]*)(?P<title>\s+\"[^\"]*\")?\)"
)
_COLAB = re.compile(
    r"(https://colab\.research\.google\.com/github/[^/\s)]+/[^/\s)]+/blob/)[^/\s)]+/"
)
_BADGE_LINE = re.compile(r"^\[!\[Open In Colab\]\([^)]*\)\]\([^)]*\)[ \t]*\n*", re.M)
CITE_ROLES = {
    "footcite",
    "cite",
    "cite:p",
    "cite:t",
    "footcite:p",
    "footcite:t",
    "cite:ps",
}
ADMONITIONS = {
    "note": "Note",
    "tip": "Tip",
    "hint": "Hint",
    "important": "Important",
    "warning": "Warning",
    "caution": "Caution",
    "attention": "Attention",
    "danger": "Danger",
    "error": "Error",
    "seealso": "See also",
    "admonition": "Note",
    "margin": "Note",
    "sidebar": "Note",
    "topic": "Note",
    "epigraph": "",
}
CALCULATOR_CELL = re.compile(r"\bcalculators\.\w+\(")
"""A code cell that builds one of the book's calculators (``calculators.two_ceilings().show()``)."""


@dataclass
class Context:
    """What a conversion needs to know beyond the notebook itself.

    ``docname``: the page's path without suffix (``chapters/04_batching``); ``base_url``: the online
    book (links and images point there); ``citations``: citation key -> :class:`Reference`;
    ``student``: leave solutions out; ``root``: the repository (figures' files are looked up there);
    ``repository``: ``owner/name`` on GitHub (its Colab links are pointed at ``branch``).
    """

    docname: str
    base_url: str
    citations: dict[str, Reference] = field(default_factory=dict)
    student: bool = False
    root: Path = ROOT
    repository: str = ""
    branch: str = NOTEBOOKS_BRANCH


@dataclass(frozen=True)
class Reference:
    """One entry of ``references.bib``: how it is cited ("Williams et al., 2009") and listed."""

    short: str
    full: str


@dataclass
class _State:
    cited: list[str] = field(default_factory=list)
    footnotes: dict[str, str] = field(default_factory=dict)
    numbers: dict[str, int] = field(default_factory=dict)
    exercises: int = 0


def _plain_bib_text(text: str) -> str:
    """BibTeX's LaTeX (accents, escapes, protecting braces) as plain text."""
    from pybtex.richtext import Text

    text = re.sub(r"\\(texttt|emph|textit|textbf|url)\s*", "", text)
    return re.sub(r"\s+", " ", Text.from_latex(text).render_as("text")).strip()


def load_references(bib: Path) -> dict[str, Reference]:
    """Citation key -> :class:`Reference`, author-year as the book cites, from the BibTeX file ``bib``."""
    from pybtex.database import parse_file

    found = {}
    for key, entry in parse_file(str(bib)).entries.items():
        people = entry.persons.get("author") or entry.persons.get("editor") or []
        names = [_plain_bib_text(" ".join(p.last_names)) for p in people]
        fields = entry.fields
        if not names:
            who = _plain_bib_text(
                fields.get("organization") or fields.get("title", key)
            )
        elif len(names) == 1:
            who = names[0]
        elif len(names) == 2:
            who = f"{names[0]} and {names[1]}"
        else:
            who = f"{names[0]} et al."
        year = fields.get("year", "n.d.")
        everyone = (
            ", ".join(
                _plain_bib_text(
                    " ".join([*p.first_names, *p.middle_names, *p.last_names])
                )
                for p in people
            )
            or who
        )
        parts = [
            f"{everyone} ({year}).",
            f"*{_plain_bib_text(fields.get('title', key))}*.",
        ]
        venue = (
            fields.get("journal") or fields.get("booktitle") or fields.get("publisher")
        )
        if venue:
            parts.append(f"{_plain_bib_text(venue)}.")
        url = fields.get("url") or (
            f"https://doi.org/{fields['doi']}" if fields.get("doi") else ""
        )
        if url:
            parts.append(f"<{url}>")
        found[key] = Reference(short=f"{who}, {year}", full=" ".join(parts))
    return found


def _text(source: Any) -> str:
    return "".join(source) if isinstance(source, list) else str(source)


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" if line.strip() else ">" for line in text.splitlines())


def _details(summary: str, body: str) -> str:
    return f"<details>\n<summary>{summary}</summary>\n\n{body.strip()}\n\n</details>"


class _Converter:
    def __init__(self, ctx: Context, state: _State) -> None:
        self.ctx = ctx
        self.state = state
        self.base = ctx.base_url.rstrip("/") + "/" if ctx.base_url else ""

    # -- links -------------------------------------------------------------------------------
    def page_url(self, target: str) -> str:
        """The online book's address of ``target``, a path relative to the page (or ``#anchor``)."""
        path, _, anchor = target.partition("#")
        folder = posixpath.dirname(self.ctx.docname)
        page = (
            posixpath.normpath(posixpath.join(folder, path))
            if path
            else self.ctx.docname
        )
        fragment = f"#{anchor}" if anchor else ""
        stem, suffix = posixpath.splitext(page)
        if suffix in {".ipynb", ".md", ""}:
            return f"{self.base}{stem}.html{fragment}"
        return f"{self.base}{page}{fragment}"

    def link(self, match: re.Match[str]) -> str:
        url = match.group("url")
        bang, text, title = (
            match.group("bang"),
            match.group("text"),
            match.group("title") or "",
        )
        if self.base and url and not re.match(r"^[a-z][a-z0-9+.-]*:", url):
            if bang:
                folder = posixpath.dirname(self.ctx.docname)
                url = self.base + posixpath.normpath(posixpath.join(folder, url))
            else:
                url = self.page_url(url)
        return f"{bang}[{text}]({url}{title})"

    # -- roles -------------------------------------------------------------------------------
    def cite(self, keys: str) -> str:
        texts = []
        for key in (k.strip() for k in keys.split(",")):
            if not key:
                continue
            if key not in self.state.cited:
                self.state.cited.append(key)
            ref = self.ctx.citations.get(key)
            texts.append(ref.short if ref else key)
        return f"({'; '.join(texts)})"

    def role(self, match: re.Match[str]) -> str:
        name, body = match.group("name"), match.group("body")
        titled = _TITLED.match(body)
        title, target = (
            (titled.group("title"), titled.group("target")) if titled else (body, body)
        )
        if name in CITE_ROLES:
            return self.cite(body)
        if name == "math":
            return f"${body}$"
        if name == "doc":
            text = title if titled else posixpath.basename(body)
            return f"[{text}]({self.page_url(target)})" if self.base else text
        if name in {
            "func",
            "mod",
            "class",
            "meth",
            "attr",
            "obj",
            "py:func",
            "py:class",
        }:
            return f"`{title.lstrip('~')}`"
        if name in {"ref", "numref", "eq", "term", "prf:ref", "sub-ref"}:
            return title
        if name in {"kbd", "code", "literal", "file", "samp", "command"}:
            return f"`{title}`"
        if name in {"sup"}:
            return f"<sup>{title}</sup>"
        if name in {"sub"}:
            return f"<sub>{title}</sub>"
        return title

    def footnote_ref(self, match: re.Match[str]) -> str:
        label = match.group("label")
        number = self.state.numbers.setdefault(label, len(self.state.numbers) + 1)
        return f"<sup>{number}</sup>"

    # -- directives --------------------------------------------------------------------------
    def directive(self, name: str, arg: str, options: dict[str, str], body: str) -> str:
        body = self.markdown(body)
        if name == "exercise":
            self.state.exercises += 1
            title = f": {arg}" if arg and not re.match(r"^[\w-]+$", arg) else ""
            return f"#### Exercise {self.state.exercises}{title}\n\n{body.strip()}"
        if name == "solution":
            if self.ctx.student:
                return ""
            return _details("Solution (click to show)", body)
        if name == "dropdown" or (
            name in ADMONITIONS and "dropdown" in options.get("class", "")
        ):
            return _details(arg or ADMONITIONS.get(name, "Details"), body)
        if name in {"figure", "image"}:
            return self.figure(arg, options, body)
        if name == "footbibliography":
            return self.bibliography()
        if name in {"math"}:
            return f"$$\n{body.strip()}\n$$"
        if name in {"code-block", "code", "code-cell", "sourcecode"}:
            return f"```{arg}\n{body.rstrip()}\n```"
        if name in {"raw", "only", "toctree", "tableofcontents", "glossary"}:
            return body if name in {"only", "glossary"} else ""
        title = arg or ADMONITIONS.get(name, name.replace("-", " ").capitalize())
        head = f"**{title}**\n\n" if title else ""
        return _quote(head + body.strip())

    def figure(self, arg: str, options: dict[str, str], caption: str) -> str:
        path = arg
        if "*" in path or "?" in path:
            folder = self.ctx.root / posixpath.dirname(self.ctx.docname)
            found = sorted(glob.glob(str(folder / path)))
            order = {".svg": 0, ".png": 1, ".jpg": 2, ".jpeg": 2, ".gif": 3}
            found.sort(key=lambda p: order.get(Path(p).suffix.lower(), 9))
            path = (
                posixpath.join(posixpath.dirname(path), Path(found[0]).name)
                if found
                else path
            )
        if self.base:
            # Sphinx copies every figure to the site's _images/ under its own name.
            url = f"{self.base}_images/{posixpath.basename(path)}"
        else:
            url = path
        alt = options.get("alt", "").replace("]", ")").replace("[", "(")
        image = f"![{alt}]({url})"
        return f"{image}\n\n*{caption.strip()}*" if caption.strip() else image

    def bibliography(self) -> str:
        return references_markdown(self.state.cited, self.ctx.citations)

    def markdown(self, text: str) -> str:
        """``text`` with its directives, roles, targets, footnotes and links in plain Markdown."""
        lines = text.split("\n")
        out: list[str] = []
        i = 0
        while i < len(lines):
            m = _FENCE.match(lines[i])
            if not m:
                out.append(lines[i])
                i += 1
                continue
            fence, indent = m.group("fence"), m.group("indent")
            closing = re.compile(
                rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$"
            )
            j = i + 1
            options: dict[str, str] = {}
            while j < len(lines) and (o := _OPTION.match(lines[j])):
                options[o.group("key")] = o.group("value")
                j += 1
            start = j
            while j < len(lines) and not closing.match(lines[j]):
                j += 1
            body = "\n".join(
                line[len(indent) :] if line.startswith(indent) else line
                for line in lines[start:j]
            )
            converted = self.directive(m.group("name"), m.group("arg"), options, body)
            out.extend(
                indent + line if line else line for line in converted.split("\n")
            )
            i = j + 1
        text = "\n".join(out)
        text = _TARGET_LINE.sub("", text)
        text = _EQ_LABEL.sub(r"\1", text)
        text = self.footnote_definitions(text)
        text = _FOOTNOTE_REF.sub(self.footnote_ref, text)
        text = _ROLE.sub(self.role, text)
        text = _COLAB.sub(rf"\g<1>{self.ctx.branch}/", text)
        return _LINK.sub(self.link, text)

    def footnote_definitions(self, text: str) -> str:
        """Move each ``[^label]: ...`` definition out of ``text`` into the state."""
        lines = text.split("\n")
        kept: list[str] = []
        i = 0
        while i < len(lines):
            m = _FOOTNOTE_DEF.match(lines[i])
            if not m:
                kept.append(lines[i])
                i += 1
                continue
            body = [m.group("text")]
            i += 1
            while i < len(lines) and (
                lines[i].startswith(("  ", "\t"))
                or (
                    not lines[i].strip()
                    and i + 1 < len(lines)
                    and lines[i + 1].startswith(("  ", "\t"))
                )
            ):
                body.append(lines[i].strip())
                i += 1
            note = _ROLE.sub(self.role, "\n".join(body).strip())  # a citation in a note
            self.state.footnotes[m.group("label")] = _LINK.sub(self.link, note)
        return "\n".join(kept)


def references_markdown(keys: list[str], citations: dict[str, Reference]) -> str:
    """The reference list of the works ``keys`` (in the order cited), one bullet each."""
    entries = [citations[k].full if k in citations else k for k in keys]
    return "\n".join(f"- {e}" for e in entries) if entries else ""


def _cited_keys(nb: dict[str, Any]) -> list[str]:
    keys: list[str] = []
    for text in _markdown_texts(nb):
        for m in _ROLE.finditer(text):
            if m.group("name") in CITE_ROLES:
                for key in (k.strip() for k in m.group("body").split(",")):
                    if key and key not in keys:
                        keys.append(key)
    return keys


def _markdown_texts(nb: dict[str, Any]) -> list[str]:
    """The Markdown of ``nb``: its Markdown cells and the ``text/markdown`` its code cells printed."""
    texts = []
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "markdown":
            texts.append(_text(cell.get("source", "")))
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "text/markdown" in data:
                texts.append(_text(data["text/markdown"]))
    return texts


def convert(nb: dict[str, Any], ctx: Context) -> dict[str, Any]:
    """A copy of the notebook ``nb`` (nbformat 4 JSON) whose Markdown reads right in plain Jupyter."""
    nb = copy.deepcopy(nb)
    state = _State(cited=_cited_keys(nb))
    converter = _Converter(ctx, state)
    has_bibliography = any("{footbibliography}" in t for t in _markdown_texts(nb))
    cells = []
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "markdown":
            source = _text(cell.get("source", ""))
            if ctx.student:
                source = _BADGE_LINE.sub("", source)
            text = converter.markdown(source)
            if not text.strip():
                continue  # a cell that held only a solution (student edition) or a target
            cell["source"] = text
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "text/markdown" in data:
                data["text/markdown"] = converter.markdown(_text(data["text/markdown"]))
        cells.append(cell)
    extra = []
    if state.numbers:
        notes = [
            f"{n}. {state.footnotes.get(label, '')}"
            for label, n in sorted(state.numbers.items(), key=lambda item: item[1])
        ]
        extra.append("## Notes\n\n" + "\n".join(notes))
    if state.cited and not has_bibliography:
        extra.append(
            "## References\n\n" + references_markdown(state.cited, ctx.citations)
        )
    cells += [
        {"cell_type": "markdown", "metadata": {}, "source": text} for text in extra
    ]
    for index, cell in enumerate(cells):
        if "id" in cell or nb.get("nbformat_minor", 0) >= 5:
            cell.setdefault("id", f"plain-{index}")
    nb["cells"] = cells
    return nb


def leftover_markup(nb: dict[str, Any]) -> list[str]:
    """Every piece of book markup left in ``nb``'s Markdown (directive fences, roles, option lines,
    ``(label)=`` targets, footnote syntax); empty for a plain notebook."""
    found = []
    for text in _markdown_texts(nb):
        for line in text.split("\n"):
            if _FENCE.match(line):
                found.append(f"directive: {line.strip()}")
            elif re.match(
                r"^[ \t>]*:(class|label|name|alt|target|nonumber|width|align):", line
            ):
                found.append(f"option: {line.strip()}")
            elif re.match(r"^\([\w:.-]+\)=\s*$", line):
                found.append(f"target: {line.strip()}")
        found += [f"role: {m.group(0)}" for m in _ROLE.finditer(text)]
        found += [
            f"footnote: {m.group(0)}" for m in re.finditer(r"\[\^[^\]\s]+\]", text)
        ]
    return found


_DETAILS = re.compile(r"(?s)<details>.*?</details>")


def visible_markdown(nb: dict[str, Any]) -> str:
    """All of ``nb``'s Markdown a reader sees without a click (folded ``<details>`` taken out)."""
    return "\n".join(_DETAILS.sub("", text) for text in _markdown_texts(nb))


# -- the live button's notebook ---------------------------------------------------------------


def _names(source: str) -> tuple[set[str], set[str]] | None:
    """(names the code defines, names it reads and does not define) or None if it does not parse."""
    code = "\n".join(
        line[: len(line) - len(line.lstrip())] + "pass"
        if line.lstrip().startswith(("%", "!"))
        else line
        for line in source.split("\n")
    )
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    defined: set[str] = set()
    read: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (defined if isinstance(node.ctx, (ast.Store, ast.Del)) else read).add(
                node.id
            )
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            defined.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
    # A name the cell itself defines is taken as its own (``x = x + 1`` would read an earlier x).
    return defined, read - defined - set(dir(builtins))


def calculator_notebook(
    nb: dict[str, Any], ctx: Context, title: str = ""
) -> dict[str, Any] | None:
    """The notebook a chapter's live button opens: a title, the chapter's set-up cell, the cells
    its first calculator needs (found from the names the calculator cell reads) and the
    calculator; None if the chapter has none. Outputs are cleared: the reader runs it."""
    cells = nb.get("cells", [])
    code = [(i, c) for i, c in enumerate(cells) if c.get("cell_type") == "code"]
    target = next(
        (i for i, c in code if CALCULATOR_CELL.search(_text(c.get("source", "")))), None
    )
    if target is None:
        return None
    parsed = _names(_text(cells[target]["source"]))
    needed = parsed[1] if parsed else set()
    chosen = {target}
    for i, cell in reversed([(i, c) for i, c in code if i < target]):
        source = _text(cell.get("source", ""))
        names = _names(source)
        if source.lstrip().startswith("# Setup:"):
            chosen.add(i)
            continue
        if names is None or names[0] & needed:
            chosen.add(i)
            if names:
                needed = (needed - names[0]) | names[1]
    heading = next(
        (
            m.group(1).strip()
            for c in cells
            if c.get("cell_type") == "markdown"
            for m in [re.search(r"(?m)^#\s+(.+)$", _text(c.get("source", "")))]
            if m
        ),
        title or ctx.docname,
    )
    page = posixpath.basename(ctx.docname) + ".ipynb"
    intro = (
        f"# {heading}: the calculator, live\n\n"
        "Run every cell (**Run → Run All Cells**, or press ▶ on each): the cells above the "
        "calculator set up what it needs, and its controls then recompute the figure and numbers.\n\n"
        f"The whole chapter, runnable too, is [{page}]({page})"
        + (
            f"; to read it, [the online book]({ctx.base_url.rstrip('/')}/{ctx.docname}.html)."
            if ctx.base_url
            else "."
        )
    )
    out = copy.deepcopy(nb)
    picked = []
    for i in sorted(chosen):
        cell = copy.deepcopy(cells[i])
        cell["outputs"] = []
        cell["execution_count"] = None
        picked.append(cell)
    out["cells"] = [
        {
            "cell_type": "markdown",
            "id": "calculator-intro",
            "metadata": {},
            "source": intro,
        },
        *picked,
    ]
    return out


def calculator_name(docname: str) -> str:
    """The live notebook's path for page ``docname`` (``chapters/04_batching.calculator.ipynb``)."""
    return f"{docname}.calculator.ipynb"


# -- the whole book ----------------------------------------------------------------------------


def notebooks(root: Path = ROOT) -> list[Path]:
    """Every chapter, lab and appendix notebook (relative to ``root``)."""
    return sorted(
        p.relative_to(root)
        for folder in FOLDERS
        for p in (root / folder).glob("*.ipynb")
    )


def book_settings(root: Path = ROOT) -> tuple[str, str]:
    """The online book's address and the repository's ``owner/name``, from ``_config.yml``."""
    import yaml

    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    base = (config.get("html") or {}).get("baseurl", "")
    url = (config.get("repository") or {}).get("url", "")
    return base, url.split("github.com/", 1)[-1].rstrip("/")


def write_all(
    out: Path, *, student: bool = False, root: Path = ROOT, base_url: str | None = None
) -> list[Path]:
    """Convert every notebook of the book into ``out`` (same relative paths); return what was written.

    In the student edition (``student``) solutions are left out and each check cell that computes
    its answer becomes the edition's digest check (``tools/student_edition.py``).
    """
    base, repository = book_settings(root)
    citations: dict[str, Reference] = {}
    for bib in sorted(root.glob("*.bib")):
        citations.update(load_references(bib))
    rewrites: dict[str, str] = {}
    if student:
        if str(root) not in sys.path:
            sys.path.insert(0, str(root))
        from tools.student_edition import check_rewrites

        rewrites = check_rewrites()
    written = []
    for path in notebooks(root):
        nb = json.loads((root / path).read_text(encoding="utf-8"))
        for cell in nb.get("cells", []):
            if (
                cell.get("cell_type") == "code"
                and _text(cell.get("source", "")) in rewrites
            ):
                cell["source"] = rewrites[_text(cell["source"])]
        ctx = Context(
            docname=path.with_suffix("").as_posix(),
            base_url=base if base_url is None else base_url,
            citations=citations,
            student=student,
            root=root,
            repository=repository,
        )
        plain = convert(nb, ctx)
        target = out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(
            json.dumps(plain, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        written.append(target)
        live = calculator_notebook(plain, ctx)
        if live is not None:
            target = out / calculator_name(ctx.docname)
            target.write_text(
                json.dumps(live, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
            )
            written.append(target)
    return written


if __name__ == "__main__":
    args = sys.argv[1:]
    if not args or args[0].startswith("-") or set(args[1:]) - {"--student"}:
        sys.exit(__doc__)
    done = write_all(Path(args[0]), student="--student" in args)
    print(f"wrote {len(done)} notebooks under {args[0]}")
