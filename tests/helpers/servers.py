"""A Temporal dev server that a test owns outright: it can SIGKILL it and bring it back.

The shared ``temporal_address`` fixture is a server every test leans on, so no test may kill
it. Fault scenarios need their own: ``temporal server start-dev`` on a SQLite file (WAL, as the
runtime recommends) and a fixed random port, so that after a SIGKILL the same command on the
same file and port brings back every workflow the dead server had persisted, and clients
reconnect to the address they already know.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from scope_tool.config._embedded_server import temporal_cli
from scope_tool.config._embedded_server import SERVER_TUNING

__all__ = ["DedicatedDevServer", "free_port"]

SEARCH_ATTRIBUTES = ("ScopeToolName=Keyword", "ScopeToolPhase=Keyword")


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
class DedicatedDevServer:
    """One ``temporal server start-dev`` process on ``db_file`` and ``port``.

    Mutable on purpose: it tracks the one live process so ``kill``/``start`` can cycle it.
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

    def start(self, *, ready_within: float = 30.0) -> None:
        """Start (or restart) the server and wait until its frontend reports SERVING.

        An open port is not enough: for a moment after it opens, the frontend refuses clients
        with "Frontend is not healthy yet", and ``Client.connect`` fails instead of retrying.

        Raises:
            RuntimeError: the server exited or never opened its port; the log tail says why.
        """
        if self.process is not None and self.process.poll() is None:
            raise RuntimeError(f"dev server on port {self.port} is already running")
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
        for attribute in SEARCH_ATTRIBUTES:
            command += ["--search-attribute", attribute]
        log = self.log_file.open("ab")
        self.process = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        log.close()
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
        """Graceful stop for fixture teardown."""
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
