"""``scope-tool inbox`` and the inbox inside ``scope-tool dev`` are wired to the same calls.

The inbox's pages are the inbox's own tests; here the wiring is checked as a user meets it: the
page answers on the printed port and lists a waiting call, a signal stops the command with exit
code 0, and an unsafe setting is refused with one line and exit code 2.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
import uuid

import pytest
from helpers.imports import without_packages

from ._cli import DevProcess, assert_user_error, cli, cli_command, free_port, run_cli


def _get(url: str, seconds: float = 30.0) -> str:
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                assert response.status == 200
                return str(response.read().decode("utf-8"))
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _waiting_call(dev: DevProcess) -> str:
    call_id = f"inbox-{uuid.uuid4().hex[:8]}"
    arguments = json.dumps({"path": "inbox.txt", "content": "from the inbox test"})
    assert cli(dev, "call", "write_file", arguments, "--id", call_id).code == 0
    deadline = time.monotonic() + 30
    while call_id not in cli(dev, "pending").stdout:
        assert time.monotonic() < deadline
        time.sleep(0.3)
    return call_id


def test_dev_serves_the_inbox(dev_session: DevProcess) -> None:
    assert f"Inbox                http://localhost:{dev_session.inbox_port}" in dev_session.text
    call_id = _waiting_call(dev_session)
    deadline = time.monotonic() + 30
    while call_id not in _get(f"http://127.0.0.1:{dev_session.inbox_port}/"):
        assert time.monotonic() < deadline, "the dev inbox never listed the waiting call"
        time.sleep(0.5)


def test_inbox_command_serves_and_stops_on_sigterm(dev_session: DevProcess) -> None:
    call_id = _waiting_call(dev_session)
    port = free_port()
    inbox = subprocess.Popen(
        cli_command("inbox", "--port", str(port), "--dev-loopback"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "SCOPE_TOOL_ADDRESS": dev_session.address},
    )
    try:
        deadline = time.monotonic() + 30
        while call_id not in _get(f"http://127.0.0.1:{port}/"):
            assert time.monotonic() < deadline, "the inbox never listed the waiting call"
            time.sleep(0.5)
        inbox.send_signal(signal.SIGTERM)
        stdout, stderr = inbox.communicate(timeout=30)
    finally:
        if inbox.poll() is None:
            inbox.kill()
            inbox.communicate()
    assert inbox.returncode == 0, stderr
    assert f"inbox listening on http://127.0.0.1:{port}" in stdout
    assert "Traceback" not in stderr


def test_inbox_refuses_to_run_open_off_loopback(dev_session: DevProcess) -> None:
    result = run_cli(
        "inbox", "--host", "0.0.0.0", "--port", str(free_port()), address=dev_session.address
    )
    assert_user_error(result, code=2, contains="")
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


_WITHOUT_WEB_STACK = without_packages(
    "starlette", "uvicorn", "jinja2", "multipart", "python_multipart"
)


def test_without_the_inbox_extra_the_worker_loads_and_inbox_says_how_to_install() -> None:
    worker_side = subprocess.run(
        [
            sys.executable,
            "-c",
            _WITHOUT_WEB_STACK
            + "import scope_tool.workers, scope_tool.workflows, scope_tool.cli._dev\nprint('loaded')",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert worker_side.stdout.strip() == "loaded", worker_side.stderr
    inbox = subprocess.run(
        [
            sys.executable,
            "-c",
            _WITHOUT_WEB_STACK + "sys.argv = ['scope-tool', 'inbox']\n"
            "from scope_tool.cli.__main__ import main\nmain()",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert inbox.returncode == 1, inbox
    assert "Traceback" not in inbox.stderr
    assert "the web inbox is not installed" in inbox.stderr
    assert "pip install 'scope-tool[inbox]'" in inbox.stderr


def test_inbox_without_a_sign_in_mode_names_the_flags(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The person typed flags, so the refusal names flags, not InboxAuth's parameters."""
    from scope_tool.cli.__main__ import run

    for name in ("IDENTITY_HEADER", "TOKEN_SECRET", "DEV_LOOPBACK"):
        monkeypatch.delenv(f"SCOPE_TOOL_INBOX_{name}", raising=False)
    assert run(["inbox", "--port", str(free_port())]) == 2
    error = capsys.readouterr().err
    assert error.startswith("scope-tool: error: "), error
    for flag in ("--identity-header", "--token-secret", "--dev-loopback"):
        assert flag in error, error
    for parameter in ("identity_header", "token_secret", "dev_loopback=True"):
        assert parameter not in error, error
