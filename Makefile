# Two entry points for a fresh clone: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Test workers: one per core (pytest-xdist), handed tests one by one as they
# free up; tests that share what one process gathered (a report over a file's
# cases, a module fixture) are listed in tests/conftest.py (ONE_WORKER) and go
# to one worker together. `make test JOBS=0` runs in one process.
JOBS ?= auto
DIST := --dist loadgroup

.PHONY: demo test test-slow lint typecheck unit quick bench clean

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

# The test processes, and the interpreters they start, keep their compiled
# bytecode between runs even where the environment turns it off
# (PYTHONDONTWRITEBYTECODE): without it each one compiles turnlog and the test
# modules again. The caches go to __pycache__ directories, which git ignores.
unit quick test-slow: export PYTHONDONTWRITEBYTECODE =

unit: $(STAMP)
	$(BIN)/pytest -n $(JOBS) $(DIST)

test: lint typecheck unit

# What `make test` leaves to CI (`-m slow`): the long kill campaigns, the
# benches at their quick sizes (with the bench group's peers) and the cases of
# the wide matrices beyond the sample `make test` runs (tests/conftest.py).
test-slow: $(STAMP)
	$(BIN)/python -m pip install --quiet --group bench
	$(BIN)/pytest -n $(JOBS) $(DIST) -m slow

# The inner loop while developing: lint, then the tests that failed last
# time first, stopping at the first failure; no type check.
quick: $(STAMP)
	$(BIN)/ruff check $(wildcard src tests bench)
	$(BIN)/pytest -n $(JOBS) $(DIST) -x --ff

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet --group bench
	$(BIN)/python bench/run.py; status=$$?; \
	$(BIN)/python bench/rescue_scan.py || status=1; \
	$(BIN)/python bench/cold_start.py --record || status=1; \
	$(BIN)/python bench/engine_guard.py --record || status=1; \
	$(BIN)/python bench/timeline.py --record || status=1; \
	exit $$status

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
