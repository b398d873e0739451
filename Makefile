# Two entry points for a fresh clone: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck unit bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=25.1"
	$(BIN)/python -m pip install --quiet -e . --group dev
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/turnlog demo

lint: $(STAMP)
	$(BIN)/ruff check $(wildcard src tests bench)
	$(BIN)/ruff format --check $(wildcard src tests bench)

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest

test: lint typecheck unit

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet --group bench
	$(BIN)/python bench/run.py; status=$$?; $(BIN)/python bench/rescue_scan.py && exit $$status

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
