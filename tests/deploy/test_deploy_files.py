"""The deployment recipes agree with the code: task queue, search attributes, worker entry point.

Every file under ``deploy/`` must parse (YAML with PyYAML, Dockerfiles instruction by instruction)
and name the same constants as the code. The constants are imported from the code, so renaming
one in the code without updating ``deploy/`` fails here. The images themselves (the Dockerfile,
``deploy/images/``) are also built and run by ``make test-containers`` (tests/containers/); the
Compose file and the Kubernetes manifests need PostgreSQL-backed Temporal images from a registry,
so they are checked only here, statically.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from scope_tool.cli._dev import EXAMPLE_TOOLS
from scope_tool.client import ToolCalls
from scope_tool.config._embedded_server import SEARCH_ATTRIBUTES

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
TASK_QUEUE: str = inspect.signature(ToolCalls.connect).parameters["task_queue"].default
WORKER_MODULE = "scope_tool.workers"


def _yaml_documents(path: Path) -> list[Any]:
    return [document for document in yaml.safe_load_all(path.read_text()) if document is not None]


def _dockerfile_instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, argument text) pairs, with line continuations joined and comments dropped."""
    instructions: list[tuple[str, str]] = []
    pending = ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = pending + line
        pending = ""
        keyword, _, rest = line.partition(" ")
        instructions.append((keyword.upper(), rest.strip()))
    assert not pending, f"{path}: dangling line continuation"
    return instructions


def _dockerfile_env(instructions: list[tuple[str, str]]) -> dict[str, str]:
    env: dict[str, str] = {}
    for keyword, rest in instructions:
        if keyword == "ENV":
            for pair in shlex.split(rest):
                name, _, value = pair.partition("=")
                env[name] = value
    return env


def _search_attribute_flags(command_text: str) -> list[tuple[str, str]]:
    words = shlex.split(command_text.replace('"$TEMPORAL_ADDRESS"', "A").replace("|", " | "))
    first_create = words[words.index("create") :]
    end = first_create.index("||") if "||" in first_create else len(first_create)
    created = first_create[:end]
    names = [created[i + 1] for i, word in enumerate(created) if word == "--name"]
    types = [created[i + 1] for i, word in enumerate(created) if word == "--type"]
    return list(zip(names, types, strict=True))


def test_every_file_in_deploy_is_parsed_by_a_test() -> None:
    files = sorted(p.relative_to(DEPLOY).as_posix() for p in DEPLOY.rglob("*") if p.is_file())
    assert files == [
        "README.md",
        "docker-compose.yml",
        "images/docker-engine.sh",
        "images/python-base.sh",
        "images/temporal-dev.Dockerfile",
        "kubernetes/codec-server.yaml",  # checked in tests/production/test_deploy_production.py
        "kubernetes/search-attributes-job.yaml",
        "kubernetes/temporal-values.yaml",
        "kubernetes/worker.yaml",
    ]
    for name in files:
        if name.endswith((".yml", ".yaml")):
            assert _yaml_documents(DEPLOY / name), f"{name} holds no YAML document"


def test_constants_come_from_the_code() -> None:
    assert TASK_QUEUE == "scope-tools"
    assert importlib.util.find_spec(f"{WORKER_MODULE}.__main__") is not None
    module, _, attribute = EXAMPLE_TOOLS.partition(":")
    assert hasattr(importlib.import_module(module), attribute)


def test_dockerfile_builds_a_worker_on_the_task_queue() -> None:
    instructions = _dockerfile_instructions(ROOT / "Dockerfile")
    keywords = [keyword for keyword, _ in instructions]
    assert keywords[:2] == ["ARG", "FROM"]
    assert instructions[0][1] == "BASE_IMAGE=python:3.11-slim"
    assert instructions[1][1] == "${BASE_IMAGE}"
    entrypoint = json.loads(dict(instructions)["ENTRYPOINT"])
    command = json.loads(dict(instructions)["CMD"])
    assert entrypoint == ["python", "-m", WORKER_MODULE]
    assert command == ["--tools", EXAMPLE_TOOLS]
    env = _dockerfile_env(instructions)
    assert env["SCOPE_TOOL_TASK_QUEUE"] == TASK_QUEUE
    assert env["SCOPE_TOOL_NAMESPACE"] == "default"
    assert env["PATH"].startswith(env["VIRTUAL_ENV"] + "/bin:")
    copied = [rest.split() for keyword, rest in instructions if keyword == "COPY"]
    assert [sources[0] for sources in copied] == [
        "build/images/worker/wheels/",
        "build/images/worker/project/",
        "examples/__init__.py",
    ]
    # The example tools the default command serves: not part of the package, copied beside it.
    assert copied[-1] == ["examples/__init__.py", "examples/tools.py", "/app/examples/"]
    installs = [rest for keyword, rest in instructions if keyword == "RUN"]
    assert all("--no-index" in run for run in installs if "pip install" in run)
    assert keywords[-1] == "USER", "the worker must not run as root (USER comes last)"
    assert instructions[-1][1] not in ("root", "0")


