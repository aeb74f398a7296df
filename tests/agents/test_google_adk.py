"""The Google ADK toolset against a real server, offline models only (a scripted ``BaseLlm``).

ADK's approval surface is its tool confirmation: a waiting call requests one, the client's
confirmation makes ADK re-run the call, and the re-run attaches to the same durable call. The
end-to-end test is the issue's scenario with real processes: the agent is SIGKILLed while the
approval waits, a person approves with ``scope-tool answer``, a new process resumes the SQLite
session with ADK's confirmation message, and the file was written once.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.apps import App, ResumabilityConfig
from google.adk.models import BaseLlm, LlmRequest, LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import Session
from google.adk.sessions.sqlite_session_service import SqliteSessionService
from google.adk.tools.tool_confirmation import ToolConfirmation
from google.genai import types
from helpers.workers import REPOSITORY

from examples.agent import tools as example_tools
from scope_tool.agents import call_id_for
from scope_tool.agents.google_adk import (
    CONFIRMATION_CALL,
    PAYLOAD_KEYS,
    ScopeToolset,
    confirmation_responses,
    session_conversation_id,
    waiting_calls,
)
from scope_tool.client import AnswerRejectedError, Phase, RefusalReason, ToolCalls
from scope_tool.workers import build_worker

APP = "files"
USER = "alice"


@pytest.fixture
async def example_worker(
    temporal_client: Any, task_queue: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Path]:
    """A worker serving the example agent's tools; yields the sandbox folder they write in."""
    files = tmp_path / "files"
    monkeypatch.setenv(example_tools.FILES_DIR_ENV, str(files))
    async with build_worker(temporal_client, example_tools.registry, task_queue=task_queue):
        yield files


class Scripted(BaseLlm):
    """Emits ``calls`` for the user's text, then a text naming every tool response it got.

    ``seen`` keeps each request's declarations and last message, for the tests to check.
    """

    model: str = "scripted"
    calls: list[types.FunctionCall] = []
    seen: list[LlmRequest] = []

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.seen.append(llm_request)
        last = llm_request.contents[-1]
        responses = [p.function_response for p in last.parts or [] if p.function_response]
        if responses:
            said = {r.name: r.response for r in responses}
            parts = [types.Part(text=f"final: {json.dumps(said, sort_keys=True)}")]
        else:
            parts = [types.Part(function_call=call) for call in self.calls]
        yield LlmResponse(content=types.Content(role="model", parts=parts))


def write(path: str, content: str, call_id: str = "fc-write") -> types.FunctionCall:
    return types.FunctionCall(
        id=call_id, name="write_file", args={"path": path, "content": content}
    )


def read(path: str, call_id: str = "fc-read") -> types.FunctionCall:
    return types.FunctionCall(id=call_id, name="read_file", args={"path": path})


class Conversation:
    """One ADK session over a SQLite session service, its texts and confirmation requests."""

    def __init__(
        self,
        calls: ToolCalls,
        db: Path,
        model: Scripted,
        *,
        resumable: bool = False,
        **options: Any,
    ) -> None:
        self.resumable = resumable
        self.calls = calls
        self.db = db
        self.model = model
        self.options = options
        self.session_id = f"s-{uuid.uuid4().hex[:8]}"
        self.texts: list[str] = []
        self.responses: dict[str, Any] = {}  # the latest tool response per tool, as ADK sent it
        self.requests: list[types.FunctionCall] = []

    def runner(self, db: Path | None = None) -> Runner:
        toolset = ScopeToolset(self.calls, example_tools.registry, **self.options)
        agent = LlmAgent(name="files_agent", model=self.model, tools=[toolset])
        service = SqliteSessionService(str(db or self.db))
        if self.resumable:  # ADK's resumable app: the invocation pauses at a confirmation
            app = App(
                name=APP,
                root_agent=agent,
                resumability_config=ResumabilityConfig(is_resumable=True),
            )
            return Runner(app=app, session_service=service)
        return Runner(app_name=APP, agent=agent, session_service=service)

    async def start(self, text: str) -> None:
        runner = self.runner()
        await runner.session_service.create_session(
            app_name=APP, user_id=USER, session_id=self.session_id
        )
        await self.send(types.Content(role="user", parts=[types.Part(text=text)]))

    async def send(self, message: types.Content, db: Path | None = None) -> None:
        runner = self.runner(db)
        async for event in runner.run_async(
            user_id=USER, session_id=self.session_id, new_message=message
        ):
            for call in event.get_function_calls():
                if call.name == CONFIRMATION_CALL:
                    self.requests.append(call)
            for response in event.get_function_responses():
                if event.author != "user" and response.name:
                    self.responses[response.name] = response.response
            for part in (event.content.parts or []) if event.content else []:
                if part.text and event.author != "user":
                    self.texts.append(part.text)

    async def session(self, db: Path | None = None) -> Session:
        runner = self.runner(db)
        session = await runner.session_service.get_session(
            app_name=APP, user_id=USER, session_id=self.session_id
        )
        assert session is not None
        return session

    def conversation_id(self) -> str:
        return f"{APP}/{USER}/{self.session_id}"

    def call_id(self, function_call_id: str) -> str:
        return call_id_for(self.conversation_id(), function_call_id)

    async def confirm(self, confirmation: ToolConfirmation) -> None:
        """Answer the last confirmation request the way ADK's client does."""
        request = self.requests[-1]
        part = types.Part(
            function_response=types.FunctionResponse(
                id=request.id,
                name=CONFIRMATION_CALL,
                response=confirmation.model_dump(by_alias=True, exclude_none=True),
            )
        )
        await self.send(types.Content(role="user", parts=[part]))


