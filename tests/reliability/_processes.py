"""Worker and answerer processes the scenarios start, watch and SIGKILL.

Both run as real ``python -m ...`` subprocesses, so a SIGKILL is a genuine crash (no
``finally``, no flush), and the answers really come from another process than the one that
started the calls. The ``tests`` directory goes on ``PYTHONPATH`` so ``reliability._tools`` is
importable by name.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._ledger import LEDGER_ENV
from ._tools import HOLD_ENV

__all__ = ["AnswererProcess", "WorkerProcess", "python_environment"]

TESTS_DIRECTORY = Path(__file__).resolve().parents[1]
TOOLS_ATTRIBUTE = "reliability._tools:REGISTRY"


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
    """``python -m workers`` serving the reliability tools on one task queue."""

    address: str
    task_queue: str
    ledger_file: Path
    log_file: Path
    hold_seconds: float = 0.0
    retry_safe: tuple[str, ...] = ()
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Spawn the worker; it polls as soon as it has connected."""
        log = self.log_file.open("ab")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "workers",
                "--tools",
                TOOLS_ATTRIBUTE,
                "--address",
                self.address,
                "--task-queue",
                self.task_queue,
                *(flag for tool in self.retry_safe for flag in ("--retry-safe", tool)),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=python_environment(
                **{LEDGER_ENV: str(self.ledger_file), HOLD_ENV: str(self.hold_seconds)}
            ),
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


@dataclass(slots=True, kw_only=True)
class AnswererProcess:
    """``python -m reliability._answerer``: answers every listed call from another process."""

    address: str
    task_queue: str
    keys_file: Path
    log_file: Path
    concurrency: int = 32
    deadline_seconds: float = 600.0
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0

    def start(self) -> None:
        """Spawn the answerer; it reads the call ids from ``keys_file`` (one per line)."""
        self.started_at = time.monotonic()
        log = self.log_file.open("ab")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "reliability._answerer",
                "--address",
                self.address,
                "--task-queue",
                self.task_queue,
                "--keys-file",
                str(self.keys_file),
                "--concurrency",
                str(self.concurrency),
                "--deadline",
                str(self.deadline_seconds),
            ],
            stdout=subprocess.PIPE,
            stderr=log,
            stdin=subprocess.DEVNULL,
            env=python_environment(),
            start_new_session=True,
        )
        log.close()

    def wait_report(self, *, timeout: float) -> dict[str, Any]:
        """Wait for the answerer to finish and parse the JSON report on its last stdout line."""
        assert self.process is not None, "answerer was never started"
        try:
            stdout, _ = self.process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)
            raise
        lines = stdout.decode(errors="replace").strip().splitlines()
        if self.process.returncode != 0 or not lines:
            raise RuntimeError(
                f"answerer exited with {self.process.returncode}; stdout={lines[-5:]!r}; "
                f"stderr tail={self.log_file.read_text(errors='replace')[-2000:]!r}"
            )
        report: dict[str, Any] = json.loads(lines[-1])
        return report

    def kill(self) -> None:
        """Teardown: never leave an answerer behind."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)
