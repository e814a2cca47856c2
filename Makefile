# The two set-up commands README names: `make serve` and `make test`. Both create .venv and install
# everything they need, so they work on a fresh machine with only Python 3.11 and make.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# `make serve PORT=8080 HOST=0.0.0.0`: where the local service listens (loopback unless you say otherwise);
# `ROOT=DIR`: where its demo index, policy file and query log live.
HOST ?= 127.0.0.1
PORT ?= 8000
ROOT ?= .toolrec

.PHONY: install serve test lint sam-venv package browser

# The first install takes about 70 s (issue 34): it says so, and pip's lines show it moving (issue 26 item 5).
$(BIN)/toolrec: pyproject.toml
	@echo "make: installing toolrec and its dependencies into $(VENV) (about 70 s the first time)..."
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/pip install --disable-pip-version-check -e '.[dev]'
	touch $@

install: $(BIN)/toolrec
	$(BIN)/toolrec model prepare

serve: install
	$(BIN)/toolrec serve --host $(HOST) --port $(PORT) --root $(ROOT)

lint: install
	$(BIN)/ruff check handler build_index infra tests
	$(BIN)/ruff format --check handler build_index infra tests
	$(BIN)/mypy

test: lint sam-venv browser
	$(BIN)/pytest

# The console's tests (tests/browser) drive Debian's headless Chromium through its chromedriver: installed here when
# missing, as root with apt-get (CI runs as root); anyone else is told what to install, and those tests then skip
# (under CI, TOOLREC_REQUIRE_SHARED=1, they fail instead).
CHROMIUM_PACKAGES := chromium chromium-driver
browser:
	@if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "make: installing $(CHROMIUM_PACKAGES) for the console's browser tests (apt-get)..."; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(CHROMIUM_PACKAGES); \
	else \
		echo "make: the console's browser tests need Chromium: sudo apt-get install -y $(CHROMIUM_PACKAGES)"; \
	fi

# aws-sam-cli pins older pydantic and click than the service uses: it gets its own environment, which the
# template tests (tests/infra) call for `sam validate --lint` and the SAM translator.
SAM_VENV := .venv-sam
$(SAM_VENV)/bin/sam:
	@echo "make: installing the SAM CLI into $(SAM_VENV) (about a minute the first time)..."
	$(PYTHON) -m venv $(SAM_VENV)
	$(SAM_VENV)/bin/pip install --disable-pip-version-check aws-sam-cli==1.170.0
	touch $@

sam-venv: $(SAM_VENV)/bin/sam

# The Lambda code directory template.yaml's CodeUri names: handler/, Linux wheels, the prepared model.
package: install
	$(BIN)/python -m infra.package --out build/lambda
