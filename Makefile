# Multi-Crit Studio: `make demo` starts the embedded demo, `make test` runs the whole suite.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
HOST ?= 127.0.0.1
PORT ?= 8000

# The suite runs against real services; override these to point elsewhere.
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/multicrit
TEST_BROKER_URL ?= redis://127.0.0.1:6379/15

.PHONY: demo test lint format venv dev-venv worker bench clean

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

demo: venv
	env -u DATABASE_URL -u CELERY_BROKER_URL $(PY) manage.py migrate --no-input
	env -u DATABASE_URL -u CELERY_BROKER_URL DEMO_HOST=$(HOST) DEMO_PORT=$(PORT) $(PY) manage.py demo_setup
	env -u DATABASE_URL -u CELERY_BROKER_URL $(PY) manage.py runserver $(HOST):$(PORT)

test: dev-venv
	$(VENV)/bin/ruff check .
	DATABASE_URL=$(TEST_DATABASE_URL) CELERY_BROKER_URL=$(TEST_BROKER_URL) $(VENV)/bin/pytest $(PYTEST_ARGS)

lint: dev-venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: dev-venv
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

worker: venv
	$(VENV)/bin/celery -A config worker -B --loglevel=info

clean:
	rm -rf var/ .pytest_cache
