"""The OpenAI Agents SDK tools against a real server, offline (the SDK's own ScriptedModel).

The end-to-end test is the issue's scenario with real processes: the run is interrupted by an
approval and its process SIGKILLed while it waits, a person approves with ``scope-tool answer``,
a new process restores ``RunState.from_json`` and continues, twice, and the file was written
once.

This directory has no ``__init__.py`` (as tests/mcp): the SDK's import name is ``agents``, which a
``tests/agents`` package would shadow.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, Runner, RunState, set_tracing_disabled
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call
from helpers.imports import without_packages
from helpers.workers import REPOSITORY
from pydantic import BaseModel

from examples.agent import tools as example_tools
from scope_tool import Func, Registry
from scope_tool.agents import StrictModeError, call_id_for, model_result
from scope_tool.agents.openai_agents import ScopeTools
from scope_tool.client import AnswerRejectedError, CallStatus, Phase, RefusalReason, ToolCalls
from scope_tool.workers import build_worker

set_tracing_disabled(True)  # offline: no trace is exported anywhere

READ = "read_file"
WRITE = "write_file"


@pytest.fixture
async def example_worker(
    temporal_client: Any, task_queue: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Path]:
    """A worker serving the example agent's tools; yields the sandbox folder they write in."""
    files = tmp_path / "files"
    files.mkdir()
    monkeypatch.setenv(example_tools.FILES_DIR_ENV, str(files))
    async with build_worker(temporal_client, example_tools.registry, task_queue=task_queue):
        yield files


def tool_outputs(call: ModelCall) -> dict[str, str]:
    """What the model was given back for each of its tool calls, by tool-call id."""
    shown: dict[str, str] = {}
    for item in call.input if isinstance(call.input, list) else ():
        item = dict(item)
        if item.get("type") == "function_call_output":
            output = item["output"]
            if isinstance(output, list):  # ToolOutputText: [{"type": "input_text", "text": ...}]
                output = "".join(part["text"] for part in output)
            shown[item["call_id"]] = output
    return shown


def summarise(call: ModelCall) -> Any:
    """The model's last step: everything the tools said, in a stable order."""
    said = tool_outputs(call)
    return [assistant_message(" | ".join(f"{key}={said[key]}" for key in sorted(said)))]


def same_schema(shown: dict[str, Any], contract: dict[str, Any]) -> bool:
    """Equal but for the order of ``required`` (the SDK's strict check lists it its own way)."""
    return {**shown, "required": sorted(shown["required"])} == {
        **contract,
        "required": sorted(contract["required"]),
    }


def ids(items: list[Any]) -> list[str]:
    return [item.call_id for item in items]


def scripted(*steps: Any) -> ScriptedModel:
    return ScriptedModel([*steps])


def write(call_id: str, path: str, content: str) -> Any:
    return function_call(WRITE, {"path": path, "content": content}, call_id=call_id)


def agent_for(calls: ToolCalls, conversation: str, model: ScriptedModel, **options: Any):
    tools = ScopeTools(calls, example_tools.registry, conversation_id=conversation, **options)
    return Agent(name="files", model=model, tools=tools.tools), tools


async def test_one_turn_with_an_ungated_and_a_gated_call(calls: ToolCalls, example_worker: Path):
    (example_worker / "in.txt").write_text("seed")
    conversation = f"chat-{uuid.uuid4()}"
    model = scripted(
        [function_call(READ, {"path": "in.txt"}, call_id="call_r"), write("call_w", "a.txt", "hi")],
        ModelStep.respond(summarise),
    )
    agent, tools = agent_for(calls, conversation, model)
    first = await Runner.run(agent, "copy in.txt to a.txt")
    # The SDK's own interruption: only the gated call waits; the ungated one already ran.
    assert [(item.tool_name, item.call_id) for item in first.interruptions] == [(WRITE, "call_w")]
    write_id = call_id_for(conversation, "call_w")
    assert tools.call_id(first.interruptions[0]) == write_id
    read = await calls.get(call_id_for(conversation, "call_r")).result()
    assert read.phase is Phase.COMPLETED
    assert (await calls.get(write_id).status()).phase is Phase.AWAITING_INPUT
    assert not (example_worker / "a.txt").exists()

    state = await RunState.from_json(agent, first.to_state().to_json())
    assert ids(await tools.apply_answers(state)) == ["call_w"]  # nobody answered yet
    await calls.get(write_id).answer({"decision": "approve"}, answered_by="alice")
    assert await tools.apply_answers(state, wait=True) == []
    resumed = await Runner.run(agent, state)
    assert resumed.final_output == "call_r=seed | call_w=wrote 2 bytes to a.txt"
    assert (example_worker / "a.txt").read_text() == "hi"
    # The output reached the model as the SDK's text output type, not a bare string.
    [raw] = [
        dict(item)
        for item in model.last_call.input
        if dict(item).get("type") == "function_call_output" and dict(item)["call_id"] == "call_w"
    ]
    assert raw["output"] == [{"type": "input_text", "text": "wrote 2 bytes to a.txt"}]


