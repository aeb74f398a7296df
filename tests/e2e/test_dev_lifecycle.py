"""``scope-tool dev`` owns its process tree: one per data folder, and nothing outlives it.

Each test starts its own ``dev`` (random ports, temporary data folder), reads the child pids from
the lock file, stops it the way a person or a supervisor would, and checks the server and worker
processes are gone and the lock is released.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ._cli import (
    DevProcess,
    assert_user_error,
    cli_command,
    free_port,
    run_cli,
    start_dev,
    wait_until_gone,
)


def _children(dev: DevProcess) -> tuple[int, int]:
    facts = dev.lock_facts()
    assert facts["pid"] == dev.process.pid
    server_pid, worker_pid = int(str(facts["server_pid"])), int(str(facts["worker_pid"]))
    assert not wait_until_gone(server_pid, seconds=0.1), "the server is not running"
    assert not wait_until_gone(worker_pid, seconds=0.1), "the worker is not running"
    return server_pid, worker_pid


@pytest.mark.parametrize(
    "signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=["ctrl-c", "sigterm", "sighup"]
)
def test_a_signal_stops_everything(tmp_path: Path, signum: signal.Signals) -> None:
    dev = start_dev(tmp_path / "data")
    server_pid, worker_pid = _children(dev)
    assert "Waiting for input    http://localhost:" in dev.text
    assert "query=ScopeToolPhase%3D%22AWAITING_INPUT%22" in dev.text
    assert "scope-tool call write_file" in dev.text
    assert dev.stop(signum) == 0, dev.text
    assert wait_until_gone(server_pid), "the Temporal dev server outlived scope-tool dev"
    assert wait_until_gone(worker_pid), "the worker outlived scope-tool dev"
    assert not (tmp_path / "data" / "dev.lock").exists()
    assert "stopping" in dev.text
    assert "Traceback" not in dev.text


def test_a_killed_dev_takes_its_server_with_it(tmp_path: Path) -> None:
    """Even SIGKILL (no chance to clean up) leaves no server: the kernel's parent-death signal."""
    dev = start_dev(tmp_path / "data")
    server_pid, worker_pid = _children(dev)
    dev.stop(signal.SIGKILL)
    assert wait_until_gone(server_pid), "the server survived its killed supervisor"
    assert wait_until_gone(worker_pid), "the worker survived its killed supervisor"
    # The kernel released the flock with the process: a new dev starts on the same folder.
    again = start_dev(tmp_path / "data")
    assert again.stop(signal.SIGINT) == 0


def test_a_second_dev_is_refused_clearly(tmp_path: Path) -> None:
    dev = start_dev(tmp_path / "data")
    try:
        same_folder = run_cli(
            "dev",
            "--data-dir",
            str(tmp_path / "data"),
            "--port",
            str(free_port()),
            "--ui-port",
            str(free_port()),
        )
        assert_user_error(same_folder, code=1, contains="scope-tool dev is already running")
        assert f"pid {dev.process.pid}" in same_folder.stderr
        assert f"Temporal at localhost:{dev.port}" in same_folder.stderr

        same_port = run_cli(
            "dev",
            "--data-dir",
            str(tmp_path / "other"),
            "--port",
            str(dev.port),
            "--ui-port",
            str(free_port()),
        )
        assert_user_error(
            same_port, code=1, contains=f"port {dev.port} on 127.0.0.1 is already in use"
        )
        assert not (tmp_path / "other" / "dev.db").exists()
    finally:
        assert dev.stop(signal.SIGINT) == 0


def test_dev_data_survives_a_restart(tmp_path: Path) -> None:
    """The SQLite file keeps a waiting call across a restart of the whole dev tree."""
    data = tmp_path / "data"
    port = free_port()
    dev = start_dev(data, port=port)
    address = dev.address
    started = run_cli(
        "call",
        "write_file",
        '{"path":"kept.txt","content":"kept"}',
        "--id",
        "kept-call",
        address=address,
    )
    assert started.code == 0, started
    assert _phase(address, "kept-call") in {"RUNNING", "AWAITING_INPUT"}
    assert dev.stop(signal.SIGTERM) == 0
    assert (data / "dev.db").exists()

    restarted = start_dev(data, port=port)
    try:
        assert _wait_phase(address, "kept-call", "AWAITING_INPUT")
        assert run_cli("answer", "kept-call", "true", address=address).code == 0
        assert run_cli("result", "kept-call", "--wait", address=address).code == 0
        assert (data / "files" / "kept.txt").read_text() == "kept"
    finally:
        restarted.stop(signal.SIGINT)


