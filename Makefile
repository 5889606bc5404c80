# piweb developer commands. `make run` and `make test` are all a new checkout needs.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000
PYTEST_ARGS ?=
SHARED ?= ../shared
# Tests use the real services unless told otherwise.
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/piweb
TEST_REDIS_URL ?= redis://127.0.0.1:6379/15
# `make test` ends with `make test-fresh` in CI; FRESH=0 skips it there, FRESH=1 runs it locally too.
FRESH ?= $(if $(filter true 1,$(CI)),1,0)

.PHONY: venv browser pi js-tools vendor-js js-test js-lint js-typecheck services services-down run worker test test-fresh pytest lint format \
	bench conformance fuzz-pi fuzz-runs clean image lock

venv: $(STAMP)

# Reinstall only when a pyproject.toml changes; reuse a .venv that already has Python >= 3.12.
# The sync client Pi users install on its own (clients/piweb-sync) is installed beside the server.
$(STAMP): pyproject.toml clients/piweb-sync/pyproject.toml
	@set -e; \
	if ! { [ -x $(PY) ] && $(PY) -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; }; then \
		py=$$(tools/find-python); \
		echo "Creating $(VENV) with $$py"; \
		rm -rf $(VENV); "$$py" -m venv $(VENV); \
	fi; \
	$(PY) -m pip install -q -e ".[dev]" -e clients/piweb-sync; \
	touch $@

# One Ctrl-C stops both processes within a few seconds. Both run in the background so the shell's trap
# runs at once (it would wait for a foreground daphne); SIGQUIT is Celery's cold shutdown, which lets a
# running task finish for CELERY_WORKER_SOFT_SHUTDOWN_TIMEOUT seconds, then gives it back to the queue
# (tasks are acknowledged late), so the next `make run` redelivers it.
run: venv
	$(PY) manage.py migrate --noinput
	$(PY) manage.py ensure_demo
	PIWEB_STATIC_COLLECTED=$${PIWEB_STATIC_COLLECTED:-1} $(PY) manage.py collectstatic --noinput -v0
	@set -e; \
	$(PY) -m piweb.workers & worker=$$!; \
	PIWEB_STATIC_COLLECTED=$${PIWEB_STATIC_COLLECTED:-1} $(VENV)/bin/daphne -b $(HOST) -p $(PORT) piweb.asgi:application & web=$$!; \
	stop() { \
		kill -TERM $$web 2>/dev/null || true; kill -QUIT $$worker 2>/dev/null || true; \
		for _ in $$(seq 50); do \
			case "$$(ps -o stat= -p $$web -p $$worker 2>/dev/null | grep -v '^ *Z')" in "") break;; esac; \
			sleep 0.2; \
		done; \
		kill -KILL $$web $$worker 2>/dev/null || true; wait 2>/dev/null || true; \
	}; \
	trap stop EXIT; trap 'exit 130' INT TERM; \
	echo ""; \
	echo "  piweb is starting at http://$(HOST):$(PORT)/  (log in as demo / demo; Ctrl-C stops it)"; \
	echo ""; \
	wait $$web

# Two workers: agent runs on a thread pool (queue "runs"), operations on processes ("operations", "celery").
worker: venv
	$(PY) -m piweb.workers

test: services lint js-test pytest $(if $(filter 1,$(FRESH)),test-fresh)

# PostgreSQL and Redis at the test URLs: started, installed or run privately under .data/services/ when
# they do not answer, and the database created (tools/services.py says how). `services-down` stops the
# private ones; the machine's own services are left running.
services: venv
	@$(PY) tools/services.py up --database-url "$${DATABASE_URL:-$(TEST_DATABASE_URL)}" \
		--redis-url "$${REDIS_URL:-$(TEST_REDIS_URL)}"

services-down:
	@py=$(PY); [ -x $$py ] || py=python3; if [ -d .data/services ]; then $$py tools/services.py down; fi

# The quick start on a fresh clone: `make test` there must build its venv, start private PostgreSQL and
# Redis on ports where nothing listens, and pass a small real part of the suite. CI (CI=true) runs it
# after the suite (FRESH, set at the top: prerequisites are expanded when make reads the rule).
FRESH_TESTS ?= tests/test_skeleton.py tests/sessions/test_store.py tests/api/test_sessions.py \
	tests/ui/test_consumers.py tests/compaction/test_tasks.py
test-fresh: venv
	@tools/test-fresh $(FRESH_TESTS)

