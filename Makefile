# Multi-Crit Studio: `make demo` starts the embedded demo, `make test` runs the whole suite.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
HOST ?= 127.0.0.1
PORT ?= 8000

# The PostgreSQL lane runs against real services; override these to point elsewhere.
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/multicrit
TEST_BROKER_URL ?= redis://127.0.0.1:6379/15
# The SQLite lane runs what `make demo` runs: no DATABASE_URL, no broker (Celery eager). It
# leaves out the browser, real-worker and broker-outage tests, and two files that touch no
# database (the renderer's timing, the deploy check), which the PostgreSQL lane runs.
SQLITE_LANE_ARGS ?= -m "not e2e and not celery_worker and not slow" \
	--ignore=tests/e2e \
	--ignore=tests/annotation/test_rendering_speed.py \
	--ignore=tests/ops/test_deploy_check.py
EMBEDDED_ENV := env -u DATABASE_URL -u CELERY_BROKER_URL -u CELERY_RESULT_BACKEND -u CACHE_URL -u REDIS_URL

.PHONY: demo test test-postgres test-sqlite lint-imports lint format venv dev-venv worker bench clean

$(VENV)/.installed: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -r requirements.txt
	touch $@

$(VENV)/.installed-dev: requirements.txt requirements-dev.txt $(VENV)/.installed
	$(PIP) install -q -r requirements-dev.txt
	touch $@

venv: $(VENV)/.installed
dev-venv: $(VENV)/.installed-dev

# The demo may score judge servers running on this machine (loopback addresses allowed).
demo: venv
	env -u DATABASE_URL -u CELERY_BROKER_URL $(PY) manage.py migrate --no-input
	env -u DATABASE_URL -u CELERY_BROKER_URL $(PY) manage.py demo_setup
	env -u DATABASE_URL -u CELERY_BROKER_URL OUTBOUND_ALLOW_PRIVATE=1 $(PY) manage.py demo_serve $(HOST):$(PORT)

# The whole suite on PostgreSQL and Redis, with real workers and the browser tests.
POSTGRES_LANE = DATABASE_URL=$(TEST_DATABASE_URL) CELERY_BROKER_URL=$(TEST_BROKER_URL) \
	$(VENV)/bin/pytest $(PYTEST_ARGS)
# The suite on the embedded default: SQLite (a fresh VAR_DIR) and eager Celery.
SQLITE_LANE = lane=$$(mktemp -d); \
	$(EMBEDDED_ENV) VAR_DIR=$$lane $(VENV)/bin/pytest $(SQLITE_LANE_ARGS) $(PYTEST_ARGS); \
	status=$$?; rm -rf "$$lane"; exit $$status

# Both lanes; PYTEST_ARGS applies to each.
test: dev-venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports --no-cache
	$(POSTGRES_LANE)
	$(SQLITE_LANE)

test-postgres: dev-venv
	$(POSTGRES_LANE)

test-sqlite: dev-venv
	$(SQLITE_LANE)

lint-imports: dev-venv
	$(VENV)/bin/lint-imports --no-cache

lint: dev-venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports --no-cache

format: dev-venv
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

worker: venv
	$(VENV)/bin/celery -A config worker -B --loglevel=info

clean:
	rm -rf var/ .pytest_cache