def final(texts: list[str]) -> dict[str, Any]:
    last = texts[-1]
    assert last.startswith("final: "), texts
    parsed: dict[str, Any] = json.loads(last.removeprefix("final: "))
    return parsed


def scheduled_rounds(history: list[Any]) -> int:
    return len([e for e in history if e.HasField("activity_task_scheduled_event_attributes")])


async def history_of(calls: ToolCalls, call_id: str) -> list[Any]:
    return [event async for event in calls.get(call_id).workflow_handle.fetch_history_events()]


# --- in-process: one turn, ADK's confirmation, answers from elsewhere ----------------------


@pytest.mark.filterwarnings("ignore:\\[EXPERIMENTAL\\] ResumabilityConfig:UserWarning")
@pytest.mark.parametrize("resumable", [False, True], ids=["app", "resumable-app"])
async def test_a_turn_with_an_ungated_and_a_gated_call_confirmed_through_adk(
    calls: ToolCalls, example_worker: Path, tmp_path: Path, resumable: bool
):
    await asyncio.to_thread(example_worker.mkdir, parents=True)
    (example_worker / "in.txt").write_text("old", encoding="utf-8")
    model = Scripted(calls=[read("in.txt"), write("out.txt", "new")], seen=[])
    chat = Conversation(calls, tmp_path / "s.db", model, resumable=resumable)
    await chat.start("copy it")

    # The model was offered the registry's tools, with their own names, descriptions, schemas.
    declared = {
        d.name: d
        for tool in model.seen[0].config.tools or []
        for d in tool.function_declarations or []
    }
    assert set(declared) == {"read_file", "write_file"}
    assert declared["write_file"].description == "Write a new text file."
    [definition] = [d for d in example_tools.registry.definitions() if d.name == "write_file"]
    assert declared["write_file"].parameters_json_schema == json.loads(definition.input_schema)
    # The read ran; the write waits: ADK asked for a confirmation, the model was told it waits.
    write_id = chat.call_id("fc-write")
    [request] = chat.requests
    args = request.args or {}
    assert args["originalFunctionCall"]["id"] == "fc-write"
    payload = args["toolConfirmation"]["payload"]
    assert set(payload) == set(PAYLOAD_KEYS)
    assert payload["call_id"] == write_id
    assert payload["request_id"] == f"{write_id}/r1"
    assert payload["prompt"]["arguments"] == {"path": "out.txt", "content": "new"}
    assert set(payload["response_schema"]["properties"]) == {"decision", "reason", "arguments"}
    assert f"scope-tool answer {write_id}" in args["toolConfirmation"]["hint"]
    assert chat.responses["read_file"] == {"result": "old"}
    assert "waiting for approval" in chat.responses["write_file"]["result"]
    assert not (example_worker / "out.txt").exists()
    assert (await calls.get(write_id).status()).phase is Phase.AWAITING_INPUT

    # ADK's client confirms: ADK re-runs the call, which answers the durable question.
    await chat.confirm(ToolConfirmation(confirmed=True))
    assert final(chat.texts) == {  # ADK gives the model the turn's responses together
        "read_file": {"result": "old"},
        "write_file": {"result": "wrote 3 bytes to out.txt"},
    }
    assert (example_worker / "out.txt").read_text() == "new"
    status = await calls.get(write_id).status()
    assert status.phase is Phase.COMPLETED
    assert [(a.answered_by, json.loads(a.response)) for a in status.answers] == [
        (USER, {"decision": "approve"})
    ]
    read_history = await history_of(calls, chat.call_id("fc-read"))
    assert scheduled_rounds(read_history) == 1  # the ungated read ran once, never re-run


