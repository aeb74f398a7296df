"""Asking a person through MCP: each way a client supports, and what each reply means.

Every test drives the SDK's own client against ``scope-tool mcp`` over stdio with a real worker:
2026-07-28 ``input_required`` results (the SDK's driver repeats the call with
``inputResponses``), handshake-era ``elicitation/create``, URL mode to the inbox page, the
tasks extension's ``tasks/update``, and a client that can be asked nothing at all.
"""

from __future__ import annotations

import json
from pathlib import Path

import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_harness import TasksExtension, get_task, stdio_parameters, update_task, wait_task

from scope_tool.client import Phase, ToolCalls


@pytest.fixture
def calls(temporal_client, task_queue) -> ToolCalls:
    return ToolCalls(temporal_client, task_queue=task_queue)


def _params(temporal_address, task_queue, tmp_path: Path, *extra: str):
    return stdio_parameters(temporal_address, task_queue, tmp_path, tmp_path / "pid", *extra)


class Person:
    """An elicitation callback replaying scripted replies and recording what it was shown."""

    def __init__(self, *replies: types.ElicitResult) -> None:
        self.replies = list(replies)
        self.shown: list[types.ElicitRequestParams] = []

    async def __call__(self, ctx, params):
        self.shown.append(params)
        return self.replies.pop(0)


def _accept(**content) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content=content)


async def test_wrong_answer_is_refused_with_the_schema_reason_and_asked_again(
    temporal_address, task_queue, tmp_path, worker_process, calls
):
    person = Person(_accept(value="fast"), _accept(value="canary"))
    async with Client(
        _params(temporal_address, task_queue, tmp_path), elicitation_callback=person
    ) as client:
        assert client.protocol_version == "2026-07-28"
        result = await client.call_tool("pick", {"service": "api"})
    assert not result.is_error
    assert result.content[0].text == "picked canary"
    first, second = person.shown
    assert first.requested_schema["properties"]["value"]["enum"] == ["canary", "blue-green"]
    assert "Which rollout strategy?" in first.message
    assert "refused" not in first.message
    assert second.message.startswith("Your last answer was refused:")
    assert "(schema)" in second.message
    # The refused answer changed nothing: the call recorded exactly one accepted answer.
    (summary,) = await calls.list(tool="pick") or [None]
    status = await calls.get(summary.call_id).status()
    assert [json.loads(answer.response) for answer in status.answers] == ["canary"]
    assert all(answer.answered_by == "mcp-client" for answer in status.answers)


async def test_tasks_update_refuses_a_wrong_answer_and_the_task_keeps_waiting(
    temporal_address, task_queue, tmp_path, worker_process
):
    async def never(ctx, params):
        raise AssertionError("task questions are answered with tasks/update")

    async with Client(
        _params(temporal_address, task_queue, tmp_path),
        extensions=[TasksExtension()],
        elicitation_callback=never,
    ) as client:
        created = await client.session.call_tool("pick", {"service": "api"}, allow_claimed=True)
        waiting = await wait_task(client.session, created.task_id, until={"input_required"})
        (key,) = waiting.input_requests
        with pytest.raises(MCPError) as refused:
            await update_task(
                client.session,
                created.task_id,
                {key: {"action": "accept", "content": {"value": "fast"}}},
            )
        assert refused.value.error.data["reason"] == "schema"
        assert "rejected (schema)" in refused.value.error.message
        still = await get_task(client.session, created.task_id)
        assert still.status == "input_required"
        assert list(still.input_requests) == [key]
        await update_task(
            client.session,
            created.task_id,
            {key: {"action": "accept", "content": {"value": "blue-green"}}},
        )
        done = await wait_task(client.session, created.task_id, until={"completed", "cancelled"})
    assert done.result["content"][0]["text"] == "picked blue-green"


async def test_a_tasks_client_without_elicitation_gets_the_question_as_text_and_the_inbox(
    temporal_address, task_queue, tmp_path, worker_process
):
    inbox = "http://127.0.0.1:8234"
    async with Client(
        _params(temporal_address, task_queue, tmp_path, "--inbox-url", inbox),
        extensions=[TasksExtension()],
    ) as client:
        created = await client.session.call_tool("pick", {"service": "api"}, allow_claimed=True)
        waiting = await wait_task(client.session, created.task_id, until={"input_required"})
    message = waiting.model_extra["statusMessage"]
    assert "Which rollout strategy?" in message
    assert f"{inbox}/calls/{created.task_id}" in message
    assert f"scope-tool answer {created.task_id}" in message


async def test_tasks_cancel_cancels_the_call(
    temporal_address, task_queue, tmp_path, worker_process, calls
):
    from mcp_harness import CancelTask, TaskIdParams

    async with Client(
        _params(temporal_address, task_queue, tmp_path), extensions=[TasksExtension()]
    ) as client:
        created = await client.session.call_tool("pick", {"service": "api"}, allow_claimed=True)
        await wait_task(client.session, created.task_id, until={"input_required"})
        await client.session.send_request(
            CancelTask(params=TaskIdParams(task_id=created.task_id)), types.EmptyResult
        )
        done = await wait_task(client.session, created.task_id, until={"cancelled", "completed"})
    assert done.status == "cancelled"
    assert (await calls.get(created.task_id).result()).phase is Phase.CANCELLED


