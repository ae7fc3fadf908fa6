# The README's commands. `make run` and `make test` work on a fresh machine with Python >= 3.11.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run prod test install install-dev install-docs migrate seed lint fuzz bench-smoke messages docs e2e-deps clean

$(PY):
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11 or newer is required"'
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

# Reinstall only when pyproject.toml changed.
$(VENV)/.installed: pyproject.toml | $(PY)
	$(PIP) install --quiet -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml $(VENV)/.installed
	$(PIP) install --quiet -e '.[dev]'
	touch $@

$(VENV)/.installed-docs: pyproject.toml $(VENV)/.installed
	$(PIP) install --quiet -e '.[docs]'
	touch $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev
install-docs: $(VENV)/.installed-docs

migrate: install
	$(PY) manage.py migrate --noinput

seed: migrate
	DEMO_API_BASE_URL=http://$(HOST):$(PORT)/demo-api $(PY) manage.py seed_demo

## Install, migrate, seed the demo organisation, build the documentation (served at /docs/) and serve on
## http://127.0.0.1:8000 (embedded defaults).
run: seed docs
	$(PY) manage.py serve --host $(HOST) --port $(PORT)

## The multi-process setup on local PostgreSQL and Redis: migrate, seed the demo organisation, then two
## daphne servers (http://127.0.0.1:8001 and :8002), a Celery worker and beat. Ctrl-C stops them all.
## DATABASE_URL and REDIS_URL override the local defaults (the database is created if missing).
PROD_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/agent_platform
PROD_REDIS_URL ?= redis://127.0.0.1:6379/0
PROD_PORTS ?= 8001,8002
prod: install
	DATABASE_URL="$${DATABASE_URL:-$(PROD_DATABASE_URL)}" REDIS_URL="$${REDIS_URL:-$(PROD_REDIS_URL)}" \
	DEMO_DATABASE_URL="$${DEMO_DATABASE_URL:-$(PROD_DATABASE_URL)}" \
		$(PY) manage.py serve_prod --host $(HOST) --ports $(PROD_PORTS) --seed-demo

## Install everything and run the whole test suite, one worker per core (TEST_WORKERS=0 runs it in one process).
TEST_WORKERS ?= auto
test: install-dev
	$(PY) -m pytest -n $(TEST_WORKERS) $(PYTEST_ARGS)

## ruff, the import-linter contracts of the layers and of no cycles (pyproject.toml, [tool.importlinter]),
## then mypy over every package, the engine strictly ([tool.mypy]).
lint: install-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/mypy

## The documentation site (docs/, Sphinx) into var/docs/en and var/docs/zh, strict: any warning (a broken link
## or anchor, a page missing from the navigation or a navigation entry without a page) fails, and so does
## a broken internal link in the built HTML. Sphinx rebuilds only what changed.
## Rebuilt only when a page, a catalogue or the code (whose OpenAPI schema the REST reference shows) changed.
DOCS_BUILD ?= var/docs
SPHINX := $(PY) -m sphinx -b html -W -n --keep-going -q
DOCS_SOURCES := $(shell find docs -type f -not -name '*.mo' -not -name 'rest-reference.md' 2>/dev/null) \
	$(shell find platform_core agents connectors hooks -name '*.py' -not -path '*/migrations/*' 2>/dev/null)
$(DOCS_BUILD)/.built: $(DOCS_SOURCES) pyproject.toml | install-docs
	$(SPHINX) -d $(DOCS_BUILD)/.doctrees/en docs $(DOCS_BUILD)/en
	$(SPHINX) -D language=zh_CN -d $(DOCS_BUILD)/.doctrees/zh docs $(DOCS_BUILD)/zh
	$(PY) docs/check_links.py $(DOCS_BUILD)
	touch $@
docs: $(DOCS_BUILD)/.built

## Every script of benchmarks/ at a tiny size, one after another (benchmarks/smoke.py): fails if one fails or
## a proof breaks (one decision per approval, no event lost through kills). Needs PostgreSQL and Redis
## (BENCH_POSTGRES_URL, BENCH_REDIS_URL); a few minutes.
bench-smoke: install-dev
	$(PY) -m benchmarks.smoke

## Schemathesis over every route of /api/schema/ against a live server (a fresh SQLite file, the organisation
## "fuzz" and its owner's API key): any 5xx or an invalid schema fails. Fixed seed; FUZZ_ARGS tunes the budget,
## e.g. FUZZ_ARGS='--max-time 600 --max-examples 100' for a longer local run.
FUZZ_ARGS ?=
fuzz: install-dev
	$(PY) -m tests.fuzz.run $(FUZZ_ARGS)

## Refresh the translation catalogues after changing user-facing strings.
messages: install
	$(PY) manage.py makemessages -l zh_Hans --ignore=.venv --ignore=tests --ignore=var --ignore=staticfiles
	$(PY) manage.py makemessages -d djangojs -l zh_Hans --ignore=.venv --ignore=staticfiles
	$(PY) manage.py compilemessages --ignore=.venv

clean:
	rm -rf var staticfiles .pytest_cache
