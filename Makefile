# Two commands on a fresh machine: `make run` and `make test`. Each has its own stamp: `make run`
# installs what running needs (the package and its `lake` extra), `make test` adds the `dev`
# extra (pytest, ruff, playwright, hypothesis...).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
RUN_STAMP := $(VENV)/.installed-run
BENCH_STAMP := $(VENV)/.bench-installed
BENCH_RESULTS := $(VENV)/bench-results.jsonl
CHROMIUM := /usr/bin/chromium
PYTEST_WORKERS ?= logical

.PHONY: run demo test lint bench clean browser docs check-run-install

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(RUN_STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[lake]'
	touch $(RUN_STAMP)

$(STAMP): $(RUN_STAMP) pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[dev,lake,docs]'
	touch $(STAMP)

# Listens on 127.0.0.1 (GPUPRICES_HOST=0.0.0.0 opens it to the network: set GPUPRICES_API_KEY
# too, or /alerts and POST /collections answer loopback clients only).
run: $(RUN_STAMP)
	$(BIN)/gpuprices serve --port 8000

# The whole product offline: data/demo.duckdb filled from recorded answers shipped with the
# package (two days of hourly history ending now, past prices moved by a seeded walk), served on
# http://127.0.0.1:8000/ as demo data.
demo: $(RUN_STAMP)
	$(BIN)/gpuprices demo --port 8000

# Headless Chromium for tests/e2e: Debian's chromium + chromium-driver, never a browser download.
browser:
	@test -x $(CHROMIUM) || { \
	    DEBIAN_FRONTEND=noninteractive apt-get update && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y chromium chromium-driver; }

# As root, `make test` installs Chromium when missing; otherwise tests/e2e skip (outside CI).
# Likewise PostgreSQL (Debian's `postgresql`) for tests/lake, which start a throwaway cluster;
# without it they skip locally and fail in CI. Their S3-compatible server (moto's) comes with the
# dev extra and is started by the tests themselves on 127.0.0.1.
# The tests run on one pytest-xdist worker per core (PYTEST_WORKERS=0: in this process alone);
# tests sharing a costly fixture go to one worker, the slow ones start first (tests/conftest.py).
# The suite writes bytecode (in __pycache__/, ignored by git) even where PYTHONDONTWRITEBYTECODE
# is set: pytest's rewritten test modules, compiled again by every worker on every run without it,
# and the package, compiled again by each of the hundreds of processes the tests start.
# SkyPilot's and dstack's venvs (the tests read our task files with them) are built on the
# first run and kept: in $XDG_CACHE_HOME/gpuprices/launchers (shared by every clone) when set,
# else in .cache/launchers (tests/launcher_venvs.py).
test: $(STAMP)
	@if [ ! -x $(CHROMIUM) ] && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    $(MAKE) --no-print-directory browser || echo "no Chromium: tests/e2e will be skipped"; \
	fi
	@if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql || echo "no PostgreSQL: tests/lake will be skipped"; \
	fi
	$(BIN)/lint-imports
	$(BIN)/mypy
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder

# What `make run`, `make demo` and the image import is installed by the run install alone: a
# throwaway venv with only `pip install '.[lake]'` imports every module, answers every command's
# --help and serves every route (.ci/run runs it after `make test`; about a minute).
check-run-install:
	$(PYTHON) .ci/run_install_check.py

lint: $(STAMP)
	$(BIN)/ruff check .

# The documentation site (docs/mkdocs.yml, pages in docs/pages/) built into site/; the reference
# pages (CLI, settings, REST API, providers) are generated from the code by docs/generate.py at
# every build. `make test` builds it too (tests/test_docs.py), strictly.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --config-file docs/mkdocs.yml

# The `bench` extra: gpuhunt (pinned, the peer we measure against) and the profilers.
$(BENCH_STAMP): $(STAMP) pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[dev,lake,bench]'
	touch $(BENCH_STAMP)

# Every performance target (issue 11) with its measured value and MET / NOT MET, in one table at
# the end. load.py builds its year of history with bench/history.py's builder at 1,000 offers per
# 10-minute snapshot (5,000 takes ~8 min on 2 cores).
bench: $(BENCH_STAMP)
	@rm -f $(BENCH_RESULTS)
	$(BIN)/python bench/ingest.py --offers 100000 --results $(BENCH_RESULTS)
	$(BIN)/python bench/compare_gpuhunt.py --offers 100000 --results $(BENCH_RESULTS)
	$(BIN)/python bench/load.py --offers 100000 --history-offers 1000 --results $(BENCH_RESULTS)
	$(BIN)/python bench/quotes.py --results $(BENCH_RESULTS)
	$(BIN)/python bench/history.py
	$(BIN)/python bench/lake.py
	$(BIN)/python bench/cli_start.py --results $(BENCH_RESULTS)
	$(BIN)/python bench/report.py $(BENCH_RESULTS)

clean:
	rm -rf $(VENV) data site docs/pages/reference