async def test_a_denial_from_elsewhere_reaches_the_model_with_its_reason(
    calls: ToolCalls, example_worker: Path, tmp_path: Path
):
    chat = Conversation(calls, tmp_path / "s.db", Scripted(calls=[write("b.txt", "x")], seen=[]))
    await chat.start("write x to b.txt")
    call_id = chat.call_id("fc-write")
    # Nothing answered yet: nothing to resume with.
    assert waiting_calls(await chat.session()) == [call_id]
    assert await confirmation_responses(calls, await chat.session()) is None
    await calls.get(call_id).answer(
        {"decision": "deny", "reason": "no new files today"}, answered_by="bob"
    )
    message = await confirmation_responses(calls, await chat.session(), wait=True)
    assert message is not None
    [part] = message.parts or []
    assert part.function_response is not None
    assert part.function_response.id == chat.requests[0].id
    assert part.function_response.response == {
        "hint": "",
        "confirmed": False,
        "payload": {"call_id": call_id, "phase": Phase.REJECTED.value},
    }
    await chat.send(message)
    assert final(chat.texts) == {
        "write_file": {
            "error": 'the call of tool "write_file" was denied by its reviewer: no new files today'
        }
    }
    assert not (example_worker / "b.txt").exists()
    # The session holds the answer now: there is nothing left to resume.
    assert waiting_calls(await chat.session()) == []
    assert await confirmation_responses(calls, await chat.session()) is None


async def test_a_denial_through_adk_confirmation_carries_its_reason(
    calls: ToolCalls, example_worker: Path, tmp_path: Path
):
    chat = Conversation(calls, tmp_path / "s.db", Scripted(calls=[write("c.txt", "x")], seen=[]))
    await chat.start("write x to c.txt")
    await chat.confirm(ToolConfirmation(confirmed=False, payload={"reason": "wrong folder"}))
    assert final(chat.texts) == {
        "write_file": {
            "error": 'the call of tool "write_file" was denied by its reviewer: wrong folder'
        }
    }
    outcome = await calls.get(chat.call_id("fc-write")).result()
    assert outcome.phase is Phase.REJECTED
    assert not (example_worker / "c.txt").exists()


async def test_an_edit_that_breaks_the_schema_is_refused_and_the_call_still_waits(
    calls: ToolCalls, example_worker: Path, tmp_path: Path
):
    chat = Conversation(calls, tmp_path / "s.db", Scripted(calls=[write("d.txt", "x")], seen=[]))
    await chat.start("write x to d.txt")
    call_id = chat.call_id("fc-write")
    broken = {"decision": "edit", "arguments": {"path": "d.txt", "content": 7}}
    # From code (the CLI and the inbox take the same path): refused, nothing changed.
    with pytest.raises(AnswerRejectedError):
        await calls.get(call_id).answer(broken)
    # Through ADK's confirmation: the same refusal, out of the run; the call still waits.
    with pytest.raises(AnswerRejectedError) as refused:
        await chat.confirm(ToolConfirmation(confirmed=True, payload=broken))
    assert "content" in str(refused.value), refused.value
    status = await calls.get(call_id).status()
    assert status.phase is Phase.AWAITING_INPUT
    assert status.answers == ()
    assert not (example_worker / "d.txt").exists()
    # ADK's confirmation request is still open (no tool response consumed it).
    assert len(chat.requests) == 1
    assert waiting_calls(await chat.session()) == [call_id]
    assert await confirmation_responses(calls, await chat.session()) is None  # not ended yet
    # A corrected edit, answering the same request, goes through.
    edited = {"decision": "edit", "arguments": {"path": "d.txt", "content": "xyz"}}
    await chat.confirm(ToolConfirmation(confirmed=True, payload=edited))
    assert final(chat.texts) == {"write_file": {"result": "wrote 3 bytes to d.txt"}}
    assert (example_worker / "d.txt").read_text() == "xyz"


