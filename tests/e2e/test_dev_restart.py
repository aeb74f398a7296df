"""What a person does after Ctrl-C: start ``dev`` again at once, and read what a waiting client says.

Both tests keep a real client connected while ``dev`` stops (``scope-tool result --wait`` on a call
waiting for an answer), because that is what leaves the server's side of the connection in
TIME_WAIT and what makes temporalio's core log retry warnings.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

from scope_tool.serving._dev_server import port_is_free

from ._cli import DevProcess, cli, cli_command, start_dev, wait_until_gone

_ANSI_ESCAPE = re.compile(r"\x1b\[")


def _waiting_client(dev: DevProcess, call_id: str) -> subprocess.Popen[str]:
    """A call waiting for approval and a ``result --wait`` connected to the server for it."""
    started = cli(dev, "call", "write_file", '{"path": "a.txt", "content": "hi"}', "--id", call_id)
    assert started.code == 0, started.stderr
    waiter = subprocess.Popen(
        cli_command("result", call_id, "--wait", "--address", dev.address),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not _is_connected(waiter.pid, dev.port):
        time.sleep(0.2)
    time.sleep(1.0)  # past its status query: now in the long poll for the result
    assert waiter.poll() is None, waiter.communicate()
    return waiter


def _is_connected(pid: int, port: int) -> bool:
    """Whether process ``pid`` holds an established connection to ``port`` (``ss``'s view)."""
    shown = subprocess.run(
        ["ss", "-Htnp", "state", "established", f"( dport = :{port} )"],
        capture_output=True,
        text=True,
        check=False,
    )
    return f"pid={pid}," in shown.stdout


def _server_side_time_wait(port: int) -> int:
    shown = subprocess.run(
        ["ss", "-Htn", "state", "time-wait", f"( sport = :{port} )"],
        capture_output=True,
        text=True,
        check=False,
    )
    return len(shown.stdout.splitlines())


def test_a_port_left_in_time_wait_is_free_but_a_listener_is_not() -> None:
    """The state a stopped server leaves: it closed a client's connection first, then stopped."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as Go's listeners do
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = int(listener.getsockname()[1])
    client = socket.create_connection(("127.0.0.1", port))
    accepted, _ = listener.accept()
    assert not port_is_free("127.0.0.1", port), "a listening port was reported free"
    accepted.close()  # the server closes first: its side goes to TIME_WAIT
    assert client.recv(1) == b""
    client.close()
    listener.close()
    assert _server_side_time_wait(port) >= 1, "the TIME_WAIT state was not built"
    assert port_is_free("127.0.0.1", port), "TIME_WAIT was taken for a listener"


def test_dev_starts_again_on_the_same_port_right_after_ctrl_c(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    first = start_dev(data_dir)
    waiter = _waiting_client(first, "restart-1")
    try:
        server_pid = int(str(first.lock_facts()["server_pid"]))
        assert first.stop(signal.SIGINT) == 0, first.text
        assert wait_until_gone(server_pid)
        # Usually the old server's side of a connection now lingers in TIME_WAIT (which side
        # closes first is a race; the unit test below builds that state deterministically).
        second = start_dev(data_dir, port=first.port)  # fails the test if it does not start
        try:
            assert "already in use" not in second.text
            status = cli(second, "status", "restart-1")
            assert status.code == 0, status.stderr
            assert "AWAITING_INPUT" in status.stdout  # the same data, the call still waits
        finally:
            assert second.stop(signal.SIGINT) == 0, second.text
    finally:
        if waiter.poll() is None:
            waiter.kill()
        waiter.communicate()


def test_result_wait_says_one_clear_line_when_the_server_stops(tmp_path: Path) -> None:
    """The server dies under a waiting client, which retries until it gives up.

    temporalio's core logs each retry past the fifth as a coloured ``WARN`` line on stderr unless
    the CLI's runtime keeps it off; SIGKILL (a crash) makes those retries certain, where a graceful
    stop may end the long poll with one clean error first.
    """
    dev = start_dev(tmp_path / "data")
    waiter = _waiting_client(dev, "quiet-1")
    try:
        os.kill(int(str(dev.lock_facts()["server_pid"])), signal.SIGKILL)
        stdout, stderr = waiter.communicate(timeout=90)
    finally:
        if waiter.poll() is None:
            waiter.kill()
            waiter.communicate()
        dev.stop(signal.SIGINT)  # dev may already have stopped: its server is gone
    assert waiter.returncode == 1, (stdout, stderr)
    both = stdout + stderr  # the core writes to either stream, depending on the version
    assert not _ANSI_ESCAPE.search(both), both
    assert "WARN" not in both, both
    assert "temporalio_client" not in both, both
    assert "sdk_core" not in both, both
    assert stdout == "", stdout
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("scope-tool: error: cannot read the result of call quiet-1"), stderr
