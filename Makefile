# Every target works on a fresh Debian machine; .ci/run calls `make test`.
PYTHON  ?= python3
PORT    ?=
VENV    := .venv
BIN     := $(VENV)/bin
RUNTIME := $(VENV)/.runtime
STAMP   := $(VENV)/.installed

.PHONY: run test system check bench clean

$(BIN)/python:
	@command -v $(PYTHON) >/dev/null || { echo "python3 is missing: apt-get install python3 python3-venv"; exit 2; }
	$(PYTHON) -m venv $(VENV) || { echo "venv failed: apt-get install python3-venv"; exit 2; }

# what running the service needs, and nothing more
$(RUNTIME): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $(RUNTIME)

# everything: the runtime and the development tools (tests, linters, type checker)
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(RUNTIME) $(STAMP)

## run: the service on the embedded defaults (SQLite in the data directory, simulated library) on 127.0.0.1,
##      port PORT (`make run PORT=8080`), else the port setting (CAROUSEL_PORT, default 8000)
run:
	bash scripts/system-deps.sh --runtime
	$(MAKE) --no-print-directory $(RUNTIME)
	$(BIN)/carousel db upgrade
	$(BIN)/carousel serve --host 127.0.0.1$(if $(PORT), --port $(PORT))

## system: Debian packages the tests need (gfal2, xrootd, PostgreSQL when none answers on 127.0.0.1:5432)
system:
	bash scripts/system-deps.sh

## test: system packages, lint, types, architecture contracts, then the whole suite on PostgreSQL and SQLite
test: system $(STAMP) check
	# bytecode written once: with PYTHONDONTWRITEBYTECODE every `carousel` the tests start compiles the package again
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/pytest -n 2 --dist loadgroup -p no:cacheprovider

check: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) var .mypy_cache .ruff_cache .pytest_cache
