# trackway developer commands. Everything runs inside .venv, which `make` creates.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Two install stamps: BASE_STAMP is the package alone (what `make demo` needs), STAMP the
# package with the dev, docs, ray and skos extras (everything else). Installing the extras also counts
# as the base install, so `make demo` after `make test` installs nothing, and `make test`
# after `make demo` adds the extras.
BASE_STAMP := $(VENV)/.installed-base
STAMP := $(VENV)/.installed
SOURCES := pyproject.toml $(wildcard engine/*.py engine/*/*.py recorders/*.py tools/*.py tools/*/*.py agent/*.py agent/*/*.py trackway/*.py trackway/*/*.py trackway/_viewer.*)
EDITABLE := --config-settings editable_mode=strict

.PHONY: demo test test-full test-compiled compiled lint typecheck layers docs bench bench-pure venv clean

$(BIN)/python:
	@echo "creating $(VENV) with $(PY)"
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# Reinstall when the project metadata changes or a module is added (strict editable mode
# links each file, so new modules need a refresh). The base install is not quiet: on a
# fresh clone it is the first thing a newcomer waits for, and pip's progress shows it moving.
$(BASE_STAMP): $(BIN)/python $(SOURCES)
	@echo "installing trackway and its runtime dependencies into $(VENV) (the demo needs nothing more)"
	$(BIN)/pip install -e . $(EDITABLE)
	touch $(BASE_STAMP)

$(STAMP): $(BIN)/python $(SOURCES)
	@echo "installing trackway with the dev, docs, ray and skos extras into $(VENV)"
	$(BIN)/pip install -q -e '.[dev,docs,ray,skos]' $(EDITABLE)
	touch $(STAMP) $(BASE_STAMP)

venv: $(STAMP)

demo: $(BASE_STAMP)
	$(BIN)/trackway demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# mypy reads the package through the editable link tree (the source folders are mapped into
# trackway.* there), so it runs from that tree rather than from the repository root.
typecheck: $(STAMP)
	cd build/__editable__.trackway-* && $(CURDIR)/$(BIN)/mypy --config-file $(CURDIR)/pyproject.toml -p trackway

# The layers (pyproject.toml [tool.importlinter], docs/architecture.md): a subpackage imports
# only the ones below it, for type hints too. Like mypy, it reads the editable link tree.
layers: $(STAMP)
	cd build/__editable__.trackway-* && $(CURDIR)/$(BIN)/lint-imports --no-cache $(CURDIR)/pyproject.toml

# The suite runs every engine and agent test on asyncio and on trio, with a coverage floor
# (pyproject.toml [tool.coverage.report]), spread over the machine's cores (pytest-xdist).
# The session starts a throwaway PostgreSQL from the local binaries when TRACKWAY_TEST_PG_DSN
# names none, and its summary says which services it had and how to get the others
# (tests/services.py). Property tests draw a quarter of their examples here; test-full (and
# CI, which sets TRACKWAY_TEST_FULL) draws them all.
PYTEST_WORKERS ?= auto
test: lint typecheck layers
	$(BIN)/pytest -n $(PYTEST_WORKERS) --cov --cov-report=term

test-full:
	TRACKWAY_TEST_FULL=1 $(MAKE) test

# The compiled build (docs/compiled.md): setup.py compiles the hot path with mypyc into a
# wheel (pip installs mypy into the build's own environment), unpacked into build/compiled.
# Put first on PYTHONPATH, that tree is what `import trackway` finds; the editable install
# stays pure, so `make test` measures coverage on the sources.
COMPILED := build/compiled
COMPILED_STAMP := $(COMPILED)/.built
ON_COMPILED := PYTHONPATH=$(CURDIR)/$(COMPILED)

$(COMPILED_STAMP): $(STAMP) setup.py $(SOURCES)
	@echo "compiling the hot path with mypyc into $(COMPILED) (a few minutes)"
	rm -rf build/wheels $(COMPILED)
	TRACKWAY_COMPILE=1 $(BIN)/pip wheel -q --no-deps -w build/wheels .
	$(BIN)/python -m zipfile -e build/wheels/trackway-*.whl $(COMPILED)
	touch $@

compiled: $(COMPILED_STAMP)

# The engine, recorder, tool and agent suites again, on the compiled build: what mypyc
# compiles must behave as the sources do (no coverage: it cannot see compiled code).
test-compiled: $(COMPILED_STAMP)
	$(ON_COMPILED) TRACKWAY_EXPECT_COMPILED=1 $(BIN)/pytest -n $(PYTEST_WORKERS) -p no:cov tests/engine tests/agent tests/recorders tests/tools

# The documentation site (mkdocs.yml) into site/, the API reference generated from the
# docstrings. --strict: any warning fails the build (a broken link or anchor, a page missing
# from the nav, a docstring mkdocstrings cannot render); tests/test_docs_site.py runs the same
# build under `make test`. NO_MKDOCS_2_WARNING silences mkdocs-material's end-of-life banner.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# The benches run on the compiled build (each says which build it measured); bench-pure on
# the sources.
bench: $(STAMP) $(COMPILED_STAMP)
	$(BIN)/pip install -q -e '.[dev,bench]' $(EDITABLE)
	$(ON_COMPILED) $(BIN)/python benches/run_all.py

bench-pure: $(STAMP)
	$(BIN)/pip install -q -e '.[dev,bench]' $(EDITABLE)
	$(BIN)/python benches/run_all.py

clean:
	rm -rf $(VENV) build *.egg-info .mypy_cache .ruff_cache .hypothesis site
