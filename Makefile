# Two commands do everything on a fresh machine with Python >= 3.10:
#   make book   -- set up .venv and build the HTML book into _build/html (zero warnings)
#   make test   -- set up .venv, lint, run the unit tests (and docstring examples), check every notebook
#                  with nbval, build the book and check it in a browser (axe-core too), build the student
#                  edition and check it, build both PDFs and grade an otter assignment
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
JB_FLAGS := -n -W --keep-going
# Where the Mooncake FAST'25 traces live (not committed; see README). CI points this at ../shared.
MOONCAKE_TRACES ?= $(abspath ../shared/data/mooncake-traces)
export MOONCAKE_TRACES
export PYTHONHASHSEED := 0

.PHONY: gpu-labs gpu-wheels setup book-setup lite-wheels mathjax axe rdma-libs system-deps book student lint test test-chains test-measure test-site test-unit test-notebooks test-book test-browser test-student browser-check student-check bench clean

# Wheels the in-browser (JupyterLite/Pyodide) kernel installs from the site itself:
# helpers built from this checkout, and ipywidgets with its pure-Python dependencies.
LITE_WHEELS := jupyterlite/pypi
LITE_PINS := ipywidgets==8.1.9 comm==0.2.3 jupyterlab_widgets==3.0.17

# Two environments in one .venv: the book's (`make book`, `make student`, `make pdf`:
# requirements-book.txt, no torch, no test toolchain) and, on top of it, the tests' (`make test`
# and every test target: requirements.txt). torch comes from PyTorch's CPU index: on Linux, PyPI's
# torch==2.13.0 is the CUDA build with several GB of nvidia-* wheels. Only torch itself comes from
# there (--no-deps: its few pure-Python dependencies come from PyPI with requirements.txt). A
# machine that cannot reach that index (an offline mirror, a local wheel folder) is not made to
# retry it: the index is asked first, and without it pip finds torch through its own configuration.
TORCH_VERSION := 2.13.0
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
BOOK_STAMP := $(VENV)/.book-stamp

$(BOOK_STAMP): requirements-book.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	@echo "installing the book's build tools (requirements-book.txt, about 600 MB on disk)..."
	$(BIN)/python -m pip install -q -r requirements-book.txt
	@# -qq: setuptools advises every editable install to mind same-named folders (a warning, not a fault)
	$(BIN)/python -m pip install -qq --no-deps -e .
	touch $(BOOK_STAMP)

book-setup: $(BOOK_STAMP)

$(STAMP): $(BOOK_STAMP) requirements.txt
	@echo "installing CPU torch $(TORCH_VERSION) and the test toolchain (requirements.txt, about 1.2 GB more on disk)..."
	if $(BIN)/python -c "import urllib.request; urllib.request.urlopen('$(TORCH_INDEX)/torch/', timeout=10)" 2>/dev/null; \
	then $(BIN)/python -m pip install -q --no-deps "torch==$(TORCH_VERSION)" --index-url $(TORCH_INDEX); \
	else echo "($(TORCH_INDEX) unreachable: torch from pip's own configuration)"; fi
	$(BIN)/python -m pip install -q -r requirements.txt
	touch $(STAMP)

setup: $(STAMP)

# Downloaded once per set of pins (the stamp's name hashes them); helpers' wheel is rebuilt only
# when the package's files change.
LITE_PINS_STAMP := $(LITE_WHEELS)/.pins-$(shell echo "$(LITE_PINS)" | md5sum | cut -c1-12)
LITE_HELPERS_STAMP := $(LITE_WHEELS)/.helpers

$(LITE_PINS_STAMP): | $(BOOK_STAMP)
	rm -f $(LITE_WHEELS)/.pins-* $(LITE_WHEELS)/ipywidgets-* $(LITE_WHEELS)/comm-* $(LITE_WHEELS)/jupyterlab_widgets-*
	mkdir -p $(LITE_WHEELS)
	$(BIN)/python -m pip download -q --no-deps --only-binary=:all: -d $(LITE_WHEELS) $(LITE_PINS)
	touch $@

