# The scope-tool worker image: `python -m workers` serving a registry of tools.
# Workers are stateless (all call state lives in Temporal), so run as many replicas as you like
# on one task queue. Build from the repository root:  docker build -t scope-tool-worker .
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    SCOPE_TOOL_ADDRESS=temporal:7233 \
    SCOPE_TOOL_NAMESPACE=default \
    SCOPE_TOOL_TASK_QUEUE=scope-tools \
    SCOPE_TOOL_FILES_DIR=/data/files

WORKDIR /app
COPY pyproject.toml README.md ./
COPY scope_tool ./scope_tool
COPY workflows ./workflows
COPY workers ./workers
COPY scope_tool_cli ./scope_tool_cli
RUN pip install . \
    && useradd --system --uid 10001 --home-dir /app scope \
    && mkdir -p /data/files && chown -R scope /data

USER scope
# SIGTERM (docker stop, a Kubernetes rollout) lets the worker finish its activities and exit.
STOPSIGNAL SIGTERM
ENTRYPOINT ["python", "-m", "workers"]
CMD ["--tools", "workers.examples:registry"]