async def test_after_a_refused_confirmation_an_answer_from_elsewhere_still_resumes(
    calls: ToolCalls, example_worker: Path, tmp_path: Path
):
    chat = Conversation(calls, tmp_path / "s.db", Scripted(calls=[write("f.txt", "x")], seen=[]))
    await chat.start("write x to f.txt")
    call_id = chat.call_id("fc-write")
    broken = {"decision": "edit", "arguments": {"path": "f.txt"}}  # content missing
    with pytest.raises(AnswerRejectedError):
        await chat.confirm(ToolConfirmation(confirmed=True, payload=broken))
    await calls.get(call_id).answer({"decision": "approve"}, answered_by="bob")
    message = await confirmation_responses(calls, await chat.session(), wait=True)
    assert message is not None
    await chat.send(message)
    assert final(chat.texts) == {"write_file": {"result": "wrote 1 bytes to f.txt"}}
    assert waiting_calls(await chat.session()) == []
    status = await calls.get(call_id).status()
    assert [(a.answered_by, json.loads(a.response)) for a in status.answers] == [
        ("bob", {"decision": "approve"})
    ]


async def test_a_call_that_requires_a_verified_answer_refuses_adk_confirmation(
    calls: ToolCalls, example_worker: Path, tmp_path: Path
):
    chat = Conversation(
        calls,
        tmp_path / "s.db",
        Scripted(calls=[write("h.txt", "x")], seen=[]),
        require_verified=True,
    )
    await chat.start("write x to h.txt")
    with pytest.raises(AnswerRejectedError) as refused:
        await chat.confirm(ToolConfirmation(confirmed=True))
    assert refused.value.reason is RefusalReason.NOT_VERIFIED
    status = await calls.get(chat.call_id("fc-write")).status()
    assert (status.phase, status.answers) == (Phase.AWAITING_INPUT, ())
    await calls.get(chat.call_id("fc-write")).cancel()


async def test_a_toolset_whose_worker_stopped_says_so_with_the_call_id(
    calls: ToolCalls, temporal_client: Any, task_queue: str, tmp_path: Path
):
    async with build_worker(temporal_client, example_tools.registry, task_queue=task_queue):
        for _ in range(100):  # it served the tool a moment ago
            if await calls.serves("read_file"):
                break
            await asyncio.sleep(0.05)
    told: list[tuple[str, Any]] = []
    chat = Conversation(
        calls,
        tmp_path / "s.db",
        Scripted(calls=[read("g.txt")], seen=[]),
        on_worker_wait=lambda call_id, wait: told.append((call_id, wait)),
    )
    running = asyncio.create_task(chat.start("read g.txt"))
    for _ in range(300):
        if told:
            break
        await asyncio.sleep(0.05)
    assert not running.done()
    running.cancel()
    call_id = chat.call_id("fc-read")
    [(told_id, wait)] = told
    assert told_id == call_id
    assert "waiting for a worker" in wait.message
    await temporal_client.get_workflow_handle(call_id).terminate("test over")


async def test_a_resumed_session_run_twice_writes_once(
    calls: ToolCalls, example_worker: Path, tmp_path: Path
):
    db = tmp_path / "s.db"
    chat = Conversation(calls, db, Scripted(calls=[write("e.txt", "once")], seen=[]))
    await chat.start("write once to e.txt")
    call_id = chat.call_id("fc-write")
    await calls.get(call_id).answer({"decision": "approve"}, answered_by="carol")
    copy = tmp_path / "copy.db"
    shutil.copy(db, copy)  # the session as it was before the resume (a crash lost the rest)
    message = await confirmation_responses(calls, await chat.session(), wait=True)
    assert message is not None
    await chat.send(message)
    assert final(chat.texts) == {"write_file": {"result": "wrote 4 bytes to e.txt"}}
    # The same confirmation again: ADK sees it consumed and runs nothing.
    texts = len(chat.texts)
    await chat.send(message)
    assert len(chat.texts) == texts
    # The lost-progress copy: ADK re-runs the call, which attaches to the ended durable call.
    again = await confirmation_responses(calls, await chat.session(copy), wait=True)
    assert again is not None
    await chat.send(again, db=copy)
    assert final(chat.texts) == {"write_file": {"result": "wrote 4 bytes to e.txt"}}
    assert (example_worker / "e.txt").read_text() == "once"
    assert scheduled_rounds(await history_of(calls, call_id)) == 2  # asked once, wrote once