async def test_the_schema_the_model_sees_is_the_contracts_and_strict_where_it_can_be(
    calls: ToolCalls,
):
    tools = ScopeTools(calls, example_tools.registry, conversation_id="c")
    by_name = {tool.name: tool for tool in tools.tools}
    assert sorted(by_name) == [READ, WRITE]
    definitions = {d.name: d for d in example_tools.registry.definitions()}
    for name, tool in by_name.items():
        assert tool.description == definitions[name].description
        assert same_schema(tool.params_json_schema, json.loads(definitions[name].input_schema))
        assert tool.strict_json_schema is True  # these schemas are in strict mode's subset
    loose = Registry(Func(repeat, name="repeat", description="Repeat a text."))
    [tool] = ScopeTools(calls, loose, conversation_id="c").tools
    assert tool.strict_json_schema is False  # an optional property: strict would refuse it
    assert same_schema(tool.params_json_schema, json.loads(loose.definitions()[0].input_schema))
    with pytest.raises(StrictModeError, match="every property must be required"):
        ScopeTools(calls, loose, conversation_id="c", strict=True)
    [tool] = ScopeTools(calls, example_tools.registry, conversation_id="c", strict=False).tools[:1]
    assert tool.strict_json_schema is False


class RepeatInput(BaseModel):
    text: str
    times: int = 1


def repeat(value: RepeatInput) -> str:
    return value.text * value.times


async def test_a_denial_from_the_cli_reaches_the_model_as_the_sdks_rejection(
    calls: ToolCalls, example_worker: Path
):
    conversation = f"chat-{uuid.uuid4()}"
    model = scripted([write("call_w", "b.txt", "x")], ModelStep.respond(summarise))
    agent, tools = agent_for(calls, conversation, model)
    first = await Runner.run(agent, "write x to b.txt")
    await calls.get(call_id_for(conversation, "call_w")).answer(
        {"decision": "deny", "reason": "no new files today"}
    )
    state = first.to_state()
    assert await tools.apply_answers(state, wait=True) == []
    resumed = await Runner.run(agent, state)
    assert resumed.final_output == (
        'call_w=error: the call of tool "write_file" was denied by its reviewer: no new files today'
    )
    assert not (example_worker / "b.txt").exists()


async def test_the_sdk_surface_answers_the_durable_call(calls: ToolCalls, example_worker: Path):
    """``state.approve`` as the app already calls it, and ``tools.reject`` with a reason."""
    conversation = f"chat-{uuid.uuid4()}"
    model = scripted(
        [write("call_1", "c.txt", "yes"), write("call_2", "d.txt", "no")],
        ModelStep.respond(summarise),
    )
    agent, tools = agent_for(calls, conversation, model, answered_by="agent-ui")
    first = await Runner.run(agent, "two writes")
    state = first.to_state()
    approved, denied = state.get_interruptions()
    state.approve(approved)  # the SDK's own call; the run approves the durable call on resume
    await tools.reject(state, denied, "not that one", by="bob")
    resumed = await Runner.run(agent, state)
    assert resumed.final_output == (
        "call_1=wrote 3 bytes to c.txt"
        ' | call_2=error: the call of tool "write_file" was denied by its reviewer: not that one'
    )
    assert (example_worker / "c.txt").read_text() == "yes"
    assert not (example_worker / "d.txt").exists()
    answers = {}
    for tool_call in ("call_1", "call_2"):
        status = await calls.get(call_id_for(conversation, tool_call)).status()
        answers[tool_call] = [(a.answered_by, json.loads(a.response)) for a in status.answers]
    assert answers == {
        "call_1": [("agent-ui", {"decision": "approve"})],
        "call_2": [("bob", {"decision": "deny", "reason": "not that one"})],
    }


