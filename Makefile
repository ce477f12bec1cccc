# Two commands on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CHROMIUM := /usr/bin/chromium

.PHONY: run test lint bench clean browser

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,lake]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/gpuprices serve --host 0.0.0.0 --port 8000

# Headless Chromium for tests/e2e: Debian's chromium + chromium-driver, never a browser download.
browser:
	@test -x $(CHROMIUM) || { \
	    DEBIAN_FRONTEND=noninteractive apt-get update && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y chromium chromium-driver; }

# As root, `make test` installs Chromium when missing; otherwise tests/e2e skip (outside CI).
# Likewise PostgreSQL (Debian's `postgresql`) for tests/lake, which start a throwaway cluster;
# without it they skip locally and fail in CI.
test: $(STAMP)
	@if [ ! -x $(CHROMIUM) ] && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    $(MAKE) --no-print-directory browser || echo "no Chromium: tests/e2e will be skipped"; \
	fi
	@if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql || echo "no PostgreSQL: tests/lake will be skipped"; \
	fi
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check .

bench: $(STAMP)
	$(BIN)/python bench/ingest.py --offers 20000
	$(BIN)/python bench/quotes.py
	$(BIN)/python bench/history.py
	$(BIN)/python bench/lake.py

clean:
	rm -rf $(VENV) data
