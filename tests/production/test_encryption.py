"""Encryption at rest against the session's real dev server: its SQLite file never sees a secret.

A marker travels in the arguments, the prompt, the tool's checkpoint state, the answer and the
output. With keys set, every front end (facade, status, history, the CLI) shows it, and no byte
of it is in the server's database files; without keys, the same steps put it there (the
control, which proves the scan can find it). A process with a wrong or missing key gets an error
naming the key, and the call waits, unharmed, for a worker that has it.
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from e2e._cli import run_cli
from helpers.waiting import wait_for_phase, wait_until_async
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowExecutionStatus

from production.keys import client_with_keys, new_key_entry
from production.tools import REGISTRY
from scope_tool import Request
from scope_tool.client import AnswerRejectedError, Phase, ToolCalls
from scope_tool.wire import PHASE_KEY
from scope_tool.wire.errors import PayloadDecryptionError
from scope_tool.workers import build_worker


def _note(marker: str) -> Request:
    return Request(name="secret_note", arguments=json.dumps({"note": marker}))


def _database_bytes(directory: Path) -> bytes:
    """Every file of the server's SQLite database (main file, WAL and shared memory)."""
    files = sorted(directory.glob("temporal.db*"))
    assert files, f"no database files in {directory}"
    return b"".join(each.read_bytes() for each in files)


async def _run_one_call(calls: ToolCalls, marker: str, task_queue: str) -> str:
    call_id = f"note-{uuid.uuid4()}"
    async with build_worker(calls.client, REGISTRY, task_queue=task_queue):
        handle = await calls.start(_note(marker), call_id=call_id)
        waiting = await wait_for_phase(handle, Phase.AWAITING_INPUT)
        assert marker in waiting.pending.prompt.decode()
        # A refusal's message is sealed too (encoded failure attributes), and still reads back.
        with pytest.raises(AnswerRejectedError, match="does not satisfy the response schema") as no:
            await handle.answer({"approve": "yes", "comment": ""})
        assert no.value.reason == "schema"
        await handle.answer({"approve": True, "comment": f"{marker}-ok"}, answered_by="alice")
        outcome = await handle.result()
        assert outcome.phase is Phase.COMPLETED
        assert outcome.output.text() == f"filed {marker}: {marker}-ok"
    return call_id