async def test_an_answer_given_elsewhere_first_stands_over_the_sdks_approval(
    calls: ToolCalls, example_worker: Path
):
    conversation = f"chat-{uuid.uuid4()}"
    model = scripted([write("call_w", "e.txt", "x")], ModelStep.respond(summarise))
    agent, _ = agent_for(calls, conversation, model)
    first = await Runner.run(agent, "write x to e.txt")
    call_id = call_id_for(conversation, "call_w")
    await calls.get(call_id).answer({"decision": "deny", "reason": "inbox said no"})
    state = first.to_state()
    state.approve(state.get_interruptions()[0])  # a stale approval in the app's own UI
    resumed = await Runner.run(agent, state)
    assert "inbox said no" in resumed.final_output
    assert not (example_worker / "e.txt").exists()


async def test_an_edit_that_breaks_the_schema_is_refused_and_the_call_still_waits(
    calls: ToolCalls, example_worker: Path
):
    conversation = f"chat-{uuid.uuid4()}"
    model = scripted([write("call_w", "f.txt", "x")], ModelStep.respond(summarise))
    agent, tools = agent_for(calls, conversation, model)
    first = await Runner.run(agent, "write x to f.txt")
    handle = calls.get(call_id_for(conversation, "call_w"))
    with pytest.raises(AnswerRejectedError) as refused:
        await handle.answer({"decision": "edit", "arguments": {"path": 5, "content": "x"}})
    assert refused.value.reason is RefusalReason.SCHEMA
    status = await handle.status()
    assert status.phase is Phase.AWAITING_INPUT
    assert status.answers == ()
    state = first.to_state()
    assert ids(await tools.apply_answers(state)) == ["call_w"]
    # A valid edit still goes through afterwards, and the model sees what was really written.
    await handle.answer({"decision": "edit", "arguments": {"path": "f.txt", "content": "xyz"}})
    assert await tools.apply_answers(state, wait=True) == []
    resumed = await Runner.run(agent, state)
    assert resumed.final_output == "call_w=wrote 3 bytes to f.txt"


async def test_a_tool_failure_reaches_the_model_as_the_error_text(
    calls: ToolCalls, example_worker: Path
):
    (example_worker / "g.txt").write_text("old")
    conversation = f"chat-{uuid.uuid4()}"
    model = scripted(
        [
            function_call(READ, {"path": "missing.txt"}, call_id="call_r"),
            write("call_w", "g.txt", "new"),
        ],
        ModelStep.respond(summarise),
    )
    agent, tools = agent_for(calls, conversation, model)
    first = await Runner.run(agent, "read and overwrite")
    await calls.get(call_id_for(conversation, "call_w")).answer({"decision": "approve"})
    state = first.to_state()
    await tools.apply_answers(state, wait=True)
    resumed = await Runner.run(agent, state)
    assert resumed.final_output == (
        "call_r=error: missing.txt does not exist"
        " | call_w=error: g.txt already exists; nothing written"
    )
    # Sent as the plain error string the SDK returns for a failed tool, not a text output.
    shown = [
        dict(i) for i in model.last_call.input if dict(i).get("type") == "function_call_output"
    ]
    assert all(isinstance(item["output"], str) for item in shown)
    assert (example_worker / "g.txt").read_text() == "old"


async def test_arguments_the_sdk_cannot_parse_are_refused_by_the_contract_and_the_model_told(
    calls: ToolCalls, example_worker: Path
):
    """The SDK interrupts such a call before needs_approval runs; apply_answers starts it."""
    conversation = f"chat-{uuid.uuid4()}"
    model = scripted(
        [function_call(READ, '{"path": ', call_id="call_bad")], ModelStep.respond(summarise)
    )
    agent, tools = agent_for(calls, conversation, model)
    first = await Runner.run(agent, "read something")
    assert ids(first.interruptions) == ["call_bad"]
    state = first.to_state()
    assert await tools.apply_answers(state) == []
    outcome = await calls.get(call_id_for(conversation, "call_bad")).result()
    assert outcome.phase is Phase.INVALID
    resumed = await Runner.run(agent, state)
    said = resumed.final_output.removeprefix("call_bad=")
    assert said == model_result(outcome).text
    assert "JSON" in said, said