# Browser tests drive Debian's Chromium; install it once, only when it is missing.
browser:
	@if [ ! -x /usr/bin/chromium ]; then \
		if [ "$$(id -u)" -eq 0 ]; then sudo=""; elif command -v sudo >/dev/null 2>&1; then sudo="sudo -n"; \
		else echo "/usr/bin/chromium is missing and cannot be installed without root; browser tests will skip" >&2; exit 0; fi; \
		echo "Installing chromium for the browser tests"; \
		DEBIAN_FRONTEND=noninteractive $$sudo apt-get update -q && \
		DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -q chromium || \
		echo "chromium could not be installed; browser tests will skip" >&2; \
	fi

# Pi 1.6.0 and its Node 22 from the npm registry, pinned by bench/package-lock.json: the differential
# tests run Pi's own code as the oracle. Reinstalled only when the lockfile changes.
PI_STAMP := bench/node_modules/.piweb-installed
pi: $(PI_STAMP)

$(PI_STAMP): bench/package.json bench/package-lock.json
	@command -v npm >/dev/null 2>&1 || { echo "npm is needed to install Pi 1.6.0 for the differential tests" >&2; exit 1; }
	npm ci --prefix bench --no-audit --no-fund --loglevel=error
	@touch $@

# Long real-time tests (marked `background`: sockets idle for a minute, the ten-minute soak, and the fault
# tests that mostly wait, for a visibility timeout, a beat window or a restart) run in a second pytest
# process beside the suite, on a database and a Redis db of their own, so they overlap the suite instead
# of adding to it. PYTEST_BACKGROUND=0 skips them.
PYTEST_BACKGROUND ?= 1
# The suite runs on this many workers (pytest-xdist; 0: one process), a file's tests on one worker. Each
# worker has a test database (pytest-django), a Redis database (tests/worker_env.py) and ports of its own.
PYTEST_WORKERS ?= 2
# The suite writes bytecode (and pytest its rewritten test modules) even where the environment asks
# Python not to: each pytest process and every server and worker the tests start would otherwise
# compile the whole project again (about 6 s of a core per pytest process, 0.4 s per server).
BACKGROUND_LOG := .data/pytest-background.log

pytest: venv browser pi services
	@set +e; mkdir -p .data; \
	unset PYTHONDONTWRITEBYTECODE; \
	db="$${DATABASE_URL:-$(TEST_DATABASE_URL)}"; redis="$${REDIS_URL:-$(TEST_REDIS_URL)}"; bg=""; \
	case "$$redis" in *://*/[0-9]|*://*/[0-9][0-9]) bgredis="$${redis%/*}/$$(( ($${redis##*/} + 15) % 16 ))";; *) bgredis="$$redis";; esac; \
	if [ "$(PYTEST_BACKGROUND)" = 1 ]; then \
		DATABASE_URL="$${db%/*}/$${db##*/}_bg" REDIS_URL="$$bgredis" \
			$(PY) -m pytest -m background -q -p no:cacheprovider > $(BACKGROUND_LOG) 2>&1 & bg=$$!; \
	fi; \
	DATABASE_URL="$$db" REDIS_URL="$$redis" $(PY) -m pytest -m "not background" $(if $(filter-out 0,$(PYTEST_WORKERS)),-n $(PYTEST_WORKERS) --dist loadfile) $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests; that counts as a failure" >&2; fi; \
	if [ -n "$$bg" ]; then \
		echo "Waiting for the background tests (log: $(BACKGROUND_LOG))"; wait $$bg; bgrc=$$?; \
		tail -n 30 $(BACKGROUND_LOG); \
		if [ $$bgrc -ne 0 ]; then echo "background tests failed (exit $$bgrc)" >&2; [ $$rc -ne 0 ] || rc=$$bgrc; fi; \
	fi; \
	exit $$rc

# Style, the app map (layers, facades, pure domain: docs/architecture.md) and types.
lint: venv js-lint js-typecheck
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports --cache-dir .data/import-linter
	$(PY) tools/check_architecture.py
	$(VENV)/bin/mypy

# The browser modules under static/ have no build step. ESLint comes from the lockfile at the root
# (package-lock.json), and both it and the unit tests in tests/js run on the Node 22 that `pi` installs.
NODE := bench/node_modules/.bin/node
JS_STAMP := node_modules/.piweb-installed
js-tools: $(JS_STAMP)

$(JS_STAMP): package.json package-lock.json $(PI_STAMP)
	@command -v npm >/dev/null 2>&1 || { echo "npm is needed to install ESLint for the JavaScript lint" >&2; exit 1; }
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

js-lint: js-tools
	$(NODE) node_modules/eslint/bin/eslint.js static tests/js clients/pi-piweb eslint.config.js

