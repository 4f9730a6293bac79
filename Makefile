# Two set-up commands (see README):  `make run`  and  `make test`.
# Both create .venv from scratch when needed and install the pinned set.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
BIN    := $(VENV)/bin
PORT   ?= 2024
STAMP  := $(VENV)/.installed

.PHONY: install run test lint test-unit test-integration test-matrix test-load test-versions test-public fuzz bench clean

$(STAMP): pyproject.toml migrations_playbook/pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=24"
	@# The root project depends on the playbook distribution by name; it comes from its folder.
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ./migrations_playbook -e ".[test]"
	@# The PostgreSQL tests start a server of their own: from PATH or Debian's package when
	@# the machine has one, else from the pinned pgserver wheel (tests/postgres_server.py).
	if ! command -v initdb >/dev/null 2>&1 && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
		$(BIN)/python -m pip install --quiet -c constraints.txt -e ./migrations_playbook -e ".[test,postgres-server]"; fi
	touch $(STAMP)

install: $(STAMP)

## Start Agent Server with every graph on the offline model (no keys, no internet).
run: $(STAMP)
	@$(BIN)/python -m server.portcheck --host 127.0.0.1 --port $(PORT)
	$(BIN)/langgraph dev --no-browser --host 127.0.0.1 --port $(PORT)

## Run the whole suite: lint and types, the unit lane (sockets disabled), then the integration lane (real `langgraph dev`).
test: $(STAMP)
	$(MAKE) --no-print-directory lint test-unit test-integration

## ruff (lint and format), mypy (strict on migrations_playbook) and lint-imports (the playbook's layer
## contracts, [tool.importlinter]), as configured in pyproject.toml.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports --config pyproject.toml --no-cache

test-unit: $(STAMP)
	$(BIN)/python -m pytest tests/unit --disable-socket --allow-unix-socket -q

test-integration: $(STAMP)
	$(BIN)/python -m pytest tests/integration -m "integration and not matrix" -q -n 2 --dist loadfile

## The full sweeps `make test` keeps a representative part of (each class fixture variant under the shadow proof).
test-matrix: $(STAMP)
	$(BIN)/python -m pytest tests/integration -m "integration and matrix" -q -n 2 --dist loadfile

## The load lane at the issue's size: 200 concurrent runs across the four graphs (+2 paused tickets answered mid-load), on SQLite and on PostgreSQL (~1.5 min).
test-load: $(STAMP)
	LOAD_RUNS=200 $(BIN)/python -m pytest tests/integration/test_load_postgres_server.py -q

## Every supported LangGraph version set (tests/playbook_versions.py): the playbook wheel in a fresh environment per set, the distribution checks on each (`make test` runs the oldest; the newest is the pinned set `make test` installs in test_playbook_distribution.py).
test-versions: $(STAMP)
	$(BIN)/python -m pytest tests/integration/test_playbook_versions.py -m integration -q

## Identity on public LangChain templates (issue 36): each cloned, installed in a venv of its own with the playbook wheel,
## served with threads left by a model stand-in, then `check`, `gate` and `shadow` on the same code: no block finding.
## Needs the network (git clone, pip); not part of `make test`. PUBLIC_SOURCE=<base URL, folder or pattern with {name}>.
PUBLIC_SOURCE ?= https://github.com/langchain-ai
test-public: $(STAMP)
	$(BIN)/python -m tests.public_templates --source '$(PUBLIC_SOURCE)' $(PUBLIC)

## Issue 26's testers, longer: the API fuzz and the run-lifecycle state machine on a random seed (printed); FUZZ_SEED=N reruns it. About 20 minutes.
fuzz: $(STAMP)
	$(BIN)/python -m tests.fuzz all

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache
