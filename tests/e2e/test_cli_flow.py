"""One approval end to end, as the README's quickstart does it from a second terminal.

Every step is a separate ``scope-tool`` process against a real ``scope-tool dev``: start a call,
find it with ``pending``, have a wrong answer refused with the schema shown, answer right, read
the result, and check the approved file holds exactly the approved content.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
import time
import uuid

import pytest

from ._cli import CliRun, DevProcess, assert_user_error, cli, cli_command


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _wait_until_pending(dev: DevProcess, call_id: str, seconds: float = 30.0) -> CliRun:
    """``pending`` reads eventually consistent visibility: poll until the call is listed."""
    deadline = time.monotonic() + seconds
    listed = cli(dev, "pending")
    while call_id not in listed.stdout and time.monotonic() < deadline:
        time.sleep(0.3)
        listed = cli(dev, "pending")
    return listed


def test_one_approval_from_a_second_terminal(dev_session: DevProcess) -> None:
    """The README's two terminals: the call, the answer and the wait are each a process of
    their own; the checks between them run the command in-process (same code, no start-up)."""
    call_id = _unique("quickstart")
    content = "hello from scope-tool\n"
    arguments = json.dumps({"path": "notes/hello.txt", "content": content})

    started = cli(dev_session, "call", "write_file", arguments, "--id", call_id, process=True)
    assert started.code == 0, started
    assert f"started call {call_id}" in started.stdout

    listed = _wait_until_pending(dev_session, call_id)
    assert listed.code == 0, listed
    assert "CALL ID" in listed.stdout
    row = next(line for line in listed.stdout.splitlines() if line.startswith(call_id))
    assert "write_file" in row
    assert "Write this exact content to notes/hello.txt?" in row

    as_json = cli(dev_session, "pending", "--json", "--tool", "write_file")
    assert as_json.code == 0, as_json
    entry = next(item for item in json.loads(as_json.stdout) if item["call_id"] == call_id)
    assert entry["pending"]["response_schema"] == {"type": "boolean"}
    assert entry["pending"]["prompt"]["content"] == content

    status = cli(dev_session, "status", call_id)
    assert status.code == 0, status
    assert "AWAITING_INPUT" in status.stdout
    assert f"scope-tool answer {call_id} 'true'" in status.stdout

    wrong = cli(dev_session, "answer", call_id, '"yes"')
    assert_user_error(wrong, code=1, contains="answer refused")
    assert '"type": "boolean"' in wrong.stderr, wrong.stderr
    still = json.loads(cli(dev_session, "status", call_id, "--json").stdout)
    assert still["phase"] == "AWAITING_INPUT"
    assert still["answers"] == []

    not_json = cli(dev_session, "answer", call_id, "yes")
    assert_user_error(not_json, code=2, contains="the answer is not valid JSON")

    right = cli(dev_session, "answer", call_id, "true", "--by", "alice", process=True)
    assert right.code == 0, right
    assert "answer accepted" in right.stdout

    result = cli(dev_session, "result", call_id, "--wait", process=True)
    assert result.code == 0, result
    assert f"call {call_id}: COMPLETED" in result.stdout
    assert f"wrote {len(content.encode())} bytes to notes/hello.txt" in result.stdout
    written = dev_session.data_dir / "files" / "notes" / "hello.txt"
    assert written.read_text() == content

    final = json.loads(cli(dev_session, "status", call_id, "--json").stdout)
    assert final["phase"] == "COMPLETED"
    assert [answer["answered_by"] for answer in final["answers"]] == ["alice"]
    as_result = json.loads(cli(dev_session, "result", call_id, "--json").stdout)
    assert as_result["phase"] == "COMPLETED"
    assert as_result["rounds"] == 2

    again = cli(dev_session, "answer", call_id, "true")
    assert_user_error(again, code=1, contains="is not waiting for input (phase COMPLETED)")


def test_declined_write_writes_nothing(dev_session: DevProcess) -> None:
    call_id = _unique("declined")
    arguments = json.dumps({"path": "declined.txt", "content": "never"})
    assert cli(dev_session, "call", "write_file", arguments, "--id", call_id).code == 0
    _wait_until_pending(dev_session, call_id)
    assert cli(dev_session, "answer", call_id, "false").code == 0
    result = cli(dev_session, "result", call_id, "--wait")
    assert "not written" in result.stdout, result
    assert not (dev_session.data_dir / "files" / "declined.txt").exists()


def test_path_escaping_the_sandbox_is_refused_before_asking(dev_session: DevProcess) -> None:
    call_id = _unique("escape")
    arguments = json.dumps({"path": "../outside.txt", "content": "x"})
    waited = cli(dev_session, "call", "write_file", arguments, "--id", call_id, "--wait")
    assert waited.code == 1, waited
    assert "REJECTED" in waited.stdout
    assert "escapes the sandbox folder" in waited.stdout
    assert not (dev_session.data_dir / "outside.txt").exists()


def test_call_wait_follows_three_rounds(dev_session: DevProcess) -> None:
    """``call --wait`` prints each question with the command that answers it, then the result."""
    call_id = _unique("deploy")
    arguments = json.dumps({"service": "billing", "version": "2.4.1"})
    follower = subprocess.Popen(
        [*cli_command("call", "deploy_plan", arguments, "--id", call_id, "--wait")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "SCOPE_TOOL_ADDRESS": dev_session.address},
    )
    lines: list[str] = []
    waiting = threading.Event()

    def read() -> None:
        assert follower.stdout is not None
        for line in follower.stdout:
            lines.append(line.rstrip("\n"))
            if "waiting for input" in line:
                waiting.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        for answer in ("true", '"canary"', "true"):
            assert waiting.wait(timeout=30), lines
            waiting.clear()
            assert cli(dev_session, "answer", call_id, answer).code == 0
        assert follower.wait(timeout=60) == 0, (lines, follower.stderr)
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()
        reader.join(timeout=10)
        for stream in (follower.stdout, follower.stderr):
            if stream is not None:
                stream.close()
    text = "\n".join(lines)
    assert f"started call {call_id} (tool deploy_plan)" in text
    assert "waiting for input: Approve this plan to deploy billing 2.4.1?" in text
    assert f"answer with: scope-tool answer {call_id} 'true'" in text
    assert f"answer with: scope-tool answer {call_id} '\"canary\"'" in text
    assert f"call {call_id}: COMPLETED" in text
    assert '"strategy": "canary"' in text or '"strategy":"canary"' in text


def test_add_completes_in_one_round(dev_session: DevProcess) -> None:
    waited = cli(dev_session, "call", "add", '{"a": 2, "b": 3}', "--wait")
    assert waited.code == 0, waited
    assert "COMPLETED" in waited.stdout
    assert re.search(r"^output +5$", waited.stdout, re.MULTILINE), waited.stdout


def test_arguments_and_answers_read_from_standard_input(dev_session: DevProcess) -> None:
    # Content with quotes and newlines, awkward to put in a shell argument.
    content = "line \"one\"\nline 'two'\n"
    call_id = _unique("stdin")
    arguments = json.dumps({"path": "stdin.txt", "content": content}).encode()
    started = cli(dev_session, "call", "write_file", "-", "--id", call_id, stdin=arguments)
    assert started.code == 0, started
    _wait_until_pending(dev_session, call_id)
    wrong = cli(dev_session, "answer", call_id, "-", stdin=b'"yes"\n')
    assert_user_error(wrong, code=1, contains='answer refused (schema): at (root): "yes"')
    right = cli(dev_session, "answer", call_id, "-", stdin=b"true\n")
    assert right.code == 0, right
    result = cli(dev_session, "result", call_id, "--wait")
    assert f"call {call_id}: COMPLETED" in result.stdout, result
    assert (dev_session.data_dir / "files" / "stdin.txt").read_text() == content


def test_unreadable_standard_input_is_refused_before_anything_starts(
    dev_session: DevProcess,
) -> None:
    call_id = _unique("stdin-bad")
    too_large = b'{"a": 1, "b": "' + b"x" * (1 << 20) + b'"}'
    big = cli(dev_session, "call", "add", "-", "--id", call_id, stdin=too_large)
    assert_user_error(
        big, code=2, contains=f"ARGS from standard input is {len(too_large)} bytes; the limit is"
    )
    not_utf8 = cli(dev_session, "call", "add", "-", "--id", call_id, stdin=b'{"a": "\xff"}')
    assert_user_error(
        not_utf8, code=2, contains="ARGS from standard input is not UTF-8 (invalid start byte"
    )
    answer = cli(dev_session, "answer", call_id, "-", stdin=b"\xfe")
    assert_user_error(answer, code=2, contains="JSON from standard input is not UTF-8")
    missing = cli(dev_session, "status", call_id)
    assert_user_error(missing, code=1, contains=f"no call with id {call_id!r}")


def test_cancel_a_waiting_call(dev_session: DevProcess) -> None:
    call_id = _unique("cancel")
    arguments = json.dumps({"path": "cancelled.txt", "content": "x"})
    assert cli(dev_session, "call", "write_file", arguments, "--id", call_id).code == 0
    _wait_until_pending(dev_session, call_id)
    cancelled = cli(dev_session, "cancel", call_id)
    assert cancelled.code == 0, cancelled
    result = cli(dev_session, "result", call_id, "--wait")
    assert result.code == 1, result
    assert f"call {call_id}: CANCELLED" in result.stdout
    assert_user_error(cli(dev_session, "cancel", call_id), code=1, contains="already finished")


def test_wait_timeout_gives_up_but_the_call_keeps_waiting(dev_session: DevProcess) -> None:
    call_id = _unique("patient")
    arguments = json.dumps({"path": "patient.txt", "content": "later"})
    assert cli(dev_session, "call", "write_file", arguments, "--id", call_id).code == 0
    _wait_until_pending(dev_session, call_id)
    # Same id again: attaches to the waiting call, shows its question, gives up after 1 s.
    waited = cli(
        dev_session, "call", "write_file", arguments, "--id", call_id, "--wait", "--timeout", "1"
    )
    assert_user_error(waited, code=1, contains="gave up waiting after 1s")
    assert "waiting for input: Write this exact content to patient.txt?" in waited.stdout
    assert (
        json.loads(cli(dev_session, "status", call_id, "--json").stdout)["phase"]
        == "AWAITING_INPUT"
    )

    not_yet = cli(dev_session, "result", call_id)
    assert_user_error(not_yet, code=1, contains="has not finished (phase AWAITING_INPUT)")
    stale = cli(dev_session, "answer", call_id, "true", "--request-id", f"{call_id}/r7")
    assert_user_error(stale, code=1, contains="is not the pending one")
    assert cli(dev_session, "answer", call_id, "true", "--request-id", f"{call_id}/r1").code == 0
    assert cli(dev_session, "result", call_id, "--wait").code == 0


def test_a_second_call_with_the_same_id_attaches(dev_session: DevProcess) -> None:
    call_id = _unique("attach")
    first = cli(dev_session, "call", "add", '{"a": 1, "b": 2}', "--id", call_id, "--wait")
    again = cli(dev_session, "call", "add", '{"a": 1, "b": 2}', "--id", call_id, "--wait")
    assert first.code == again.code == 0, (first, again)
    status = json.loads(cli(dev_session, "status", call_id, "--json").stdout)
    assert status["outcome"]["text"] == "3"
    assert status["outcome"]["rounds"] == 1
    table = cli(dev_session, "status", call_id)
    assert re.search(r"^phase +COMPLETED$", table.stdout, re.MULTILINE), table.stdout
    assert re.search(r"^output +3$", table.stdout, re.MULTILINE), table.stdout


def test_only_allowed_people_may_answer(dev_session: DevProcess) -> None:
    call_id = _unique("allowed")
    arguments = json.dumps({"path": "allowed.txt", "content": "for bob"})
    assert (
        cli(dev_session, "call", "write_file", arguments, "--id", call_id, "--allow", "bob").code
        == 0
    )
    _wait_until_pending(dev_session, call_id)
    refused = cli(dev_session, "answer", call_id, "true", "--by", "alice")
    assert_user_error(refused, code=1, contains="not_allowed")
    assert cli(dev_session, "answer", call_id, "true", "--by", "bob").code == 0
    assert cli(dev_session, "result", call_id, "--wait").code == 0


def test_a_bad_notify_url_is_a_usage_error(dev_session: DevProcess) -> None:
    result = cli(dev_session, "call", "add", '{"a":1,"b":1}', "--notify-url", "ftp://nope")
    assert_user_error(result, code=2, contains="notify_url must be an http:// or https:// URL")


def test_answer_lines_carry_the_connection_flags_given(
    dev_session: DevProcess, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--address` on the command line (not in the environment): the printed answer command
    must carry it, or pasted it talks to localhost:7233 (run in-process: the text is the point)."""
    from scope_tool.cli.__main__ import run

    monkeypatch.delenv("SCOPE_TOOL_ADDRESS", raising=False)
    address = ["--address", dev_session.address]
    call_id = _unique("flagged")
    arguments = json.dumps({"path": "flagged.txt", "content": "x"})
    waited = run(
        ["call", "write_file", arguments, "--id", call_id, "--wait", "--timeout", "2", *address]
    )
    shown = capsys.readouterr().out
    assert waited == 1
    assert f"scope-tool answer {call_id} 'true' --address {dev_session.address}" in shown, shown
    assert run(["status", call_id, *address]) == 0
    shown = capsys.readouterr().out
    assert f"scope-tool answer {call_id} 'true' --address {dev_session.address}" in shown, shown
    assert run(["cancel", call_id, *address]) == 0