async def test_inline_mode_waits_for_the_person_within_one_run(
    calls: ToolCalls, example_worker: Path
):
    conversation = f"chat-{uuid.uuid4()}"
    told: list[CallStatus] = []  # inline, the run says what it waits for (and how to answer)
    model = scripted([write("call_w", "i.txt", "abc")], ModelStep.respond(summarise))
    agent, _ = agent_for(calls, conversation, model, on_wait="inline", on_waiting=told.append)
    running = asyncio.create_task(Runner.run(agent, "write abc to i.txt"))
    call_id = call_id_for(conversation, "call_w")
    for _ in range(600):  # the run's own first stop: no fixed sleep, a condition
        if told or running.done():
            break
        await asyncio.sleep(0.05)
    assert not running.done()
    assert [(status.call_id, status.phase) for status in told] == [(call_id, Phase.AWAITING_INPUT)]
    edited = {"decision": "edit", "arguments": {"path": "i.txt", "content": "abcd"}}
    await calls.get(call_id).answer(edited)
    result = await asyncio.wait_for(running, timeout=60)
    assert not result.interruptions
    assert result.final_output == "call_w=wrote 4 bytes to i.txt"
    assert (example_worker / "i.txt").read_text() == "abcd"


async def test_the_same_saved_state_resumed_twice_runs_the_tool_once(
    calls: ToolCalls, example_worker: Path
):
    conversation = f"chat-{uuid.uuid4()}"
    model = scripted(
        [write("call_w", "h.txt", "once")],
        ModelStep.respond(summarise),
        ModelStep.respond(summarise),
    )
    agent, tools = agent_for(calls, conversation, model)
    saved = (await Runner.run(agent, "write once to h.txt")).to_state().to_json()
    call_id = call_id_for(conversation, "call_w")
    await calls.get(call_id).answer({"decision": "approve"})
    outputs = []
    for _ in range(2):  # e.g. the first resume crashed after running, before clearing the state
        state = await RunState.from_json(agent, saved)
        assert await tools.apply_answers(state, wait=True) == []
        outputs.append((await Runner.run(agent, state)).final_output)
    assert outputs == ["call_w=wrote 4 bytes to h.txt"] * 2
    assert (example_worker / "h.txt").read_text() == "once"
    assert (await calls.get(call_id).result()).rounds == 2  # asked once, wrote once


def test_the_tools_refuse_bad_options(calls: ToolCalls):
    with pytest.raises(ValueError, match="on_wait must be"):
        ScopeTools(calls, example_tools.registry, conversation_id="c", on_wait="later")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="strict must be"):
        ScopeTools(calls, example_tools.registry, conversation_id="c", strict="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="turn id must be a non-empty string"):
        ScopeTools(calls, example_tools.registry, conversation_id=" ")
    with pytest.raises(TypeError, match="registry must be"):
        ScopeTools(calls, [], conversation_id="c")  # type: ignore[arg-type]


def docs_sample() -> str:
    """docs/agents.md's OpenAI Agents SDK sample, as written."""
    page = (REPOSITORY / "docs" / "agents.md").read_text(encoding="utf-8")
    found = [
        block
        for block in re.findall(r"```python\n(.*?)```", page, flags=re.DOTALL)
        if "ScopeTools(calls, registry" in block
    ]
    assert len(found) == 1, "docs/agents.md has no (or several) OpenAI Agents SDK samples"
    return found[0]


async def test_the_docs_sample_runs_as_written(
    calls: ToolCalls, example_worker: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    conversation = f"chat-{uuid.uuid4().hex[:8]}"
    source = docs_sample().replace('"chat-42"', repr(conversation))
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "openai_agents_sample"}
    exec(compile(source, "docs/agents.md", "exec"), namespace)
    model = scripted([write("call_9", "docs.txt", "hello")], ModelStep.respond(summarise))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        await namespace["start_run"](calls, model)
    call_id = call_id_for(conversation, "call_9")
    assert printed.getvalue().split() == [call_id]
    assert await namespace["resume_run"](calls, model) == "1 call(s) still wait for a person"
    await calls.get(call_id).answer({"decision": "approve"}, answered_by="alice")
    await calls.get(call_id).result()
    assert await namespace["resume_run"](calls, model) == "call_9=wrote 5 bytes to docs.txt"
    assert (example_worker / "docs.txt").read_text() == "hello"


# --- the scenario, with real processes ---------------------------------------------


def agent_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "examples.agent_openai.agent", *args]


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
    content = ""
    for _ in range(1200):
        content = log_text(log)
        if text in content:
            return content
        if process.returncode is not None:
            break
        await asyncio.sleep(0.05)
    raise AssertionError(f"the agent never printed {text!r}; its output:\n{content}")


