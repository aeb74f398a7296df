"""``python -m scope_tool.workers`` as a real child process: start, wait until it polls, SIGKILL, stop.

The command line comes from ``Settings.worker_command`` (the one builder the CLI uses too), so
tests start workers exactly as ``scope-tool worker`` does. The ``tests`` directory goes on
``PYTHONPATH`` so test registries (``runtime.example_tools:REGISTRY``...) import by name.
A SIGKILL is a genuine crash: no ``finally``, no flush.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

from scope_tool.config.settings import Settings

__all__ = ["TESTS_DIRECTORY", "WorkerProcess", "python_environment", "worker_process"]

TESTS_DIRECTORY = Path(__file__).resolve().parents[1]
REPOSITORY = TESTS_DIRECTORY.parent


def python_environment(**extra: str) -> dict[str, str]:
    """The environment for a child Python: ``tests`` importable, output unbuffered."""
    environment = dict(os.environ)
    existing = environment.get("PYTHONPATH", "")
    environment["PYTHONPATH"] = (
        f"{TESTS_DIRECTORY}{os.pathsep}{existing}" if existing else str(TESTS_DIRECTORY)
    )
    environment["PYTHONUNBUFFERED"] = "1"
    environment.update(extra)
    return environment


@dataclass(slots=True, kw_only=True)
class WorkerProcess:
    """One worker process serving ``tools`` on ``task_queue``.

    Mutable on purpose: it tracks the one live process so tests can kill and replace it.
    """

    address: str
    task_queue: str
    tools: str | tuple[str, ...]  # several: registry versions, newest first
    log_file: Path
    retry_safe: tuple[str, ...] = ()
    environment: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None

    def child_environment(self) -> dict[str, str]:
        """Variables the tools read (subclasses add theirs)."""
        return dict(self.environment)

    def start(self) -> None:
        """Spawn the worker; it polls as soon as it has connected."""
        command, variables = Settings(
            address=self.address, task_queue=self.task_queue
        ).worker_command(self.tools, retry_safe=self.retry_safe)
        log = self.log_file.open("ab")
        self.process = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=python_environment(**variables, **self.child_environment()),
            cwd=REPOSITORY,
            start_new_session=True,
        )
        log.close()

    def wait_ready(self, *, timeout: float) -> None:
        """Block until the worker logs that it polls (``worker ready``), or fail loudly."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if "worker ready" in self.log_text():
                return
            if not self.alive:
                raise RuntimeError(f"worker exited before it was ready: {self.log_text()[-2000:]}")
            time.sleep(0.05)
        raise RuntimeError(f"worker not ready after {timeout} s: {self.log_text()[-2000:]}")

    @property
    def alive(self) -> bool:
        """True while the process has not exited."""
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL: activities in flight are abandoned mid-tool."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)

    def stop(self) -> int | None:
        """SIGTERM and wait (the worker promises a clean stop); returns the exit code."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=30)
        return self.process.returncode

    def log_text(self) -> str:
        """The worker's combined output (for assertions on crashes and tracebacks)."""
        try:
            return self.log_file.read_text(errors="replace")
        except OSError:
            return ""


@contextlib.asynccontextmanager
async def worker_process(
    address: str,
    task_queue: str,
    log: Path,
    *,
    tools: str | tuple[str, ...] = "runtime.example_tools:REGISTRY",
    retry_safe: tuple[str, ...] = ("slow_safe",),
    environment: dict[str, str] | None = None,
) -> AsyncIterator[WorkerProcess]:
    """A started, ready worker; on exit it is stopped (SIGTERM, then SIGKILL) if still alive."""
    worker = WorkerProcess(
        address=address,
        task_queue=task_queue,
        tools=tools,
        log_file=log,
        retry_safe=retry_safe,
        environment=dict(environment or {}),
    )
    worker.start()
    try:
        await asyncio.to_thread(worker.wait_ready, timeout=30)
        yield worker
    finally:
        await asyncio.to_thread(worker.stop)