async def test_with_keys_no_secret_reaches_the_database(
    temporal_client: Any,
    temporal_address: str,
    task_queue: str,
    server_directory: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    setting = new_key_entry("k1")
    monkeypatch.setenv("SCOPE_TOOL_ENCRYPTION_KEYS", setting)
    marker = f"SECRET-{uuid.uuid4().hex}"
    calls = ToolCalls(temporal_client, task_queue=task_queue)  # keys from the environment
    call_id = await _run_one_call(calls, marker, task_queue)

    trail = await calls.get(call_id).history()
    assert marker in trail.arguments.decode()
    assert marker in trail.questions[0].prompt.decode()
    assert f"{marker}-ok" in trail.answers[0].response.decode()

    with_key = run_cli("history", call_id, "--json", address=temporal_address)
    assert with_key.code == 0, with_key.stderr
    shown = json.loads(with_key.stdout)
    assert shown["arguments"] == {"note": marker}
    assert shown["answers"][0]["response"] == {"approve": True, "comment": f"{marker}-ok"}
    async with build_worker(calls.client, REGISTRY, task_queue=task_queue):
        status = run_cli("status", call_id, "--json", address=temporal_address)
    assert status.code == 0, status.stderr
    assert f"{marker}-ok" in status.stdout

    environment = {k: v for k, v in os.environ.items() if not k.startswith("SCOPE_TOOL_ENC")}
    without_key = run_cli("history", call_id, address=temporal_address, env=environment)
    assert without_key.code == 1
    assert "Traceback" not in without_key.stderr
    assert "encrypted (key 'k1')" in without_key.stderr
    assert "SCOPE_TOOL_ENCRYPTION_KEYS" in without_key.stderr
    assert marker not in without_key.stdout + without_key.stderr

    assert marker.encode() not in _database_bytes(server_directory)

    # The control: the same call without keys does put its marker in the database files.
    monkeypatch.delenv("SCOPE_TOOL_ENCRYPTION_KEYS")
    plain_marker = f"PLAIN-{uuid.uuid4().hex}"
    plain_calls = ToolCalls(temporal_client, task_queue=task_queue)
    await _run_one_call(plain_calls, plain_marker, task_queue)
    assert plain_marker.encode() in _database_bytes(server_directory)


async def test_a_malformed_setting_is_refused_before_anything_starts(
    temporal_client: Any, temporal_address: str, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCOPE_TOOL_ENCRYPTION_KEYS", "k1:not-base64!")
    with pytest.raises(ValueError, match=r"'k1' .* not valid base64"):
        ToolCalls(temporal_client, task_queue=task_queue)
    result = run_cli("call", "secret_note", '{"note": "x"}', address=temporal_address)
    assert result.code == 2, result.stderr
    assert "SCOPE_TOOL_ENCRYPTION_KEYS: the key of 'k1' (entry 1) is not valid base64" in (
        result.stderr
    )
    assert "Traceback" not in result.stderr


@pytest.mark.timeout(300)
async def test_wrong_or_missing_keys_are_clear_errors_and_the_call_waits_for_the_right_worker(
    temporal_client: Any,
    task_queue: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.delenv("SCOPE_TOOL_ENCRYPTION_KEYS", raising=False)
    old, new = new_key_entry("old"), new_key_entry("new")
    starter = ToolCalls(client_with_keys(temporal_client, old), task_queue=task_queue)
    marker = f"SECRET-{uuid.uuid4().hex}"
    handle = await starter.start(_note(marker), call_id=f"note-{uuid.uuid4()}")

    async def task_failed() -> bool:
        history = await handle.workflow_handle.fetch_history()
        return any(
            event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
            for event in history.events
        )

    # A worker that has only the new key cannot open the call's input: its workflow task fails
    # and is retried, the error names the missing key, and nothing ends the call.
    with caplog.at_level(logging.WARNING):
        async with build_worker(
            client_with_keys(temporal_client, new), REGISTRY, task_queue=task_queue
        ):
            await wait_until_async(task_failed)
    assert "encrypted with key 'old'" in caplog.text
    assert "(new)" in caplog.text
    description = await handle.workflow_handle.describe()
    assert description.status is WorkflowExecutionStatus.RUNNING

    # Clients without the key, or without any key, get an error naming what is missing.
    stranger = ToolCalls(client_with_keys(temporal_client, new), task_queue=task_queue)
    with pytest.raises(PayloadDecryptionError, match=r"key 'old'.*not among.*\(new\)"):
        await stranger.get(handle.call_id).history()
    keyless = ToolCalls(client_with_keys(temporal_client, None), task_queue=task_queue)
    with pytest.raises(PayloadDecryptionError, match="this process has no encryption keys"):
        await keyless.get(handle.call_id).history()

    # After the rotation (new key first, old kept) a worker finishes the very same call.
    rotated = client_with_keys(temporal_client, f"{new},{old}")
    both = ToolCalls(rotated, task_queue=task_queue)
    async with build_worker(rotated, REGISTRY, task_queue=task_queue):
        # The server retries a failing workflow task with a growing backoff, so the first round
        # may take a while to be offered again; follow the phase in visibility, not by query.
        await wait_until_async(lambda: _phase_is(handle, "AWAITING_INPUT"), within=150)
        waiting = await wait_for_phase(both.get(handle.call_id), Phase.AWAITING_INPUT)
        assert marker in waiting.pending.prompt.decode()
        await both.get(handle.call_id).answer({"approve": False, "comment": "later"})
        outcome = await both.get(handle.call_id).result()
    assert outcome.phase is Phase.COMPLETED
    assert outcome.output.text() == f"dropped {marker}: later"


async def _phase_is(handle: Any, phase: str) -> bool:
    description = await handle.workflow_handle.describe()
    return description.typed_search_attributes.get(PHASE_KEY) == phase