def test_makefile_builds_the_wheels_the_dockerfile_copies() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert "IMAGES_DIR        := build/images" in makefile
    assert "$(IMAGES_DIR)/worker/project/" in makefile
    assert "--wheel-dir $(IMAGES_DIR)/worker/wheels" in makefile


def test_temporal_image_runs_the_dev_server_unprivileged() -> None:
    instructions = _dockerfile_instructions(DEPLOY / "images" / "temporal-dev.Dockerfile")
    assert instructions[0] == ("FROM", "scratch")
    env = _dockerfile_env(instructions)
    assert env["USER"], "the static temporal binary exits without $USER"
    assert ("USER", "10001:10001") in instructions
    assert json.loads(dict(instructions)["ENTRYPOINT"]) == ["/temporal"]


@pytest.mark.parametrize("script", ["docker-engine.sh", "python-base.sh"])
def test_image_scripts_are_valid_bash(script: str) -> None:
    path = DEPLOY / "images" / script
    checked = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    assert path.stat().st_mode & 0o111, f"{script} is not executable"
    assert "set -euo pipefail" in path.read_text()


def test_dockerignore_sends_only_the_wheels_and_the_example_tools() -> None:
    lines = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert lines == [
        "*",
        "!build/images/worker/wheels/",
        "!build/images/worker/project/",
        "!examples/__init__.py",
        "!examples/tools.py",
    ]


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    (document,) = _yaml_documents(DEPLOY / "docker-compose.yml")
    assert isinstance(document, dict)
    return document


def test_compose_runs_temporal_on_postgresql(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert services["postgresql"]["image"].startswith("postgres:")
    temporal = services["temporal"]
    assert temporal["environment"]["DB"] == "postgres12"
    assert temporal["environment"]["POSTGRES_SEEDS"] == "postgresql"
    assert "postgresql" in temporal["depends_on"]
    assert services["temporal-ui"]["environment"]["TEMPORAL_ADDRESS"] == "temporal:7233"


def test_compose_registers_the_search_attributes(compose: dict[str, Any]) -> None:
    job = compose["services"]["register-search-attributes"]
    (command_text,) = job["command"]
    assert _search_attribute_flags(command_text) == list(SEARCH_ATTRIBUTES)


def test_compose_workers_scale_on_one_task_queue(compose: dict[str, Any]) -> None:
    worker = compose["services"]["worker"]
    assert worker["build"] == {"context": "..", "dockerfile": "Dockerfile"}
    assert (DEPLOY / worker["build"]["context"] / worker["build"]["dockerfile"]).is_file()
    assert worker["command"] == ["--tools", EXAMPLE_TOOLS]
    assert worker["environment"]["SCOPE_TOOL_TASK_QUEUE"] == TASK_QUEUE
    assert worker["environment"]["SCOPE_TOOL_ADDRESS"] == "temporal:7233"
    assert worker["deploy"]["replicas"] >= 2
    depends = worker["depends_on"]["register-search-attributes"]
    assert depends["condition"] == "service_completed_successfully"


def _kinds(path: Path) -> dict[str, Any]:
    return {document["kind"]: document for document in _yaml_documents(path)}


def test_kubernetes_worker_deployment_matches_the_code() -> None:
    documents = _kinds(DEPLOY / "kubernetes" / "worker.yaml")
    assert set(documents) == {"Namespace", "ConfigMap", "Deployment"}
    config = documents["ConfigMap"]["data"]
    assert config["SCOPE_TOOL_TASK_QUEUE"] == TASK_QUEUE
    assert config["SCOPE_TOOL_NAMESPACE"] == "default"
    assert config["SCOPE_TOOL_ADDRESS"].endswith(":7233")
    deployment = documents["Deployment"]
    assert deployment["spec"]["replicas"] >= 2
    template = deployment["spec"]["template"]
    assert template["metadata"]["labels"] == deployment["spec"]["selector"]["matchLabels"]
    (container,) = template["spec"]["containers"]
    assert container["command"] == ["python", "-m", WORKER_MODULE]
    assert container["args"] == ["--tools", EXAMPLE_TOOLS]
    assert container["envFrom"] == [
        {"configMapRef": {"name": documents["ConfigMap"]["metadata"]["name"]}}
    ]


def test_kubernetes_job_registers_the_search_attributes() -> None:
    job = _kinds(DEPLOY / "kubernetes" / "search-attributes-job.yaml")["Job"]
    (container,) = job["spec"]["template"]["spec"]["containers"]
    (command_text,) = container["args"]
    assert _search_attribute_flags(command_text) == list(SEARCH_ATTRIBUTES)


def test_helm_values_use_postgresql_and_several_nodes() -> None:
    (values,) = _yaml_documents(DEPLOY / "kubernetes" / "temporal-values.yaml")
    persistence = values["server"]["config"]["persistence"]
    for store in ("default", "visibility"):
        assert persistence[store]["driver"] == "sql"
        assert persistence[store]["sql"]["driver"] == "postgres12"
    assert values["server"]["history"]["replicaCount"] >= 2
    assert values["server"]["matching"]["replicaCount"] >= 2
    for bundled in ("cassandra", "mysql", "elasticsearch"):
        assert values[bundled]["enabled"] is False