async def test_a_fixed_or_derived_conversation_id_names_the_calls(
    calls: ToolCalls, example_worker: Path, tmp_path: Path
):
    chat = Conversation(
        calls, tmp_path / "s.db", Scripted(calls=[read("none.txt")], seen=[]), conversation_id="c-9"
    )
    await chat.start("read none.txt")
    assert final(chat.texts) == {"read_file": {"error": "none.txt does not exist"}}
    outcome = await calls.get(call_id_for("c-9", "fc-read")).result()
    assert outcome.phase is Phase.REJECTED
    derived: Callable[[Session], str] = lambda session: f"t-{session.id}"  # noqa: E731
    other = Conversation(
        calls, tmp_path / "t.db", Scripted(calls=[read("x.txt")], seen=[]), conversation_id=derived
    )
    await other.start("read x.txt")
    await calls.get(call_id_for(f"t-{other.session_id}", "fc-read")).result()
    assert session_conversation_id(await other.session()) == other.conversation_id()
    # A separator inside a part cannot make two sessions' ids meet.
    one = Session(id="s", app_name="a/b", user_id="c")
    two = Session(id="s", app_name="a", user_id="b/c")
    assert session_conversation_id(one) == "a%2Fb/c/s"
    assert session_conversation_id(two) == "a/b%2Fc/s"


def test_the_toolset_refuses_bad_options(calls: ToolCalls):
    with pytest.raises(ValueError, match="turn id must be a non-empty string"):
        ScopeToolset(calls, example_tools.registry, conversation_id=" ")
    with pytest.raises(TypeError, match="conversation_id must be a string, a callable"):
        ScopeToolset(calls, example_tools.registry, conversation_id=7)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="registry must be"):
        ScopeToolset(calls, [], conversation_id="c")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="calls must be"):
        ScopeToolset(None, example_tools.registry)  # type: ignore[arg-type]


# --- the scenario, with real processes ---------------------------------------------


