"""Helpers to drive ``scope-tool`` the way a person does: real subprocesses, a real ``dev``.

``dev_session`` starts ``python -m scope_tool.cli dev`` once per session on random free ports with
a temporary data folder and waits for its ready line; if it does not come the tests FAIL with the
command's output (they never skip). ``run_cli`` runs one command against it and returns the exit
code and both streams.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from scope_tool.cli._dev import READY_LINE

STARTUP_SECONDS = 90.0


def free_port() -> int:
    """A port nothing listens on right now (the kernel's pick, released for the child)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def cli_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "scope_tool.cli", *args]


@dataclass(frozen=True, slots=True, kw_only=True)
class CliRun:
    code: int
    stdout: str
    stderr: str


def run_cli(
    *args: str,
    address: str | None = None,
    timeout: float = 60.0,
    env: dict[str, str] | None = None,
    stdin: bytes = b"",
    process: bool = False,
) -> CliRun:
    """Run one ``scope-tool`` command to completion, ``stdin`` as its standard input.

    It runs in this process through the CLI's own ``run(argv)`` (the environment set as a
    subprocess would see it), unless ``process`` is true or there is standard input: an
    interpreter and its imports per command cost a second or more of CPU, and most command tests
    are about what the command does, not about a process. Tests about a real terminal session
    (a second terminal, standard input, signals) pass ``process=True``.
    """
    environment = dict(os.environ if env is None else env)
    if address is not None:
        environment["SCOPE_TOOL_ADDRESS"] = address
    if not process and not stdin:
        return _run_here(list(args), environment)
    done = subprocess.run(
        cli_command(*args),
        input=stdin,
        capture_output=True,
        timeout=timeout,
        env=environment,
        check=False,
    )
    return CliRun(
        code=done.returncode,
        stdout=done.stdout.decode("utf-8", "replace"),
        stderr=done.stderr.decode("utf-8", "replace"),
    )


_IN_PROCESS = threading.Lock()


def _run_here(argv: list[str], environment: dict[str, str]) -> CliRun:
    """``run(argv)`` with ``environment`` as ``os.environ`` and the output captured.

    The process-wide state it swaps (the environment, ``sys.stdout``, ``sys.stderr``) makes one
    command run at a time; call it from a thread (``asyncio.to_thread``) inside async tests, since
    the command runs its own event loop.
    """
    from scope_tool.cli.__main__ import run

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:  # called (blocking) from async code, as subprocess.run was: run it on a thread
        done: list[CliRun] = []
        thread = threading.Thread(target=lambda: done.append(_run_here(argv, environment)))
        thread.start()
        thread.join()
        return done[0]
    out, err = io.StringIO(), io.StringIO()
    with _IN_PROCESS:
        saved = dict(os.environ)
        os.environ.clear()
        os.environ.update(environment)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = run(argv)
        finally:
            os.environ.clear()
            os.environ.update(saved)
    return CliRun(code=code, stdout=out.getvalue(), stderr=err.getvalue())


def run_cli_here(*args: str, address: str | None = None) -> CliRun:
    """Run one command in this process with ``--address`` given as a flag (see ``_run_here``)."""
    argv = [*args, *(["--address", address] if address is not None else [])]
    return _run_here(argv, dict(os.environ))


def pid_is_gone(pid: int) -> bool:
    """True when ``pid`` no longer runs (a zombie waiting for its reaper counts as gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    for line in status.splitlines():
        if line.startswith("State:"):
            return "Z" in line.split()[1]
    return False


def wait_until_gone(pid: int, seconds: float = 15.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if pid_is_gone(pid):
            return True
        time.sleep(0.1)
    return pid_is_gone(pid)


@dataclass(slots=True, kw_only=True)
class DevProcess:
    """One running ``scope-tool dev``; a thread drains its output into ``output``."""

    process: subprocess.Popen[str]
    data_dir: Path
    port: int
    ui_port: int
    inbox_port: int
    output: list[str] = field(default_factory=list)
    ready: threading.Event = field(default_factory=threading.Event)
    reader: threading.Thread | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def text(self) -> str:
        return "\n".join(self.output)

    def lock_facts(self) -> dict[str, object]:
        """The lock file's facts. ``dev`` rewrites the file in place (the flock is on its inode,
        so it cannot be replaced by a rename): a read can fall between truncate and write."""
        for _ in range(50):
            try:
                facts = json.loads((self.data_dir / "dev.lock").read_text())
            except json.JSONDecodeError:
                time.sleep(0.02)
                continue
            assert isinstance(facts, dict)
            return facts
        raise AssertionError(f"{self.data_dir / 'dev.lock'} never held whole JSON")

    def drain(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.output.append(line.rstrip("\n"))
            if READY_LINE in line:
                self.ready.set()
        self.process.stdout.close()

    def stop(self, signum: signal.Signals = signal.SIGINT, seconds: float = 30.0) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signum)
        try:
            code = self.process.wait(timeout=seconds)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
            if self.reader is not None:
                self.reader.join(timeout=10)
        return code


STARTED: list[DevProcess] = []
"""Every ``scope-tool dev`` the session started, so one a failing test left running is stopped."""


def stop_left_running(since: int) -> None:
    """Stop (Ctrl-C: it takes its server and worker along) each dev from ``STARTED[since:]``
    still running; a test that fails before its own ``stop`` leaves no processes behind."""
    for dev in STARTED[since:]:
        if dev.process.poll() is None:
            dev.stop(signal.SIGINT)


def start_dev(
    data_dir: Path, *extra: str, port: int | None = None, cwd: Path | None = None
) -> DevProcess:
    """Start ``scope-tool dev`` and block until it prints its ready line (or fail loudly).

    With ``cwd`` it runs there as the installed ``scope-tool`` command, as a user starts it in
    their own project folder. Ports come from :func:`free_port`, which four test processes
    draw from the kernel's ephemeral range at once (and every outgoing connection takes its
    source port from the same range): when one is taken between the pick and the server's
    bind, ``dev`` says "address already in use" and is started again on fresh ports (the
    ports a caller chose stay).
    """
    for attempt in range(3):
        dev = _start_dev_once(data_dir, extra, port=port, cwd=cwd)
        if dev.ready.is_set():
            return dev
        if "address already in use" not in dev.text or attempt == 2:
            break
    pytest.fail(
        f"scope-tool dev did not become ready within {STARTUP_SECONDS:g}s "
        f"(exit code {dev.process.returncode}); its output:\n{dev.text}",
        pytrace=False,
    )


def _start_dev_once(
    data_dir: Path, extra: tuple[str, ...], *, port: int | None, cwd: Path | None
) -> DevProcess:
    """One start of ``dev``: ready, or stopped with its output kept."""
    port = port or free_port()
    ui_port, inbox_port = free_port(), free_port()
    command = cli_command() if cwd is None else [str(Path(sys.executable).parent / "scope-tool")]
    process = subprocess.Popen(
        [
            *command,
            "dev",
            "--port",
            str(port),
            "--ui-port",
            str(ui_port),
            "--inbox-port",
            str(inbox_port),
            "--data-dir",
            str(data_dir),
            *extra,
        ],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
    )
    dev = DevProcess(
        process=process, data_dir=data_dir, port=port, ui_port=ui_port, inbox_port=inbox_port
    )
    STARTED.append(dev)
    dev.reader = threading.Thread(target=dev.drain, daemon=True)
    dev.reader.start()
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline and process.poll() is None:
        if dev.ready.wait(timeout=0.1):
            return dev
    if not dev.ready.is_set():
        dev.stop(signal.SIGTERM)
        dev.reader.join(timeout=5)  # the whole output, for the message and the retry check
    return dev


def cli(
    dev: DevProcess, *args: str, timeout: float = 60.0, stdin: bytes = b"", process: bool = False
) -> CliRun:
    """Run a command against ``dev`` (address from the environment, as users set it)."""
    return run_cli(*args, address=dev.address, timeout=timeout, stdin=stdin, process=process)


def assert_user_error(result: CliRun, *, code: int, contains: str) -> None:
    """One clear error line (plus optional schema details), never a traceback."""
    assert result.code == code, (result.code, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    first = result.stderr.splitlines()[0] if result.stderr else ""
    assert first.startswith("scope-tool: error: "), result.stderr
    assert contains in result.stderr, result.stderr
