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

import helpers.workers
from helpers.workers import python_environment

from ._ledger import LEDGER_ENV
from ._tools import HOLD_ENV

__all__ = ["AnswererProcess", "WorkerProcess", "python_environment"]

TOOLS_ATTRIBUTE = "reliability._tools:REGISTRY"


@dataclass(slots=True, kw_only=True)
class WorkerProcess(helpers.workers.WorkerProcess):
    """``python -m scope_tool.workers`` serving the reliability tools, with their ledger and hold time."""

    ledger_file: Path
    tools: str = TOOLS_ATTRIBUTE
    hold_seconds: float = 0.0

    def child_environment(self) -> dict[str, str]:
        """The ledger the tools append to and how long they hold."""
        return {LEDGER_ENV: str(self.ledger_file), HOLD_ENV: str(self.hold_seconds)}


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
