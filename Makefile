# Two entry points for a fresh clone: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Test workers: one per core (pytest-xdist), each taking whole files, since some
# files gather counts across their tests; `make test JOBS=0` runs in one process.
JOBS ?= auto

.PHONY: demo test lint typecheck unit quick bench clean

$(STAMP): pyproject.toml
	@echo "Setting up $(VENV): turnlog with its runtime dependencies (msgspec, click, rich)"
	@echo "and, for the tests, pytest, hypothesis, ruff, mypy, the provider SDKs and the agent"
	@echo "frameworks it integrates with. The first time this takes a minute or two."
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
	$(BIN)/pytest -n $(JOBS) --dist loadfile

test: lint typecheck unit

# The inner loop while developing: lint, then the tests that failed last
# time first, stopping at the first failure; no type check.
quick: $(STAMP)
	$(BIN)/ruff check $(wildcard src tests bench)
	$(BIN)/pytest -n $(JOBS) --dist loadfile -x --ff

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet --group bench
	$(BIN)/python bench/run.py; status=$$?; \
	$(BIN)/python bench/rescue_scan.py || status=1; \
	$(BIN)/python bench/cold_start.py --record || status=1; \
	exit $$status

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
