# Two commands do all set-up on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# DuckDB 1.4.4 with its postgres extension (the [postgres] extra): the store tests run here again,
# on both back ends, against a PostgreSQL server the tests start (tests/conftest.py).
VENV_PG := .venv-pg
PORT ?= 8501
POSTGRES_TESTS := tests/evaluator/store/test_backends.py tests/evaluator/store/test_transfer.py \
	tests/pages/test_pages_postgres.py tests/e2e/test_replicas_postgres.py tests/evaluator/queries/test_local_copy.py
# Reviewers' names are typed, not authenticated: serve on this machine only unless told otherwise.
ADDRESS ?= 127.0.0.1
export EVALUATOR_DB ?= data/evaluator.duckdb

.PHONY: run test install install-test install-postgres postgres move-store browser lint typecheck samples bench clean compile docs

$(VENV)/.installed: pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python >= 3.11 is needed (PYTHON=python3.11 make ...)")'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	touch $@

install: $(VENV)/.installed

$(VENV)/.installed-test: $(VENV)/.installed
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

install-test: $(VENV)/.installed-test

$(VENV_PG)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV_PG)
	$(VENV_PG)/bin/python -m pip install --quiet --upgrade pip
	$(VENV_PG)/bin/python -m pip install --quiet -e '.[test,postgres]'
	touch $@

install-postgres: $(VENV_PG)/.installed

# PostgreSQL's server programs (initdb, pg_ctl) for the PostgreSQL store's tests: Debian's package when
# we are root with apt; else the tests that need a server are skipped, saying so.
postgres:
	@if command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
		echo "postgresql: $$(command -v initdb || ls /usr/lib/postgresql/*/bin/initdb | tail -1)"; \
	elif [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1 && \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; then \
		echo "postgresql: installed from Debian's package"; \
	else \
		echo "postgresql: not installed (needs root and apt); the PostgreSQL store's tests will be skipped"; \
	fi

# A store moved into PostgreSQL (or any store into another): exported by the default environment
# (DuckDB 2 reads the file), imported by the PostgreSQL one (DuckDB 1.4.4 cannot open a DuckDB 2 file).
move-store: install install-postgres
	@if [ -z "$(FROM)" ] || [ -z "$(TO)" ]; then \
		echo "usage: make move-store FROM=data/evaluator.duckdb TO=postgresql://user@host:port/dbname"; exit 2; fi
	@folder=$$(mktemp -d) && trap 'rm -rf "$$folder"' EXIT && \
		$(PY) -m evaluator export-store "$$folder/store" --db '$(subst ','\'',$(value FROM))' && \
		$(VENV_PG)/bin/python -m evaluator import-store "$$folder/store" --db '$(subst ','\'',$(value TO))'

# Headless Chromium for the browser tests: Debian's package when we are root with apt,
# else Playwright's own browser download.
browser: install-test
	@if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then \
		echo "chromium: $$(command -v chromium || command -v chromium-browser)"; \
	elif [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1 && \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; then \
		echo "chromium: installed from Debian's package"; \
	else \
		$(PY) -m playwright install --with-deps chromium || $(PY) -m playwright install chromium; \
	fi

# Byte-code for the project's own modules, refreshed where a source changed: with
# PYTHONDONTWRITEBYTECODE set (containers often set it) every command would compile them again
# (a tenth of a second or more at each start; the tests start the CLI hundreds of times).
compile: install
	@$(PY) -m compileall -q evaluator dashboard bench || echo "compile: byte-code not written (a read-only tree?); carrying on"

# Load the sample runs of data/ into the store when it has none, and evaluate them.
samples: install compile
	$(PY) -m evaluator load-samples

run: samples
	$(VENV)/bin/streamlit run app.py --server.port $(PORT) --server.address $(ADDRESS) --server.headless true \
		--browser.gatherUsageStats false

lint: install-test
	$(VENV)/bin/ruff check evaluator dashboard pages tests bench app.py tools

typecheck: install-test
	$(VENV)/bin/mypy evaluator

# -n auto: one pytest-xdist worker per core (tests sharing a resource are grouped: pyproject.toml);
# the 20 slowest tests are listed at the end.
# Then the tests of the PostgreSQL store again under DuckDB 1.4.4 (each xdist group starts a server of
# its own): the store on both back ends, the move between them, every page, and two replicas in Chromium.
test: browser postgres install-postgres lint typecheck compile
	$(VENV)/bin/pytest -q -n auto --durations=20
	$(VENV_PG)/bin/pytest -q -n auto $(POSTGRES_TESTS)

# The sizes, pages and baseline; then the floor (plain DuckDB) and the ratios of issue 16 at 200k.
bench: install
	$(PY) -m bench.run
	$(PY) -m bench.floor
	$(PY) -m bench.lab

# docs/CLI.md from the CLI's parsers (tests/test_cli_reference.py fails when it is stale).
docs: install
	$(PY) -m tools.cli_reference

clean:
	rm -rf $(VENV) $(VENV_PG) data/evaluator.duckdb data/evaluator.duckdb.wal
