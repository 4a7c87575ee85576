# Every target works on a fresh Debian machine; .ci/run calls `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test system check bench clean

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "python3 is missing: apt-get install python3 python3-venv"; exit 2; }
	$(PYTHON) -m venv $(VENV) || { echo "venv failed: apt-get install python3-venv"; exit 2; }
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

## run: the service on the embedded defaults (SQLite file, simulated library) on 127.0.0.1:8000
run:
	bash scripts/system-deps.sh --runtime
	$(MAKE) --no-print-directory $(STAMP)
	$(BIN)/carousel db upgrade
	$(BIN)/carousel serve --host 127.0.0.1 --port 8000

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
