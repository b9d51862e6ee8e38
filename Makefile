# The two commands a newcomer needs: `make demo` and `make test` (see README.md).
PY ?= python3

.PHONY: install install-test demo test lint screenshots

install:
	$(PY) -m pip install -q -e .

install-test:
	bash scripts/system-deps.sh
	$(PY) -m pip install -q -e '.[test]'

demo: install
	qrelkit demo

test: install-test
	$(PY) -m ruff check .
	$(PY) -m pytest -q

lint:
	$(PY) -m ruff check .

screenshots: install-test  # refresh README's docs/screenshots/*.png (tests alone write to a temporary folder)
	$(PY) scripts/screenshots.py