def _phase(address: str, call_id: str) -> str:
    """The call's phase, or "" while nothing can answer its status query."""
    result = run_cli("status", call_id, "--json", address=address)
    if result.code != 0:
        assert "none answered" in result.stderr, result
        return ""
    return str(json.loads(result.stdout)["phase"])


def _wait_phase(address: str, call_id: str, phase: str, seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if _phase(address, call_id) == phase:
            return True
        time.sleep(0.3)
    return False


def test_usage_errors_of_dev(tmp_path: Path) -> None:
    result = run_cli("dev", "--port", "70000", "--data-dir", str(tmp_path))
    assert_user_error(result, code=2, contains="--port must be a TCP port, got 70000")
    assert os.listdir(tmp_path) == []


def test_a_crashed_worker_is_restarted_and_the_call_survives(tmp_path: Path) -> None:
    dev = start_dev(tmp_path / "data")
    try:
        arguments = '{"path": "survivor.txt", "content": "still here"}'
        assert (
            run_cli("call", "write_file", arguments, "--id", "survivor", address=dev.address).code
            == 0
        )
        assert _wait_phase(dev.address, "survivor", "AWAITING_INPUT")
        _, worker_pid = _children(dev)
        os.kill(worker_pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while dev.lock_facts().get("worker_pid") in (worker_pid, None):
            assert time.monotonic() < deadline, dev.text
            time.sleep(0.2)
        assert "the worker stopped (code -9); restarting it" in dev.text
        # A query first goes to the killed worker's sticky queue; Temporal falls back to the
        # new worker after a few seconds, so the status becomes readable again by itself.
        assert _wait_phase(dev.address, "survivor", "AWAITING_INPUT", seconds=60)
        assert run_cli("answer", "survivor", "true", address=dev.address).code == 0
        result = run_cli("result", "survivor", "--wait", address=dev.address)
        assert result.code == 0, result
        assert (tmp_path / "data" / "files" / "survivor.txt").read_text() == "still here"
    finally:
        assert dev.stop(signal.SIGINT) == 0


def test_pending_still_lists_a_call_nobody_can_answer_for(tmp_path: Path) -> None:
    """Its worker gone, a waiting call's status query times out; ``pending`` still shows it."""
    dev = start_dev(tmp_path / "data")
    queue = "short-lived-worker"
    worker = subprocess.Popen(
        cli_command("worker", "--tools", "examples.tools:registry", "--task-queue", queue),
        env={**os.environ, "SCOPE_TOOL_ADDRESS": dev.address},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # `call` names only a tool some worker serves: wait until this one polls.
        assert worker.stderr is not None
        ready = worker.stderr.readline()
        assert "worker ready" in ready, ready
        arguments = '{"path": "orphan.txt", "content": "x"}'
        started = run_cli(
            "call",
            "write_file",
            arguments,
            "--id",
            "orphan",
            "--task-queue",
            queue,
            address=dev.address,
        )
        assert started.code == 0, started
        assert _wait_phase(dev.address, "orphan", "AWAITING_INPUT")
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=30) == 0
        # Each waits out the status query nobody answers: run side by side.
        with ThreadPoolExecutor(2) as both:
            as_text = both.submit(run_cli, "pending", address=dev.address, timeout=90)
            json_run = both.submit(run_cli, "pending", "--json", address=dev.address, timeout=90)
            listed, json_listed = as_text.result(), json_run.result()
        assert listed.code == 0, listed
        row = next(line for line in listed.stdout.splitlines() if line.startswith("orphan"))
        assert "(unreadable:" in row
        as_json = json.loads(json_listed.stdout)
        assert as_json[0]["call_id"] == "orphan"
        assert "none answered" in as_json[0]["error"]
    finally:
        if worker.poll() is None:
            worker.kill()
        worker.communicate()  # reaps it and closes its stderr pipe
        assert dev.stop(signal.SIGINT) == 0