def agent_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "examples.agent_adk.agent", *args]


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
    db = tmp_path / "sessions.db"
    env = dict(os.environ, SCOPE_TOOL_ADDRESS=temporal_address, SCOPE_TOOL_TASK_QUEUE=task_queue)
    env[example_tools.FILES_DIR_ENV] = str(example_worker)
    common = ("--db", str(db), "--session", "chat-7")
    log = tmp_path / "agent-1.log"
    with log.open("wb") as sink:
        first = await asyncio.create_subprocess_exec(
            *agent_command("run", "write hello world to notes.txt", *common, "--hold"),
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
    prefix = "  call id: "
    [call_id] = [
        line.removeprefix(prefix) for line in printed.splitlines() if line.startswith(prefix)
    ]
    assert call_id.startswith("files/me/chat-7:")  # the ADK session names the durable call
    assert (await calls.get(call_id).status()).phase is Phase.AWAITING_INPUT
    assert not (example_worker / "notes.txt").exists()

    # The worker runs in this process's event loop: run the other processes without blocking it.
    code, _, errors = await run_process(
        sys.executable, "-m", "scope_tool.cli", "answer", call_id, '{"decision": "approve"}',
        "--by", "alice", env=env,
    )  # fmt: skip
    assert code == 0, errors

    shutil.copy(db, tmp_path / "before-resume.db")
    code, output, errors = await run_process(*agent_command("resume", *common), env=env)
    assert code == 0, output + errors
    assert output.strip() == "Done. The tool said: wrote 11 bytes to notes.txt"
    # Resumed a second time from the session as it was before (the first resume's progress
    # lost): ADK re-runs the call, the durable call answers from its record.
    code, output, errors = await run_process(
        *agent_command("resume", "--db", str(tmp_path / "before-resume.db"), "--session", "chat-7"),
        env=env,
    )
    assert code == 0, output + errors
    assert output.strip() == "Done. The tool said: wrote 11 bytes to notes.txt"
    assert (example_worker / "notes.txt").read_text() == "hello world"
    status = await calls.get(call_id).status()
    assert status.phase is Phase.COMPLETED
    assert [(a.answered_by, json.loads(a.response)) for a in status.answers] == [
        ("alice", {"decision": "approve"})
    ]
    assert scheduled_rounds(await history_of(calls, call_id)) == 2  # asked once, wrote once
    # The finished session has nothing left to resume.
    code, output, errors = await run_process(*agent_command("resume", *common), env=env)
    assert code == 3, output + errors
    assert errors.strip() == "nothing to resume: no call of session chat-7 waits"


async def test_the_example_denies_through_adk_confirmation_in_process(
    example_worker: Path,
    temporal_address: str,
    task_queue: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
):
    from examples.agent_adk.agent import main

    where = [
        "--address",
        temporal_address,
        "--task-queue",
        task_queue,
        "--db",
        str(tmp_path / "s.db"),
    ]
    assert await main(["run", "write hi to deny.txt", *where, "--session", "s-1"]) == 0
    printed = capsys.readouterr().out
    assert 'waiting for approval: write_file {"path": "deny.txt", "content": "hi"}' in printed
    assert "resume with: python -m examples.agent_adk.agent resume --session s-1" in printed
    assert "Not yet: The call of write_file is waiting for approval from a person" in printed
    # resume without --session takes the latest session; --deny answers through ADK.
    assert await main(["resume", *where, "--deny", "not today"]) == 0
    assert capsys.readouterr().out.strip() == (
        'The tool failed: the call of tool "write_file" was denied by its reviewer: not today'
    )
    assert not (example_worker / "deny.txt").exists()
    assert await main(["resume", *where]) == 3
    assert capsys.readouterr().err.strip() == "nothing to resume: no call of session s-1 waits"


def run_example(*args: str, address: str = "localhost:1") -> tuple[int, str]:
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
    code, output = run_example("run", "x", "--model", "nosuch-model")
    assert code == 2
    assert output.startswith("error: model 'nosuch-model': Model nosuch-model not found.")
    code, output = run_example("run", "write a to b")
    assert code == 2
    assert output.startswith("error: cannot reach Temporal at localhost:1")
    assert "Traceback" not in output


# --- without the extra ----------------------------------------------------------------------

# An interpreter where Google ADK (and google-genai, which it brings) looks uninstalled; the
# rest of the google namespace (protobuf, which Temporal needs) stays.
_WITHOUT_ADK = """
import sys

class _Uninstalled:
    def find_spec(self, name, path=None, target=None):
        if name.startswith(("google.adk", "google.genai")):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, _Uninstalled())
"""


def _without_adk(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _WITHOUT_ADK + code],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_without_the_extra_the_module_says_how_to_install_it_and_the_rest_imports():
    done = _without_adk(
        "import scope_tool, scope_tool.agents, scope_tool.workers, scope_tool.client\n"
        "try:\n"
        "    import scope_tool.agents.google_adk\n"
        "except ImportError as error:\n"
        "    print(type(error).__name__, error.name, error, sep='|')\n"
    )
    assert done.returncode == 0, done.stderr
    kind, name, message = done.stdout.strip().split("|")
    assert (kind, name) == ("ImportError", "google.adk")
    assert message.startswith("scope_tool.agents.google_adk needs Google ADK")
    assert message.endswith("pip install 'scope-tool[google-adk]'")


def test_without_the_extra_the_example_agent_says_how_to_install_it():
    done = _without_adk(
        "sys.argv = ['agent', 'run', 'write hi to notes.txt']\n"
        "import runpy\n"
        "runpy.run_module('examples.agent_adk.agent', run_name='__main__')\n"
    )
    assert done.returncode == 1, done
    assert "Traceback" not in done.stderr
    assert "this example needs Google ADK" in done.stderr
    assert "make setup" in done.stderr


def test_importing_scope_tool_and_a_worker_loads_no_adk():
    code = (
        "import sys, scope_tool, scope_tool.agents, scope_tool.workers;"
        " print(sorted(m for m in sys.modules if m.startswith('google.adk')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"


# --- docs/agents.md's ADK sample, as written ------------------------------------------------


async def test_the_docs_sample_runs_as_written_with_a_scripted_model(
    calls: ToolCalls, example_worker: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from docs._markdown import ROOT, read_page
    from docs._samples import compile_sample

    from examples.agent_adk.agent import ScriptedModel

    [block] = [
        b
        for b in read_page(ROOT / "docs" / "agents.md").blocks
        if b.language == "python" and "async def start_conversation" in b.text
    ]
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "adk_reference"}
    exec(compile_sample(block), namespace)
    await namespace["start_conversation"](calls, ScriptedModel())
    printed: list[str] = []
    monkeypatch.setattr(
        "builtins.print", lambda *values: printed.append(" ".join(map(str, values)))
    )
    sessions = SqliteSessionService(str(tmp_path / "sessions.db"))
    session = await sessions.get_session(app_name="files", user_id="alice", session_id="chat-42")
    assert session is not None
    [call_id] = waiting_calls(session)
    assert call_id.startswith("files/alice/chat-42:")
    await calls.get(call_id).answer({"decision": "approve"})
    await namespace["continue_conversation"](calls, ScriptedModel())
    assert printed == [str([call_id])]
    assert (example_worker / "notes.txt").read_text() == "hello"
