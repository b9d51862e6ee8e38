# The two commands a newcomer needs: `make demo` and `make test` (see README.md). Both make and use a project
# virtualenv in .venv (ignored by git): Debian 12/13's system Python refuses `pip install` (PEP 668).
PY ?= python3
VENV ?= .venv
PORT ?= 8501
BIN := $(VENV)/bin

.PHONY: help venv install install-test demo test test-fast lint format typecheck screenshots

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-13s %s\n", $$1, $$2}'

$(BIN)/python:
	$(PY) -m venv $(VENV) || { echo "python3 -m venv failed: on Debian, apt-get install python3-venv"; exit 1; }
	$(BIN)/python -m pip install -q --upgrade pip

venv: $(BIN)/python  ## create the project virtualenv (.venv)

install: venv  ## install qrelkit into .venv (editable)
	$(BIN)/python -m pip install -q -e .

install-test: venv  ## install qrelkit with the test extras, Debian's chromium, and start PostgreSQL if needed
	bash scripts/system-deps.sh
	$(BIN)/python -m pip install -q -e '.[test]'

demo: install  ## build the demo project (SQLite ./qrelkit-demo.db) and serve it on http://127.0.0.1:8501 (make demo PORT=8502: another port)
	$(BIN)/qrelkit demo --port $(PORT)

test: install-test  ## ruff (lint and format), mypy and the whole suite (browser and PostgreSQL tests included)
	$(BIN)/python -m ruff check .
	$(BIN)/python -m ruff format --check .
	$(BIN)/python -m mypy
	$(BIN)/python -m pytest -q

test-fast: ## the inner loop: no browser, PostgreSQL or slow tests (needs `make install-test` once)
	$(BIN)/python -m pytest -q -m "not browser and not postgres and not slow"

lint:  ## ruff: lint and format check
	$(BIN)/python -m ruff check .
	$(BIN)/python -m ruff format --check .

format:  ## apply ruff's formatter (line length 120, as ruff check holds it)
	$(BIN)/python -m ruff format .

typecheck:  ## mypy on every package, no module exempt (tests/test_typecheck.py)
	$(BIN)/python -m mypy

screenshots: install-test  ## refresh README's docs/screenshots/*.png (tests alone write to a temporary folder)
	$(BIN)/python scripts/screenshots.py
