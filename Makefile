# scope-tool: the two commands a newcomer needs are `make run` and `make test`.
# Everything else is set up on demand: `make run` installs the runtime and the inbox only;
# `make test` adds the test extras (the time-skipping test server, linters, Playwright).

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
RUN_STAMP := $(VENV)/.installed-run
PACKAGES := scope_tool workflows workers scope_tool_cli scope_tool_inbox scope_tool_agents

.PHONY: run test lint typecheck unit bench stress clean setup browser

# Browser tests drive Debian's Chromium through Playwright (never `playwright install`).
CHROMIUM := /usr/bin/chromium

setup: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,inbox]'
	@touch $(STAMP) $(RUN_STAMP)

# The runtime and the inbox, nothing for tests (a test install satisfies it too).
$(RUN_STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[inbox]'
	@touch $(RUN_STAMP)

## Run the engine: embedded Temporal dev server + Web UI + a worker with the example tools.
## Options on the make command line: `make run PORT=7244` (Temporal's port), and any other
## `scope-tool dev` flags with `make run ARGS="--ui-port 8244 --no-inbox"`.
run: $(RUN_STAMP)
	$(BIN)/scope-tool dev $(if $(filter command line,$(origin PORT)),--port $(PORT)) $(ARGS)

## Lint, type-check and run the whole suite (protocol, runtime against a real server, e2e).
test: $(STAMP) $(CHROMIUM) lint typecheck
	$(BIN)/python -m pytest -q -p no:cacheprovider

## Install Debian's chromium for the browser tests when it is missing (needs root, as CI runs).
browser: $(CHROMIUM)

$(CHROMIUM):
	@if [ "$$(id -u)" = 0 ]; then SUDO=; elif command -v sudo >/dev/null; then SUDO=sudo; \
	 else echo "make: $(CHROMIUM) is missing; install Debian's chromium as root" >&2; exit 1; fi; \
	 $$SUDO apt-get update -qq && \
	 $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy --strict $(PACKAGES)

## Benchmarks: never part of `make test`; each prints engine vs baseline and the ratio.
bench: $(STAMP)
	$(BIN)/python -m pytest -q -s -p no:cacheprovider tests/benchmarks

## Stress and fault scenarios at full size (the same suite runs small in `make test`).
stress: $(STAMP)
	SCOPE_TOOL_TEST_SIZE=full $(BIN)/python -m pytest -q -s -p no:cacheprovider \
	  tests/reliability/test_load.py tests/reliability/test_faults.py tests/stress

clean:
	rm -rf $(VENV) build *.egg-info .mypy_cache .ruff_cache .pytest_cache .hypothesis test-artifacts