async def test_handshake_client_decline_means_false_deny_or_keep_waiting(
    temporal_address, task_queue, tmp_path, worker_process, ledger
):
    decline = types.ElicitResult(action="decline")
    person = Person(decline, decline, types.ElicitResult(action="cancel"), _accept(value="canary"))
    async with Client(
        _params(temporal_address, task_queue, tmp_path), mode="legacy", elicitation_callback=person
    ) as client:
        assert client.protocol_version == "2025-11-25"
        boolean = await client.call_tool("approve_write", {"key": "k1"})
        gate = await client.call_tool("gate", {"action": "drop table"})
        dismissed = await client.call_tool("pick", {"service": "api"})
        assert person.shown[1].requested_schema["properties"]["decision"]["enum"] == [
            "approve",
            "deny",
        ]
        call_id = dismissed.structured_content["call_id"]
        followed = await client.call_tool("scope_tool_call_status", {"call_id": call_id})
    assert boolean.content[0].text == "not written: k1 was declined"
    assert ledger.read_text() == ""
    assert gate.structured_content == {"decision": "deny", "reason": "declined in the MCP client"}
    assert not dismissed.is_error
    assert dismissed.structured_content["phase"] == "AWAITING_INPUT"
    assert "dismissed the question; the call keeps waiting" in dismissed.content[0].text
    assert call_id in dismissed.content[0].text
    assert followed.content[0].text == "picked canary"


async def test_client_without_elicitation_gets_the_call_id_and_the_status_tool_finds_it(
    temporal_address, task_queue, tmp_path, worker_process, calls, ledger
):
    async with Client(_params(temporal_address, task_queue, tmp_path)) as client:
        waiting = await client.call_tool("approve_write", {"key": "k2"})
        call_id = waiting.structured_content["call_id"]
        assert not waiting.is_error
        assert (
            f"call {call_id} of approve_write waits for a person's answer"
            in waiting.content[0].text
        )
        assert "scope_tool_call_status" in waiting.content[0].text
        await calls.get(call_id).answer(True, answered_by="alice")
        done = await client.call_tool("scope_tool_call_status", {"call_id": call_id})
    assert done.structured_content == {"written": "k2"}
    assert ledger.read_text() == "k2\n"


async def test_a_schema_no_form_fits_goes_to_the_inbox_page_by_url(
    temporal_address, task_queue, tmp_path, worker_process, calls
):
    person = Person(types.ElicitResult(action="accept"))
    inbox = "http://127.0.0.1:8234"
    async with Client(
        _params(temporal_address, task_queue, tmp_path, "--inbox-url", inbox),
        elicitation_callback=person,
    ) as client:
        waiting = await client.call_tool("nested", {"name": "web"})
        call_id = waiting.structured_content["call_id"]
        (shown,) = person.shown
        assert isinstance(shown, types.ElicitRequestURLParams)
        assert shown.url == f"{inbox}/calls/{call_id}"
        assert "Answer it on the inbox page." in waiting.content[0].text
        await calls.get(call_id).answer({"hosts": ["a", "b"]})
        done = await client.call_tool("scope_tool_call_status", {"call_id": call_id})
    assert done.structured_content == {"hosts": ["a", "b"]}


async def test_without_an_inbox_a_json_text_field_carries_the_answer(
    temporal_address, task_queue, tmp_path, worker_process
):
    person = Person(_accept(answer_json='{"hosts": ["c"]}'))
    async with Client(
        _params(temporal_address, task_queue, tmp_path), elicitation_callback=person
    ) as client:
        done = await client.call_tool("nested", {"name": "web"})
    assert "answer_json" in person.shown[0].requested_schema["properties"]
    assert done.structured_content == {"hosts": ["c"]}


async def test_no_worker_is_a_clear_error_and_starts_nothing(
    temporal_address, task_queue, tmp_path, calls
):
    # ``list`` spans the namespace, where other tests' ``add`` calls may be.
    before = {summary.call_id for summary in await calls.list(tool="add")}
    async with Client(_params(temporal_address, task_queue, tmp_path)) as client:
        with pytest.raises(MCPError) as failed:
            await client.call_tool("add", {"a": 1, "b": 2})
    assert f"no worker polls task queue {task_queue!r}" in failed.value.error.message
    assert {summary.call_id for summary in await calls.list(tool="add")} <= before


async def test_a_new_user_approves_the_example_write_file_from_the_client(
    temporal_address, task_queue, tmp_path
):
    """The issue's "done when": the example registry, a form in the client, a file written once."""
    import sys

    from mcp_harness import Process, environment

    files = tmp_path / "files"
    example_worker = Process(
        command=[
            sys.executable,
            "-m",
            "scope_tool.workers",
            "--tools",
            "examples.tools:registry",
            "--address",
            temporal_address,
            "--task-queue",
            task_queue,
        ],
        log=tmp_path / "examples-worker.log",
        env=environment(SCOPE_TOOL_FILES_DIR=str(files)),
        ready_text="worker ready",
    )
    await example_worker.start().ready()
    person = Person(_accept(approve=True))
    command = stdio_parameters(temporal_address, task_queue, tmp_path, tmp_path / "pid")
    command.args[-1] = command.args[-1].replace(
        "mcp_test_tools:REGISTRY", "examples.tools:registry"
    )
    try:
        async with Client(command, elicitation_callback=person) as client:
            result = await client.call_tool(
                "write_file", {"path": "notes/hello.txt", "content": "hi there"}
            )
    finally:
        example_worker.stop()
    (shown,) = person.shown
    assert "Write this exact content to notes/hello.txt?" in shown.message
    assert '"content": "hi there"' in shown.message
    assert shown.requested_schema["properties"]["approve"]["type"] == "boolean"
    assert result.content[0].text == "wrote 8 bytes to notes/hello.txt"
    assert (files / "notes" / "hello.txt").read_text() == "hi there"
