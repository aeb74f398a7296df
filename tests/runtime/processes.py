"""Real processes for crash tests: ``python -m workers`` and a private ``temporal server``."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from scope_tool_cli._binaries import temporal_cli
from scope_tool_cli._dev_server import SERVER_TUNING

TESTS = Path(__file__).resolve().parent.parent
REPOSITORY = TESTS.parent


def free_port() -> int:
    """A TCP port nobody listens on right now (for a private server)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _log_text(log: Path) -> str:
    return log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""


async def _wait_for_text(log: Path, text: str, process: asyncio.subprocess.Process) -> None:
    for _ in range(600):
        if text in _log_text(log):
            return
        if process.returncode is not None:
            break
        await asyncio.sleep(0.05)
    content = _log_text(log)
    raise AssertionError(f"process never printed {text!r}; its output:\n{content}")


class WorkerProcess:
    """``python -m workers`` with the example tools, its stderr in a log file."""

    def __init__(self, process: asyncio.subprocess.Process, log: Path) -> None:
        self.process = process
        self.log = log

    def kill(self) -> None:
        """SIGKILL: the worker dies without any chance to clean up."""
        self.process.send_signal(signal.SIGKILL)


@contextlib.asynccontextmanager
async def worker_process(
    address: str,
    task_queue: str,
    log: Path,
    *extra: str,
    tools: Sequence[str] = ("runtime.example_tools:REGISTRY",),
) -> AsyncIterator[WorkerProcess]:
    """Start a worker process; on exit, SIGTERM it (if still alive) and wait for it.

    ``tools``: the registries it serves, newest first (``--tools`` repeated).
    """
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        part for part in (str(TESTS), env.get("PYTHONPATH", "")) if part
    )
    with log.open("ab") as sink:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "workers",
            *(part for spec in tools for part in ("--tools", spec)),
            "--address",
            address,
            "--task-queue",
            task_queue,
            "--retry-safe",
            "slow_safe",
            *extra,
            cwd=REPOSITORY,
            env=env,
            stdout=sink,
            stderr=sink,
        )
    try:
        await _wait_for_text(log, "worker ready", process)
        yield WorkerProcess(process, log)
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(process.wait(), timeout=20)
            except TimeoutError:
                process.kill()
                await process.wait()


class ServerProcess:
    """A private ``temporal server start-dev`` on random ports with a SQLite file."""

    def __init__(self, database: Path, log: Path) -> None:
        self.database = database
        self.log = log
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.process: asyncio.subprocess.Process | None = None

    async def start(self, *, register: bool) -> None:
        """Start it (``register``: add the search attributes; only on a fresh database)."""
        arguments = [
            str(temporal_cli()),
            "server",
            "start-dev",
            "--headless",
            "--ip",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--http-port",
            str(free_port()),
            "--metrics-port",
            str(free_port()),
            "--db-filename",
            str(self.database),
            *SERVER_TUNING,
            "--log-level",
            "error",
        ]
        if register:
            for name in ("ScopeToolName", "ScopeToolPhase"):
                arguments += ["--search-attribute", f"{name}=Keyword"]
        with self.log.open("ab") as sink:
            self.process = await asyncio.create_subprocess_exec(
                *arguments, stdout=sink, stderr=sink
            )
        for _ in range(400):
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2),
            ):
                return
            if self.process.returncode is not None:
                break
            await asyncio.sleep(0.05)
        raise AssertionError(f"temporal server did not start:\n{self.log.read_text()}")

    async def kill(self) -> None:
        """SIGKILL the server and wait until it is gone."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        await self.process.wait()

    async def stop(self) -> None:
        """Stop it if it still runs."""
        if self.process is not None and self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.process.wait(), timeout=15)
            except TimeoutError:
                self.process.kill()
                await self.process.wait()
