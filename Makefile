# trackway developer commands. Everything runs inside .venv, which `make` creates.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck bench venv clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# Reinstall when the project metadata changes or a module is added (strict editable mode
# links each file, so new modules need a refresh).
$(STAMP): $(BIN)/python pyproject.toml $(wildcard engine/*.py recorders/*.py tools/*.py agent/*.py trackway/*.py)
	$(BIN)/pip install -q -e '.[dev]' --config-settings editable_mode=strict
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/trackway demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# mypy reads the package through the editable link tree (the source folders are mapped into
# trackway.* there), so it runs from that tree rather than from the repository root.
typecheck: $(STAMP)
	cd build/__editable__.trackway-* && $(CURDIR)/$(BIN)/mypy --config-file $(CURDIR)/pyproject.toml -p trackway

# The suite runs every engine and agent test on asyncio and on trio, with a coverage floor
# (pyproject.toml [tool.coverage.report]).
test: lint typecheck
	$(BIN)/pytest --cov --cov-report=term

bench: $(STAMP)
	$(BIN)/pip install -q -e '.[dev,bench]' --config-settings editable_mode=strict
	$(BIN)/python benches/run_all.py

clean:
	rm -rf $(VENV) build *.egg-info .mypy_cache .ruff_cache .hypothesis
