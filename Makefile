# Stateroom: `make demo` to try it, `make test` to test it.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
DEMO_STAMP := $(VENV)/.demo-stamp
# `make demo` serves on 127.0.0.1:$(PORT); DEMO_ADDR sets host and port together.
PORT ?= 8000
DEMO_ADDR ?= 127.0.0.1:$(PORT)
PYTEST_ARGS ?=

.PHONY: help install demo test test-pooler test-sdk-range lint format bench stop-db clean

help:
	@echo "make demo     - install, start PostgreSQL (embedded unless DATABASE_URL), migrate, load demo data, serve"
	@echo "make test     - install and run the whole test suite"
	@echo "make test-sdk-range - tests/runtime/agents on the lowest and the newest supported openai-agents"
	@echo "make lint     - ruff check, format check, the layering contracts (lint-imports), code size (scripts/code_size.py)"
	@echo "make bench    - benchmarks, results in bench/results/"
	@echo "make stop-db  - stop the embedded PostgreSQL (it keeps running between commands)"

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Stateroom needs Python >= 3.11 (set PYTHON=python3.11)")'
	$(PYTHON) -m venv $(VENV)

# The client is a distribution of its own (stateroom_client/pyproject.toml) that the
# server depends on: install it editable first, in the same pip call.
# The demo needs the app, the Agents SDK and LangGraph only; tests need the dev tools too.
$(DEMO_STAMP): pyproject.toml stateroom_client/pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ./stateroom_client -e ".[agents,langgraph]"
	touch $@

# The dev install also fetches the SDK's own session tests (the adapter's conformance
# suite, docs/sdk-conformance.md) from the SDK's sdists into the venv
# (.venv/stateroom-sdk-tests/), not the checkout; a failed fetch fails here.
$(STAMP): pyproject.toml stateroom_client/pyproject.toml scripts/fetch_sdk_tests.py | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ./stateroom_client -e ".[dev]"
	$(BIN)/python scripts/fetch_sdk_tests.py
	touch $@ $(DEMO_STAMP)

install: $(STAMP)

# STATEROOM_DEMO=1: local defaults with DEBUG off (the product's own 404 and 500 pages).
demo: $(DEMO_STAMP)
	STATEROOM_DEMO=1 $(BIN)/python manage.py migrate --noinput
	STATEROOM_DEMO=1 $(BIN)/python manage.py load_demo
	STATEROOM_DEMO=1 $(BIN)/python manage.py run_demo --addr $(DEMO_ADDR)

# Chromium (browser tests) is installed where it can be; otherwise one line says how.
test: install
	@scripts/test_prerequisites.sh
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# The API, stores, console pages, concurrency races and tenant isolation again, every
# connection through PgBouncer in pool_mode=transaction started by the run
# (pytest --through-pooler, docs/scaling.md).
POOLER_SUBSET = tests/pooler/test_run_through_pooler.py \
	tests/sessions/test_api.py tests/runs/test_api.py tests/tasks/test_api.py \
	tests/approvals/test_api.py tests/effects/test_api.py \
	tests/sessions/test_store.py tests/runs/test_store.py tests/tasks/test_store.py \
	tests/approvals/test_store.py tests/effects/test_store.py \
	tests/sessions/test_concurrency.py tests/runs/test_concurrency.py \
	tests/tasks/test_concurrency.py tests/approvals/test_concurrency.py \
	tests/effects/test_concurrency.py tests/effects/test_claim_concurrency.py \
	tests/approvals/test_void_concurrency.py tests/actions/test_run_control_api_concurrency.py \
	tests/actions/test_hot_request_queries.py \
	tests/tenancy/test_tenancy.py tests/tenancy/test_bearer.py tests/tenancy/test_known_tokens.py \
	tests/console/test_query_counts.py tests/console/sessions tests/console/audit \
	tests/console/approvals

test-pooler: install
	@scripts/test_prerequisites.sh
	$(BIN)/python -m pytest --through-pooler -m "not browser" $(POOLER_SUBSET) $(PYTEST_ARGS)

# tests/runtime/agents (and the SDK's own session tests) on both ends of the client's
# openai-agents range, each in a venv of its own (.venv/sdk-range/).
test-sdk-range:
	PYTHON=$(PYTHON) PYTEST_ARGS="$(PYTEST_ARGS)" scripts/test_sdk_range.sh

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-cache
	$(BIN)/python scripts/code_size.py

format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

bench: install
	$(BIN)/python -m bench $(BENCH_ARGS)

stop-db:
	@if [ -x $(BIN)/python ]; then $(BIN)/python -m stateroom.database stop; fi

clean: stop-db
	rm -rf $(VENV) .stateroom staticfiles
