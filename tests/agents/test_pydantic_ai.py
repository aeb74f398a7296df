"""The Pydantic AI toolset against a real server, offline models only (FunctionModel).

The end-to-end test is the issue's scenario with real processes: the agent defers on an
approval and is SIGKILLed while it waits, a person approves with ``scope-tool answer``, a new
process resumes from the saved message history and call ids, and the file was written once.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from helpers.workers import REPOSITORY
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import DeferredToolRequests

from examples.agent import tools as example_tools
from scope_tool.agents import call_id_for
from scope_tool.agents.pydantic_ai import ScopeToolset, deferred_results
from scope_tool.client import CallStatus, Phase, ToolCalls, WorkerWait
from scope_tool.workers import build_worker


@pytest.fixture
async def example_worker(
    temporal_client: Any, task_queue: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Path]:
    """A worker serving the example agent's tools; yields the sandbox folder they write in."""
    files = tmp_path / "files"
    monkeypatch.setenv(example_tools.FILES_DIR_ENV, str(files))
    async with build_worker(temporal_client, example_tools.registry, task_queue=task_queue):
        yield files


def write_then_summarise(path: str, content: str):
    """A model that calls write_file once, then reports what the tool returned."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        assert [tool.name for tool in info.function_tools] == ["read_file", "write_file"]
        for part in messages[-1].parts if isinstance(messages[-1], ModelRequest) else ():
            if isinstance(part, ToolReturnPart):
                return ModelResponse(parts=[TextPart(f"final: {part.model_response_str()}")])
            if part.part_kind == "retry-prompt":
                return ModelResponse(parts=[TextPart(f"final: {part.model_response()}")])
        return ModelResponse(
            parts=[ToolCallPart("write_file", {"path": path, "content": content}, "call_w1")]
        )

    return FunctionModel(respond)


def agent_for(calls: ToolCalls, conversation: str, model: FunctionModel, **options: Any) -> Agent:
    toolset = ScopeToolset(calls, example_tools.registry, conversation_id=conversation, **options)
    return Agent(model, toolsets=[toolset], output_type=[str, DeferredToolRequests])


async def test_a_waiting_call_defers_with_metadata_and_resumes_with_the_real_output(
    calls: ToolCalls, example_worker: Path
):
    conversation = f"chat-{uuid.uuid4()}"
    agent = agent_for(calls, conversation, write_then_summarise("a.txt", "hi"))
    first = await agent.run("write hi to a.txt")
    requests = first.output
    assert isinstance(requests, DeferredToolRequests)
    assert [part.tool_call_id for part in requests.calls] == ["call_w1"]
    metadata = requests.metadata["call_w1"]
    call_id = call_id_for(conversation, "call_w1")
    assert metadata["call_id"] == call_id
    assert metadata["request_id"] == f"{call_id}/r1"
    assert metadata["prompt"]["arguments"] == {"path": "a.txt", "content": "hi"}
    assert set(metadata["response_schema"]["properties"]) == {"decision", "reason", "arguments"}
    assert not (example_worker / "a.txt").exists()
    # Nothing answered yet: no results to resume with.
    assert (await deferred_results(calls, requests)).calls == {}
    await calls.get(call_id).answer({"decision": "approve"})
    results = await deferred_results(calls, requests, wait=True)
    resumed = await agent.run(message_history=first.all_messages(), deferred_tool_results=results)
    assert resumed.output == "final: wrote 2 bytes to a.txt"
    assert (example_worker / "a.txt").read_text() == "hi"


async def test_a_denied_call_reaches_the_model_as_a_failure_with_the_reason(
    calls: ToolCalls, example_worker: Path
):
    conversation = f"chat-{uuid.uuid4()}"
    agent = agent_for(calls, conversation, write_then_summarise("b.txt", "x"))
    first = await agent.run("write x to b.txt")
    assert isinstance(first.output, DeferredToolRequests)
    call_id = call_id_for(conversation, "call_w1")
    await calls.get(call_id).answer({"decision": "deny", "reason": "no new files today"})
    results = await deferred_results(calls, first.output, wait=True)
    resumed = await agent.run(message_history=first.all_messages(), deferred_tool_results=results)
    assert "no new files today" in resumed.output
    # Pydantic AI wraps a failure as {"error": ...} itself: the text inside says "error" no more.
    assert resumed.output == (
        'final: {"error":"the call of tool \\"write_file\\" was denied by its reviewer: '
        'no new files today"}'
    ), resumed.output
    assert not (example_worker / "b.txt").exists()


async def test_inline_mode_waits_for_the_person_within_one_run(
    calls: ToolCalls, example_worker: Path
):
    conversation = f"chat-{uuid.uuid4()}"
    told: list[CallStatus] = []  # inline, the run says what it waits for (and how to answer)
    agent = agent_for(
        calls,
        conversation,
        write_then_summarise("c.txt", "abc"),
        on_wait="inline",
        on_waiting=told.append,
    )
    running = asyncio.create_task(agent.run("write abc to c.txt"))
    call_id = call_id_for(conversation, "call_w1")
    for _ in range(200):
        try:
            if (await calls.get(call_id).status()).phase is Phase.AWAITING_INPUT:
                break
        except Exception:
            pass
        await asyncio.sleep(0.05)
    for _ in range(100):  # the run's own first stop may come a moment after the query's
        if told:
            break
        await asyncio.sleep(0.05)
    assert not running.done()
    assert [(status.call_id, status.phase) for status in told] == [(call_id, Phase.AWAITING_INPUT)]
    edited = {"decision": "edit", "arguments": {"path": "c.txt", "content": "abcd"}}
    await calls.get(call_id).answer(edited)
    result = await asyncio.wait_for(running, timeout=30)
    assert result.output == "final: wrote 4 bytes to c.txt"
    assert (example_worker / "c.txt").read_text() == "abcd"


async def test_a_toolset_whose_worker_stopped_says_so_with_the_call_id(
    calls: ToolCalls, temporal_client: Any, task_queue: str
):
    async with build_worker(temporal_client, example_tools.registry, task_queue=task_queue):
        for _ in range(100):  # it served the tool a moment ago
            if await calls.serves("write_file"):
                break
            await asyncio.sleep(0.05)
    conversation = f"chat-{uuid.uuid4()}"
    told: list[tuple[str, WorkerWait]] = []
    agent = agent_for(
        calls,
        conversation,
        write_then_summarise("d.txt", "x"),
        on_worker_wait=lambda call_id, wait: told.append((call_id, wait)),
    )
    running = asyncio.create_task(agent.run("write x to d.txt"))
    for _ in range(300):
        if told:
            break
        await asyncio.sleep(0.05)
    assert not running.done()
    running.cancel()
    call_id = call_id_for(conversation, "call_w1")
    [(told_id, wait)] = told
    assert told_id == call_id
    assert "waiting for a worker" in wait.message
    await temporal_client.get_workflow_handle(call_id).terminate("test over")


def test_the_toolset_refuses_bad_options(calls: ToolCalls):
    with pytest.raises(ValueError, match="on_wait must be"):
        ScopeToolset(calls, example_tools.registry, conversation_id="c", on_wait="later")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="turn id must be a non-empty string"):
        ScopeToolset(calls, example_tools.registry, conversation_id="")
    with pytest.raises(TypeError, match="registry must be"):
        ScopeToolset(calls, [], conversation_id="c")  # type: ignore[arg-type]


# --- the scenario, with real processes ---------------------------------------------


def agent_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "examples.agent.agent", *args]


async def run_process(*command: str, env: dict[str, str]) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        *command,
        cwd=REPOSITORY,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), timeout=90)
    assert process.returncode is not None
    return process.returncode, stdout.decode(), stderr.decode()


def log_text(log: Path) -> str:
    return log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""


async def wait_for_line(log: Path, text: str, process: asyncio.subprocess.Process) -> str:
    for _ in range(600):
        content = log_text(log)
        if text in content:
            return content
        if process.returncode is not None:
            break
        await asyncio.sleep(0.05)
    raise AssertionError(f"the agent never printed {text!r}; its output:\n{log_text(log)}")


async def test_the_agent_is_killed_while_approval_waits_and_a_new_process_resumes(
    calls: ToolCalls, example_worker: Path, temporal_address: str, task_queue: str, tmp_path: Path
):
    state = tmp_path / "conversation.json"
    env = dict(os.environ, SCOPE_TOOL_ADDRESS=temporal_address, SCOPE_TOOL_TASK_QUEUE=task_queue)
    env[example_tools.FILES_DIR_ENV] = str(example_worker)
    log = tmp_path / "agent-1.log"
    with log.open("wb") as sink:
        first = await asyncio.create_subprocess_exec(
            *agent_command(
                "run", "write hello world to notes.txt", "--state", str(state), "--hold"
            ),
            cwd=REPOSITORY,
            env=env,
            stdout=sink,
            stderr=asyncio.subprocess.STDOUT,
        )
    try:
        printed = await wait_for_line(log, "holding", first)
    finally:
        first.send_signal(signal.SIGKILL)  # the agent dies without any chance to clean up
        await asyncio.wait_for(first.wait(), timeout=10)
    assert first.returncode == -signal.SIGKILL
    saved = json.loads(state.read_text())
    (request,) = saved["requests"]["calls"]
    call_id = saved["requests"]["metadata"][request["tool_call_id"]]["call_id"]
    assert f"call id: {call_id}" in printed
    assert (await calls.get(call_id).status()).phase is Phase.AWAITING_INPUT
    assert not (example_worker / "notes.txt").exists()

    # The worker runs in this process's event loop: run the other processes without blocking it.
    code, _, errors = await run_process(
        sys.executable, "-m", "scope_tool.cli", "answer", call_id, '{"decision": "approve"}',
        "--by", "alice", env=env,
    )  # fmt: skip
    assert code == 0, errors

    code, output, errors = await run_process(
        *agent_command("resume", "--state", str(state), "--wait"), env=env
    )
    assert code == 0, output + errors
    assert output.strip() == "Done. The tool said: wrote 11 bytes to notes.txt"
    assert (example_worker / "notes.txt").read_text() == "hello world"
    outcome = await calls.get(call_id).result()
    assert outcome.phase is Phase.COMPLETED
    assert outcome.rounds == 2  # asked once, wrote once
    status = await calls.get(call_id).status()
    assert [(a.answered_by, json.loads(a.response)) for a in status.answers] == [
        ("alice", {"decision": "approve"})
    ]
    history = [event async for event in calls.get(call_id).workflow_handle.fetch_history_events()]
    scheduled = [e for e in history if e.HasField("activity_task_scheduled_event_attributes")]
    assert len(scheduled) == 2  # one round to ask, one to write: the tool never ran twice
    assert not state.exists()  # the finished conversation was cleared


def run_example(*args: str, address: str = "localhost:1") -> tuple[int, str]:
    import subprocess

    done = subprocess.run(
        agent_command(*args),
        cwd=REPOSITORY,
        env=dict(os.environ, SCOPE_TOOL_ADDRESS=address),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done.returncode, done.stdout + done.stderr


def test_the_example_says_clearly_what_is_missing():
    code, output = run_example("run", "x", "--model", "nosuch:model")
    assert (code, output.strip()) == (2, "error: model 'nosuch:model': Unknown model: nosuch:model")
    code, output = run_example("run", "write a to b")
    assert code == 2
    assert output.startswith("error: cannot reach Temporal at localhost:1")
    assert "Traceback" not in output
