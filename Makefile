# Two commands do everything on a fresh machine with Python >= 3.10:
#   make book   -- set up .venv and build the HTML book into _build/html (zero warnings)
#   make test   -- set up .venv, lint, run the unit tests (and docstring examples), check every notebook
#                  with nbval, build the book and check it in a browser, build the student edition
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
JB_FLAGS := -n -W --keep-going
# Where the Mooncake FAST'25 traces live (not committed; see README). CI points this at ../shared.
MOONCAKE_TRACES ?= $(abspath ../shared/data/mooncake-traces)
export MOONCAKE_TRACES
export PYTHONHASHSEED := 0

.PHONY: gpu-labs gpu-wheels setup lite-wheels mathjax book student lint test test-unit test-notebooks test-book test-browser test-student browser-check student-check bench clean

# Wheels the in-browser (JupyterLite/Pyodide) kernel installs from the site itself:
# helpers built from this checkout, and ipywidgets with its pure-Python dependencies.
LITE_WHEELS := jupyterlite/pypi
LITE_PINS := ipywidgets==8.1.9 comm==0.2.3 jupyterlab_widgets==3.0.17

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -r requirements.txt
	$(BIN)/python -m pip install -q --no-deps -e .
	touch $(STAMP)

setup: $(STAMP)

# Downloaded once per set of pins (the stamp's name hashes them); helpers' wheel is rebuilt only
# when the package's files change.
LITE_PINS_STAMP := $(LITE_WHEELS)/.pins-$(shell echo "$(LITE_PINS)" | md5sum | cut -c1-12)
LITE_HELPERS_STAMP := $(LITE_WHEELS)/.helpers

$(LITE_PINS_STAMP): | $(STAMP)
	rm -f $(LITE_WHEELS)/.pins-* $(LITE_WHEELS)/ipywidgets-* $(LITE_WHEELS)/comm-* $(LITE_WHEELS)/jupyterlab_widgets-*
	mkdir -p $(LITE_WHEELS)
	$(BIN)/python -m pip download -q --no-deps --only-binary=:all: -d $(LITE_WHEELS) $(LITE_PINS)
	touch $@

$(LITE_HELPERS_STAMP): $(wildcard helpers/*.py helpers/data/*) pyproject.toml | $(STAMP)
	rm -f $(LITE_WHEELS)/gpu_book_helpers-*.whl
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

book: lite-wheels mathjax
	$(BIN)/jupyter-book build . $(JB_FLAGS)

# The student edition: the same book without exercise solutions, for instructors to publish.
student: lite-wheels mathjax
	$(BIN)/python tools/student_edition.py config _build/student/_config.yml
	$(BIN)/jupyter-book build . $(JB_FLAGS) --config _build/student/_config.yml --path-output _build/student
	$(BIN)/python tools/student_edition.py strip _build/student/_build/html

# ruff: lint and format check of the package, tests, tools, benchmarks and every notebook's code (pyproject.toml)
LINTED := helpers tests tools benchmarks _ext chapters labs appendix

lint: setup
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)

test-unit: setup
	$(BIN)/python -m pytest tests -q -p no:cacheprovider --ignore=tests/browser

test-notebooks: setup
	$(BIN)/python -m pytest -q -p no:cacheprovider --nbval --nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-current-env chapters appendix
	$(BIN)/python -m pytest -q -p no:cacheprovider --nbval-lax --nbval-current-env labs

test-book: book

# Debian's Chromium drives the browser tests (Playwright never downloads its own browser here).
CHROMIUM ?= /usr/bin/chromium
export CHROMIUM

$(CHROMIUM):
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium

# The checks alone, on a book already built (CI's book job builds once and checks that build).
browser-check: setup
	$(BIN)/python -m pytest tests/browser -q -p no:cacheprovider

student-check: setup
	$(BIN)/python -m pytest tests/test_student_edition.py -q -p no:cacheprovider -k built

test-browser: test-book $(CHROMIUM)
	$(MAKE) --no-print-directory browser-check

test-student: student
	$(MAKE) --no-print-directory student-check

test: lint test-unit test-notebooks test-browser test-student

# A GPU run (README, "Running the labs on a GPU"). On a CUDA machine, `make gpu-labs` executes every
# lab and the benchmark with that machine's own Python and PyTorch (never .venv: its torch is the CPU
# build) inside a 540 s budget, writes the executed notebooks and results into the tree and, when OUT
# is set, packs them into $(OUT) (tools/gpu_labs.py). `make gpu-wheels`, run here, downloads into .whl/
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
