# The scope-tool worker image: `python -m scope_tool.workers` serving a registry of tools.
# Workers are stateless (all call state lives in Temporal), so run as many replicas as you like
# on one task queue.
#
# The image installs wheels built on the host (no package index is needed inside the build):
#   make image-worker        # builds the wheels into build/images/worker/, then this file
# or by hand, from the repository root:
#   pip wheel --wheel-dir build/images/worker/wheels . && mkdir -p build/images/worker/project \
#     && mv build/images/worker/wheels/scope_tool-*.whl build/images/worker/project/ \
#     && docker build -t scope-tool-worker .
# BASE_IMAGE is any Debian-like image with Python 3.11 and its venv module: the official
# python:3.11-slim, or the registry-free scope-tool/python-base that `make image-python-base` builds.
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE}

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    VIRTUAL_ENV=/opt/scope-tool \
    PATH=/opt/scope-tool/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    SCOPE_TOOL_ADDRESS=temporal:7233 \
    SCOPE_TOOL_NAMESPACE=default \
    SCOPE_TOOL_TASK_QUEUE=scope-tools \
    SCOPE_TOOL_FILES_DIR=/data/files
# Metadata before the install layers: with the vfs storage driver every instruction copies the
# whole file system, so the fewer that follow the big layers, the faster a rebuild.
WORKDIR /app
# SIGTERM (docker stop, a Kubernetes rollout) lets the worker finish its activities and exit.
STOPSIGNAL SIGTERM
ENTRYPOINT ["python", "-m", "scope_tool.workers"]
CMD ["--tools", "examples.tools:registry"]

# Dependencies first: this layer changes only when a dependency does, not with every source edit.
# A venv, because Debian's own Python refuses system-wide pip installs (PEP 668).
COPY build/images/worker/wheels/ /tmp/wheels/
RUN python3 -m venv "$VIRTUAL_ENV" \
    && pip install --no-index --no-cache-dir --disable-pip-version-check /tmp/wheels/*.whl \
    && rm -rf /tmp/wheels \
    && useradd --system --uid 10001 --user-group --home-dir /app --no-create-home scope \
    && mkdir -p /data/files && chown scope:scope /app /data/files

COPY build/images/worker/project/ /tmp/project/
RUN pip install --no-index --no-deps --no-cache-dir --disable-pip-version-check /tmp/project/*.whl \
    && rm -rf /tmp/project

# The example tools the default command serves (examples/ is not part of the package).
COPY examples/__init__.py examples/tools.py /app/examples/

USER scope
