"""Worker processes the benchmarks start, watch and measure.

Both sides run their worker as a child process (``python -m scope_tool.workers`` for the engine,
``python -m bare_worker`` for the baseline) so the client's event loop never shares a CPU slice
with a worker's, and so the worker's resident memory is its own: read from ``/proc/PID/status``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

__all__ = [
    "BENCH_DIR",
    "REPO_ROOT",
    "ProcessMemory",
    "WorkerDiedError",
    "WorkerProcess",
    "find_process",
    "process_cpu_seconds",
]

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent.parent

T = TypeVar("T")


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds process ``pid`` (all its threads) has used so far.

    CPU time, unlike wall time, barely moves when other programs load the machine, so per-call
    CPU figures stay comparable between a busy and a quiet run.
    """
    stat = Path(f"/proc/{pid}/stat").read_text()
    # Field 2 (the command) may hold spaces; everything after its closing parenthesis is fixed.
    fields = stat[stat.rindex(")") + 2 :].split()
    user_ticks, system_ticks = int(fields[11]), int(fields[12])
    return (user_ticks + system_ticks) / os.sysconf("SC_CLK_TCK")


def find_process(command_line_fragment: str) -> int:
    """The pid of the one process whose command line contains ``command_line_fragment``.

    Raises:
        LookupError: no process, or more than one, matches.
    """
    matches: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command_line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if command_line_fragment in command_line:
            matches.append(int(entry.name))
    if len(matches) != 1:
        raise LookupError(
            f"expected one process with {command_line_fragment!r} in its command line, "
            f"found {matches}"
        )
    return matches[0]


class WorkerDiedError(RuntimeError):
    """The worker process exited while the benchmark still needed it; the message has its log."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessMemory:
    """Resident memory of one process, from ``/proc/PID/status``."""

    rss_bytes: int
    peak_rss_bytes: int

    @property
    def rss_mib(self) -> float:
        return self.rss_bytes / (1 << 20)

    @property
    def peak_rss_mib(self) -> float:
        return self.peak_rss_bytes / (1 << 20)


class WorkerProcess:
    """One worker child process; its output goes to a log file shown if it dies."""

    def __init__(self, *, name: str, argv: Sequence[str], log_path: Path) -> None:
        self.name = name
        self._argv = tuple(argv)
        self._log_path = log_path
        self._process: asyncio.subprocess.Process | None = None

    @classmethod
    def python_module(cls, module: str, *arguments: str, name: str, log_dir: Path) -> WorkerProcess:
        """A worker run as ``python -m MODULE ARGUMENTS`` with this interpreter."""
        return cls(
            name=name,
            argv=(sys.executable, "-m", module, *arguments),
            log_path=log_dir / f"{name}.log",
        )

    @property
    def pid(self) -> int:
        if self._process is None:
            raise RuntimeError(f"worker {self.name!r} was not started")
        return self._process.pid

    async def start(self) -> None:
        self._log_path.parent.mkdir(parents=True, exist_ok=True)
        environment = dict(os.environ)
        # The benchmark's tool modules (bench_tools, bare_workflows) live beside this file.
        search_path = [str(BENCH_DIR), str(REPO_ROOT)]
        if environment.get("PYTHONPATH"):
            search_path.append(environment["PYTHONPATH"])
        environment["PYTHONPATH"] = os.pathsep.join(search_path)
        with self._log_path.open("wb") as log:
            self._process = await asyncio.create_subprocess_exec(
                *self._argv,
                cwd=REPO_ROOT,
                env=environment,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log,
                stderr=asyncio.subprocess.STDOUT,
            )

    def log_tail(self, characters: int = 4000) -> str:
        try:
            return self._log_path.read_text(errors="replace")[-characters:]
        except FileNotFoundError:
            return "(no log)"

    def ensure_alive(self) -> None:
        if self._process is None:
            raise RuntimeError(f"worker {self.name!r} was not started")
        if self._process.returncode is not None:
            raise WorkerDiedError(
                f"worker {self.name!r} ({' '.join(self._argv)}) exited with code "
                f"{self._process.returncode}; log {self._log_path}:\n{self.log_tail()}"
            )

    async def watch(self, awaitable: Awaitable[T], *, within: float) -> T:
        """Await ``awaitable`` but fail at once if the worker dies, and after ``within`` s."""
        if self._process is None:
            raise RuntimeError(f"worker {self.name!r} was not started")
        work = asyncio.ensure_future(awaitable)
        exited = asyncio.ensure_future(self._process.wait())
        try:
            done, _ = await asyncio.wait(
                {work, exited}, timeout=within, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            exited.cancel()
        if work in done:
            return work.result()
        work.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await work
        self.ensure_alive()
        raise TimeoutError(
            f"worker {self.name!r} did not finish the work within {within} s; "
            f"log {self._log_path}:\n{self.log_tail()}"
        )

    def memory(self) -> ProcessMemory:
        """The worker's resident memory now and its peak so far (VmRSS, VmHWM)."""
        self.ensure_alive()
        fields: dict[str, int] = {}
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                amount, unit = value.split()
                if unit != "kB":
                    raise ValueError(f"/proc/{self.pid}/status: unexpected unit in {line!r}")
                fields[key] = int(amount) * 1024
        return ProcessMemory(rss_bytes=fields["VmRSS"], peak_rss_bytes=fields["VmHWM"])

    def cpu_seconds(self) -> float:
        """CPU seconds the worker process has used so far."""
        self.ensure_alive()
        return process_cpu_seconds(self.pid)

    async def stop(self) -> None:
        """Stop cleanly with SIGTERM; kill if it has not exited within 20 s."""
        if self._process is None or self._process.returncode is not None:
            return
        self._process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(self._process.wait(), timeout=20)
        except TimeoutError:
            self._process.kill()
            await self._process.wait()