async def test_the_agent_is_killed_while_approval_waits_and_a_new_process_resumes(
    calls: ToolCalls, example_worker: Path, temporal_address: str, task_queue: str, tmp_path: Path
):
    state = tmp_path / "run.json"
    env = dict(os.environ, SCOPE_TOOL_ADDRESS=temporal_address, SCOPE_TOOL_TASK_QUEUE=task_queue)
    env[example_tools.FILES_DIR_ENV] = str(example_worker)
    env.pop("OPENAI_API_KEY", None)  # offline: the scripted model needs none
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
    call_id = call_id_for(saved["conversation_id"], "call_1")
    assert f"call id: {call_id}" in printed
    assert (await calls.get(call_id).status()).phase is Phase.AWAITING_INPUT
    assert not (example_worker / "notes.txt").exists()
    copy = tmp_path / "run-copy.json"
    copy.write_text(state.read_text())  # to resume a second time from the same saved state

    # The worker runs in this process's event loop: run the other processes without blocking it.
    code, _, errors = await run_process(
        sys.executable, "-m", "scope_tool.cli", "answer", call_id, '{"decision": "approve"}',
        "--by", "alice", env=env,
    )  # fmt: skip
    assert code == 0, errors

    for saved_state in (state, copy):
        code, output, errors = await run_process(
            *agent_command("resume", "--state", str(saved_state), "--wait"), env=env
        )
        assert code == 0, output + errors
        assert output.strip() == "Done. The tool said: wrote 11 bytes to notes.txt"
        assert not saved_state.exists()  # the finished run was cleared
    assert (example_worker / "notes.txt").read_text() == "hello world"
    outcome = await calls.get(call_id).result()
    assert (outcome.phase, outcome.rounds) == (Phase.COMPLETED, 2)  # asked once, wrote once
    status = await calls.get(call_id).status()
    assert [(a.answered_by, json.loads(a.response)) for a in status.answers] == [
        ("alice", {"decision": "approve"})
    ]
    history = [event async for event in calls.get(call_id).workflow_handle.fetch_history_events()]
    scheduled = [e for e in history if e.HasField("activity_task_scheduled_event_attributes")]
    assert len(scheduled) == 2  # one round to ask, one to write: the tool never ran twice


def test_the_example_says_clearly_what_is_missing():
    env = dict(os.environ, SCOPE_TOOL_ADDRESS="localhost:1")
    env.pop("OPENAI_API_KEY", None)
    for args, expected in (
        (["run", "x", "--model", "gpt-4o-mini"], "error: model 'gpt-4o-mini' needs OPENAI_API_KEY"),
        (["run", "write a to b"], "error: cannot reach Temporal at localhost:1"),
    ):
        done = subprocess.run(
            agent_command(*args), cwd=REPOSITORY, env=env, capture_output=True, text=True,
            timeout=60, check=False,
        )  # fmt: skip
        assert done.returncode == 2, done
        assert done.stderr.startswith(expected), done.stderr
        assert "Traceback" not in done.stderr


# --- without the extra -----------------------------------------------------------------------


def _without_the_sdk(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", without_packages("agents") + code],
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_core_and_a_worker_import_without_the_sdk_and_never_load_it():
    done = _without_the_sdk(
        "import scope_tool, scope_tool.agents, scope_tool.workers, scope_tool.client\n"
        "print(sorted(m for m in sys.modules if m == 'agents' or m.startswith('agents.')))\n"
    )
    assert (done.returncode, done.stdout.strip()) == (0, "[]"), done.stderr


def test_without_the_extra_the_module_and_the_example_say_how_to_install_it():
    done = _without_the_sdk(
        "try:\n"
        "    import scope_tool.agents.openai_agents\n"
        "except ImportError as error:\n"
        "    print(type(error).__name__, error.name, error, sep='|')\n"
    )
    assert done.returncode == 0, done.stderr
    kind, name, message = done.stdout.strip().split("|")
    assert (kind, name) == ("ImportError", "agents")
    assert message.startswith("scope_tool.agents.openai_agents needs the OpenAI Agents SDK")
    assert message.endswith("pip install 'scope-tool[openai-agents]'")
    done = _without_the_sdk(
        "sys.argv = ['agent', 'run', 'write hi to notes.txt']\n"
        "import runpy\n"
        "runpy.run_module('examples.agent_openai.agent', run_name='__main__')\n"
    )
    assert done.returncode == 1, done
    assert "Traceback" not in done.stderr
    assert "this example needs the OpenAI Agents SDK" in done.stderr
    assert "make setup" in done.stderr