# The browser modules' types: each starts with `// @ts-check`; static/types.d.ts holds the page
# configurations and socket messages (tsconfig.json).
js-typecheck: js-tools
	$(NODE) node_modules/typescript/bin/tsc -p tsconfig.json

js-test: pi
	$(NODE) --test tests/js/*.test.js clients/pi-piweb/test/*.test.js

format: venv
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

bench: venv
	$(PY) bench/run.py

conformance: venv
	@if [ -f $(SHARED)/conformance/run.py ]; then \
		$(PY) $(SHARED)/conformance/run.py --tool "$(PY) manage.py sessiontool"; \
	else \
		echo "$(SHARED)/conformance not found; skipping the conformance run"; \
	fi

# Random agent-run scripts through Pi's CLI and piweb's run loop: `make fuzz-runs N=50 SEED=7`.
fuzz-runs: venv pi
	DATABASE_URL="$${DATABASE_URL:-$(TEST_DATABASE_URL)}" REDIS_URL="$${REDIS_URL:-$(TEST_REDIS_URL)}" \
	PIWEB_FUZZ_RUNS_N=$(N) PIWEB_FUZZ_RUNS_SEED=$(SEED) \
		$(PY) -m pytest tests/agent/test_pi_differential.py -q -p no:cacheprovider -k random

# A long differential campaign against Pi: `make fuzz-pi N=20000 SEED=7`; failing files go to
# .data/fuzz-pi/ and `make fuzz-pi REPLAY=.data/fuzz-pi` runs them again.
N ?= 20000
SEED ?= $(shell date +%s)
START ?= 0
DB_EVERY ?= 50
fuzz-pi: venv pi
	DATABASE_URL="$${DATABASE_URL:-$(TEST_DATABASE_URL)}" REDIS_URL="$${REDIS_URL:-$(TEST_REDIS_URL)}" \
	PIWEB_FUZZ_PI_N=$(N) PIWEB_FUZZ_PI_SEED=$(SEED) PIWEB_FUZZ_PI_START=$(START) PIWEB_FUZZ_PI_DB_EVERY=$(DB_EVERY) PIWEB_FUZZ_PI_REPLAY=$(REPLAY) \
		$(PY) -m pytest tests/pi_oracle -q -p no:cacheprovider $(if $(REPLAY),-k replay)

# The one image for web, workers, beat and migrations (Dockerfile), tagged with the release. IMAGE_BASE
# replaces its base (python:3.12-slim-bookworm), e.g. one docker/build-base made from a Debian mirror
# where Docker Hub is out of reach; DOCKER_BUILD_FLAGS adds options (--network=host).
IMAGE ?= piweb
IMAGE_BASE ?=
DOCKER_BUILD_FLAGS ?=
PIWEB_VERSION := $(shell sed -n 's/^__version__ = "\(.*\)"$$/\1/p' piweb/__init__.py)
image:
	docker build $(DOCKER_BUILD_FLAGS) $(if $(IMAGE_BASE),--build-arg BASE=$(IMAGE_BASE)) \
		-t $(IMAGE):$(PIWEB_VERSION) -t $(IMAGE):latest .

# requirements.lock pins every runtime dependency the image installs (pip constraints): a fresh install of
# pyproject.toml's dependencies in the base image, frozen. Run it after changing them, then make image.
LOCK_BASE = $(or $(IMAGE_BASE),python:3.12-slim-bookworm)
lock:
	@set -eo pipefail; \
	docker run --rm $(DOCKER_BUILD_FLAGS) -v "$(CURDIR)/pyproject.toml:/src/pyproject.toml:ro" \
		-v "$(CURDIR)/piweb/__init__.py:/src/piweb/__init__.py:ro" $(LOCK_BASE) sh -c \
		'cp -r /src /tmp/src && python3 -m venv /tmp/v && /tmp/v/bin/pip install -q /tmp/src \
		&& /tmp/v/bin/pip freeze --exclude piweb' > requirements.lock.new; \
	{ echo "# Runtime dependencies of the image, pinned (pip constraints). Made by make lock; do not edit."; \
		cat requirements.lock.new; } > requirements.lock; rm requirements.lock.new

clean: services-down
	rm -rf .data staticfiles .pytest_cache .ruff_cache

# Browser libraries the pages load are copied from the lockfile's packages into static/vendor/ and
# committed, so `make run` and a fresh clone serve them without npm. Run after changing their versions.
vendor-js: js-tools
	cp node_modules/uplot/dist/uPlot.esm.js node_modules/uplot/dist/uPlot.min.css node_modules/uplot/LICENSE static/vendor/uplot/
