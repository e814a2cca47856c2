# The two set-up commands README names: `make serve` and `make test`. Both create .venv and install
# everything they need, so they work on a fresh machine with only Python 3.11 and make.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: install serve test lint

$(BIN)/toolrec: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $@

install: $(BIN)/toolrec
	$(BIN)/toolrec model prepare

serve: install
	$(BIN)/toolrec serve --host 127.0.0.1 --port 8000

lint: install
	$(BIN)/ruff check handler build_index tests
	$(BIN)/ruff format --check handler build_index tests
	$(BIN)/mypy

test: lint
	$(BIN)/pytest