$(LITE_HELPERS_STAMP): $(wildcard helpers/*.py helpers/*/*.py helpers/data/*) pyproject.toml | $(BOOK_STAMP)
	rm -rf $(LITE_WHEELS)/gpu_book_helpers-*.whl build  # setuptools' build/ would keep deleted modules
	mkdir -p $(LITE_WHEELS)
	$(BIN)/python -m pip wheel -q --no-deps -w $(LITE_WHEELS) .
	touch $@

lite-wheels: $(LITE_PINS_STAMP) $(LITE_HELPERS_STAMP)

# MathJax, served by the book itself so that pages typeset their maths offline: the npm
# package's es5/ bundle, fetched once (the stamp names the version) and checked against a
# pinned sha256. _config.yml's html_extra_path copies $(MATHJAX_SITE) into the site root,
# so the files land in _static/mathjax/ (mathjax_path: mathjax/tex-chtml.js). Not under
# _static/ itself: jupyter-book would link every .js file there into every page.
MATHJAX_VERSION := 3.2.2
MATHJAX_SHA256 := 1b9c0a1c44df864e915690558e72adb9cc5203360daefd385084ced3b6c64c09
MATHJAX_SITE := _mathjax/site
MATHJAX_STAMP := _mathjax/mathjax-$(MATHJAX_VERSION).stamp

$(MATHJAX_STAMP):
	rm -rf _mathjax && mkdir -p _mathjax/npm $(MATHJAX_SITE)/_static/mathjax
	cd _mathjax/npm && npm pack --silent mathjax@$(MATHJAX_VERSION) >/dev/null
	echo "$(MATHJAX_SHA256)  _mathjax/npm/mathjax-$(MATHJAX_VERSION).tgz" | sha256sum -c --quiet -
	tar -xzf _mathjax/npm/mathjax-$(MATHJAX_VERSION).tgz -C $(MATHJAX_SITE)/_static/mathjax --strip-components=2 package/es5
	tar -xzf _mathjax/npm/mathjax-$(MATHJAX_VERSION).tgz -C $(MATHJAX_SITE)/_static/mathjax --strip-components=1 package/LICENSE
	rm -rf _mathjax/npm
	touch $@

mathjax: $(MATHJAX_STAMP)

# axe-core, the accessibility engine tests/browser/test_accessibility.py injects into every page:
# the npm package's axe.min.js, fetched once (the stamp names the version) and checked against a
# pinned sha256, like MathJax. Only the tests use it; it never reaches the built site.
AXE_VERSION := 4.14.1
AXE_SHA256 := e6b0ce02b84d892e2e33e403485e7f3d6c29e2be6df65daf44d89ba564139745
AXE_DIR := _axe
AXE_STAMP := $(AXE_DIR)/axe-core-$(AXE_VERSION).stamp

$(AXE_STAMP):
	rm -rf $(AXE_DIR) && mkdir -p $(AXE_DIR)/npm
	cd $(AXE_DIR)/npm && npm pack --silent axe-core@$(AXE_VERSION) >/dev/null
	echo "$(AXE_SHA256)  $(AXE_DIR)/npm/axe-core-$(AXE_VERSION).tgz" | sha256sum -c --quiet -
	tar -xzf $(AXE_DIR)/npm/axe-core-$(AXE_VERSION).tgz -C $(AXE_DIR) --strip-components=1 package/axe.min.js package/LICENSE
	rm -rf $(AXE_DIR)/npm
	touch $@

axe: $(AXE_STAMP)

book: lite-wheels mathjax
	$(BIN)/jupyter-book build . $(JB_FLAGS)

# The student edition: the same book without exercise solutions, for instructors to publish.
# It reads its sources into the same doctrees as the book (solutions are dropped as pages are
# written: _ext/student_pages.py), so it starts from the book's when they exist; Sphinx re-reads
# any source changed since.
SEED_DOCTREES = if [ -d $(1)/.doctrees ]; then rm -rf $(2)/.doctrees && mkdir -p $(2) && cp -r $(1)/.doctrees $(2)/; fi

student: lite-wheels mathjax
	$(BIN)/python tools/student_edition.py config _build/student/_config.yml
	$(call SEED_DOCTREES,_build,_build/student/_build)
	$(BIN)/jupyter-book build . $(JB_FLAGS) --config _build/student/_config.yml --path-output _build/student
	$(BIN)/python tools/student_edition.py strip _build/student/_build/html

# ruff: lint and format check of the package, tests, tools, benchmarks and every notebook's code;
# mypy: type check of helpers (both configured in pyproject.toml)
LINTED := helpers tests tools benchmarks _ext chapters labs appendix

lint: setup
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)
	$(BIN)/mypy

# The RDMA and NUMA libraries the Mooncake wheel links against (its TCP transport loads them too):
# installed with apt-get when missing and running as root (CI), as chromium is below. Without
# them, and without root, tests/test_kvpool.py skips and lab 7 falls back to a socket.
RDMA_LIBS := libibverbs1 librdmacm1 libnuma1

rdma-libs:
	@if ! dpkg -s $(RDMA_LIBS) >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(RDMA_LIBS); \
	  else echo "warning: $(RDMA_LIBS) missing (not root, or no apt-get): the Mooncake tests will skip"; fi; \
	fi

# Unit tests and doctests. Tests marked `built` read what a build made (the student edition, the
# PDFs): the stage that builds those runs them, so that they never read a build still being written.
test-unit: setup rdma-libs
	$(BIN)/python -m pytest tests -q -p no:cacheprovider --ignore=tests/browser -m "not built"

# Chapters and the appendix: strict nbval (outputs must reproduce). Labs: nbval-lax (they measure).
test-chapters: setup rdma-libs
	$(BIN)/python -m pytest -q -p no:cacheprovider --nbval --nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-current-env chapters appendix

test-labs: setup rdma-libs
	$(BIN)/python -m pytest -q -p no:cacheprovider --nbval-lax --nbval-current-env labs

test-notebooks: test-chapters test-labs

test-book: book

# Debian's Chromium drives the browser tests (Playwright never downloads its own browser here).
CHROMIUM ?= /usr/bin/chromium
export CHROMIUM

$(CHROMIUM):
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium

# The checks alone, on a book already built (CI's book job builds once and checks that build).
browser-check: setup axe
	$(BIN)/python -m pytest tests/browser -q -p no:cacheprovider -k "not student_edition"

student-check: setup axe
	$(BIN)/python -m pytest tests/test_student_edition.py -q -p no:cacheprovider -m built
	$(BIN)/python -m pytest tests/browser/test_accessibility.py -q -p no:cacheprovider -k student_edition

# Both editions' checks in one run: a student page that is the book's page bar its title is judged
# on the book page's one load (tests/browser/page_visit.py), so each document is loaded once.
site-check: setup axe
	$(BIN)/python -m pytest tests/browser tests/test_student_edition.py -q -p no:cacheprovider

test-browser: test-book $(CHROMIUM)
	$(MAKE) --no-print-directory browser-check

test-student: student
	$(MAKE) --no-print-directory student-check

# For instructors (README, "Teaching with this book"): each chapter's and lab's exercises as an
# otter-grader assignment (student notebook, solutions notebook, Gradescope autograder zip).
.PHONY: assignments pdf test-pdf test-assignments test-teaching print-tex-packages site-check test-chapters test-labs

assignments: setup
	$(BIN)/python tools/assignments.py

# The printable edition: Jupyter Book's LaTeX builder typeset by xelatex (latexmk), the whole book
# and the student edition, into $(PDF_OUT)/_build/latex/book.pdf and $(PDF_OUT)/student/_build/latex/book.pdf.
# Like the HTML, both builds fail on any Sphinx warning (JB_FLAGS). The student PDF starts from the
# book PDF's doctrees (_ext/student_pages.py). TeX Live comes from Debian, installed when missing as
# chromium is (root in CI).
XELATEX ?= /usr/bin/xelatex
PDF_OUT ?= _build/pdf
TEX_PACKAGES := texlive-xetex texlive-latex-extra texlive-fonts-recommended lmodern fonts-freefont-otf latexmk poppler-utils

print-tex-packages:
	@echo $(TEX_PACKAGES)

$(XELATEX):
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(TEX_PACKAGES)

pdf: book-setup $(XELATEX)
	mkdir -p $(MATHJAX_SITE)  # html_extra_path must exist, though LaTeX never copies it (no npm needed)
	$(BIN)/jupyter-book build . $(JB_FLAGS) --builder pdflatex --path-output $(PDF_OUT)
	$(BIN)/python tools/student_edition.py config $(PDF_OUT)/student/_config.yml
	$(call SEED_DOCTREES,$(PDF_OUT)/_build,$(PDF_OUT)/student/_build)
	$(BIN)/jupyter-book build . $(JB_FLAGS) --builder pdflatex --config $(PDF_OUT)/student/_config.yml --path-output $(PDF_OUT)/student

# The PDF checks read what `make pdf` built. Grading runs otter on Chapter 4's solutions, its blank
# student notebook and a wrong answer.
test-pdf: pdf
	PDF_OUT=$(PDF_OUT) $(BIN)/python -m pytest tests/test_pdf.py -q -p no:cacheprovider

test-assignments: assignments
	TEST_TEACHING=1 $(BIN)/python -m pytest tests/test_assignments.py -q -p no:cacheprovider

test-teaching: test-pdf test-assignments

# System packages, installed one after another before anything runs in parallel (apt-get holds a lock).
system-deps: rdma-libs $(CHROMIUM) $(XELATEX)

# `make test`: set-up, lint and the system packages first, then two independent chains side by side,
# one per core of a small CI runner. Every stage prints its wall time, and the two chains together
# print theirs ("== make test-chains"), the figure to hold under 5 minutes. The chains are balanced by
# the stages' times on a 2-core machine:
#   measure: the labs (nbval-lax; they measure this machine), both PDFs and their checks, the otter
#            assignments and grading
#   site:    the book, the student edition (from the book's doctrees), both editions' browser and
#            accessibility checks (one page load per document), the unit tests and doctests, strict
#            nbval on the chapters and the appendix
# The labs run beside the site chain's work: on a CPU their timing checks use the thread's CPU time
# (helpers.bench.time_fn), which another process's load does not inflate.
STAGE = @t0=$$(date +%s); $(MAKE) --no-print-directory $(1); rc=$$?; \
	echo "== make $(1): $$(( $$(date +%s) - t0 )) s, exit $$rc"; exit $$rc

test:
	$(call STAGE,setup)
	$(call STAGE,lint)
	$(call STAGE,system-deps)
	$(call STAGE,test-chains)

test-chains: setup
	$(MAKE) --no-print-directory -j2 --output-sync=target test-measure test-site

test-measure: setup
	$(call STAGE,test-labs)
	$(call STAGE,test-pdf)
	$(call STAGE,test-assignments)

test-site: setup
	$(call STAGE,book)
	$(call STAGE,student)
	$(call STAGE,site-check)
	$(call STAGE,test-unit)
	$(call STAGE,test-chapters)

# A GPU run (README, "Running the labs on a GPU"). On a CUDA machine, `make gpu-labs` executes every
# lab and the benchmark with that machine's own Python and PyTorch (never .venv: its torch is the CPU
# build) inside a 540 s budget, each lab in its own process under a wall-clock cap, writes the
# executed notebooks and results into the tree and, when OUT is set, packs them into $(OUT) after
# every lab, so a job cut off by the machine's command limit keeps what finished (tools/gpu_labs.py).
# GPU_PY_VERSION must be the image's python3 (the H200 image: 3.12); the run warns if it is not. `make gpu-wheels`, run here, downloads into .whl/
# the notebook packages a bare GPU image lacks, for a machine that cannot reach PyPI; the packages
# such an image already has (GPU_IMAGE_HAS) are left out so that theirs stay in use; the Mooncake
# traces go along in .whl/mooncake-traces for Lab 6.
GPU_PYTHON ?= python3
GPU_PY_VERSION ?= 3.12
GPU_WHEEL_PINS := nbclient==0.11.0 nbformat==5.11.1 ipykernel==7.4.0 ipywidgets==8.1.9
GPU_IMAGE_HAS := attrs packaging psutil pygments python_dateutil typing_extensions
GPU_PLATFORMS := $(foreach v,manylinux_2_28 manylinux_2_27 manylinux_2_17 manylinux2014,--platform $(v)_x86_64)

gpu-labs:
	$(GPU_PYTHON) tools/gpu_labs.py run

gpu-wheels: setup
	rm -rf .whl && mkdir -p .whl
	$(BIN)/python -m pip download -q --only-binary=:all: --python-version $(GPU_PY_VERSION) \
		--implementation cp $(GPU_PLATFORMS) -d .whl $(GPU_WHEEL_PINS)
	cd .whl && for p in $(GPU_IMAGE_HAS); do rm -f $$p-*.whl; done
	if [ -d "$(MOONCAKE_TRACES)" ]; then cp -r "$(MOONCAKE_TRACES)" .whl/mooncake-traces; fi

bench: setup
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf _build

# The scoreboard (#35): AIConfigurator and MLSys·im beside the book's model on the validation points.
# They live in their own venv (never .venv, never make book); the tools' step is slow (tens of
# minutes), the book's column is refreshed in seconds. Writes helpers/data/published/scoreboard.csv.
SCOREBOARD_VENV := .venv-scoreboard
.PHONY: scoreboard scoreboard-book
$(SCOREBOARD_VENV)/.installed: requirements-scoreboard.txt
	test -x $(SCOREBOARD_VENV)/bin/python || $(PYTHON) -m venv $(SCOREBOARD_VENV)
	$(SCOREBOARD_VENV)/bin/python -m pip install -q -r requirements-scoreboard.txt
	touch $@

scoreboard: $(SCOREBOARD_VENV)/.installed $(BOOK_STAMP)
	$(BIN)/python tools/scoreboard.py book
	$(SCOREBOARD_VENV)/bin/python tools/scoreboard.py tools
	$(BIN)/python tools/scoreboard.py book

scoreboard-book: $(BOOK_STAMP)
	$(BIN)/python tools/scoreboard.py book
