"""The LangChain / LangGraph tools against a real server, offline models only.

In process: ``create_agent`` (a LangGraph graph) with langchain-core's fake chat model and a
checkpointer, the durable calls' questions as ``interrupt()``s answered with
``Command(resume=...)``. With real processes: the issue's scenario, through the example agent
(the agent SIGKILLed while approval waits, ``scope-tool answer``, a new process resuming from
the SQLite checkpointer, twice, and the file written once).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from helpers.agent_tools import REGISTRY, ledger_lines
from helpers.workers import REPOSITORY
from jsonschema import Draft202012Validator
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Command

from examples.agent import tools as example_tools
from scope_tool import Definition, InputRequest, Invocation, Output, Registry, Result
from scope_tool.agents import AgentsError, call_id_for
from scope_tool.agents.langchain import ScopeTool, scope_tools
from scope_tool.client import CallStatus, Phase, ToolCalls
from scope_tool.workers import build_worker


class FakeModel(GenericFakeChatModel):
    """langchain-core's fake chat model, told which tools it has (it replies as scripted)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> FakeModel:  # type: ignore[override]
        return self


def scripted(*replies: AIMessage) -> FakeModel:
    return FakeModel(messages=iter(replies))


def note_call(ledger: Path, text: str, call: str = "call_note") -> dict[str, Any]:
    return {"name": "write_note", "args": {"ledger": str(ledger), "text": text}, "id": call}


def sleep_call(label: str, call: str = "call_sleep") -> dict[str, Any]:
    return {"name": "sleep", "args": {"seconds": 0.01, "label": label}, "id": call}


def agent_for(calls: ToolCalls, *replies: AIMessage, saver: Any = None, **options: Any) -> Any:
    return create_agent(
        scripted(*replies),
        scope_tools(calls, REGISTRY, **options),
        checkpointer=saver if saver is not None else InMemorySaver(),
    )


def thread() -> dict[str, Any]:
    return {"configurable": {"thread_id": f"chat-{uuid.uuid4()}"}}


def tool_messages(state: Any) -> dict[str, ToolMessage]:
    return {m.tool_call_id: m for m in state.values["messages"] if isinstance(m, ToolMessage)}


async def scheduled_rounds(calls: ToolCalls, call_id: str) -> int:
    history = [e async for e in calls.get(call_id).workflow_handle.fetch_history_events()]
    return len([e for e in history if e.HasField("activity_task_scheduled_event_attributes")])


def test_the_registry_becomes_langchain_tools_with_its_names_descriptions_and_schemas(
    calls: ToolCalls,
):
    tools = scope_tools(calls, REGISTRY)
    assert all(isinstance(tool, ScopeTool) for tool in tools)
    by_name = {tool.name: tool for tool in tools}
    assert sorted(by_name) == sorted(d.name for d in REGISTRY.definitions())
    for definition in REGISTRY.definitions():
        function = convert_to_openai_tool(by_name[definition.name])["function"]
        assert function["name"] == definition.name
        assert function["description"] == definition.description
        schema = json.loads(definition.input_schema)
        assert by_name[definition.name].args_schema == schema  # the contract's, as it is
        # What a provider is sent: LangChain's conversion drops only the titles.
        assert function["parameters"]["properties"].keys() == schema["properties"].keys()
        assert function["parameters"].get("required") == schema.get("required")


async def test_one_turn_with_an_ungated_and_a_gated_call_pauses_then_resumes_with_approval(
    calls: ToolCalls, worker: Any, tmp_path: Path
):
    ledger = tmp_path / "ledger.txt"
    config = thread()
    conversation = config["configurable"]["thread_id"]
    agent = agent_for(
        calls,
        AIMessage("", tool_calls=[sleep_call("a"), note_call(ledger, "hello")]),
        AIMessage("all done"),
    )
    await agent.ainvoke({"messages": [HumanMessage("sleep and note hello")]}, config)
    state = await agent.aget_state(config)
    [waiting] = state.interrupts
    note_id = call_id_for(conversation, "call_note")
    value = waiting.value
    assert value["type"] == "tool_approval"
    assert (value["name"], value["tool_call_id"], value["args"]) == (
        "write_note",
        "call_note",
        {"ledger": str(ledger), "text": "hello"},
    )
    assert (value["call_id"], value["request_id"]) == (note_id, f"{note_id}/r1")
    assert value["allowed_decisions"] == ["approve", "edit", "reject", "wait"]
    assert value["prompt"]["arguments"] == {"ledger": str(ledger), "text": "hello"}
    assert set(value["response_schema"]["properties"]) == {"decision", "reason", "arguments"}
    # The interrupt's own response schema (for LangGraph clients' forms) admits the decisions
    # this call takes, an edit's args under the tool's schema, and nothing else.
    decisions = Draft202012Validator(waiting.response_schema)
    args = {"ledger": "l", "text": "t"}
    for good in (
        {"type": "approve"},
        {"type": "reject", "message": "no", "call_id": note_id},
        {"type": "edit", "edited_action": {"name": "write_note", "args": args}},
        {"type": "wait"},
    ):
        assert decisions.is_valid(good), good
    for bad in (
        {"type": "respond", "message": "x"},
        {"type": "edit", "edited_action": {"name": "write_note", "args": {"ledger": 5}}},
        {"type": "edit", "edited_action": {"name": "sleep", "args": args}},
        {"type": "approve", "call_id": "another"},
    ):
        assert not decisions.is_valid(bad), bad
    assert (await calls.get(note_id).status()).phase is Phase.AWAITING_INPUT
    sleep_id = call_id_for(conversation, "call_sleep")
    assert (await calls.get(sleep_id).status()).phase is Phase.COMPLETED
    assert ledger_lines(ledger) == []

    await agent.ainvoke(Command(resume={waiting.id: {"type": "approve"}}), config)
    state = await agent.aget_state(config)
    assert not state.interrupts
    messages = tool_messages(state)
    assert messages["call_sleep"].content == "slept a"
    assert messages["call_note"].content == "noted 'hello'"
    assert messages["call_note"].status == "success"
    assert messages["call_note"].artifact == {"call_id": note_id, "phase": "COMPLETED"}
    assert state.values["messages"][-1].content == "all done"
    assert ledger_lines(ledger) == ["hello"]
    assert await scheduled_rounds(calls, sleep_id) == 1  # the resumed step did not rerun it
    assert await scheduled_rounds(calls, note_id) == 2  # one to ask, one to write


async def test_a_client_written_for_langchains_hitl_middleware_answers_durable_calls_unchanged(
    calls: ToolCalls, worker: Any, tmp_path: Path
):
    """One agent, two approval surfaces: a plain LangChain tool under HumanInTheLoopMiddleware
    (per-call mode) and a gated registry tool. The same client loop, written for the
    middleware's ``tool_approval`` interrupts, answers both; only the durable one survives the
    agent process."""
    ledger = tmp_path / "ledger.txt"
    ran: list[str] = []

    @tool
    def shout(word: str) -> str:
        """Say a word out loud."""
        ran.append(word)
        return word.upper()

    config = thread()
    agent = create_agent(
        scripted(
            AIMessage(
                "",
                tool_calls=[
                    note_call(ledger, "quiet"),
                    {"name": "shout", "args": {"word": "hey"}, "id": "call_shout"},
                ],
            ),
            AIMessage("both done"),
        ),
        [*scope_tools(calls, REGISTRY), shout],
        middleware=[
            HumanInTheLoopMiddleware(interrupt_on={"shout": True}, interrupt_mode="per_call")
        ],
        checkpointer=InMemorySaver(),
    )
    await agent.ainvoke({"messages": [HumanMessage("note and shout")]}, config)
    for _ in range(5):
        paused = (await agent.aget_state(config)).interrupts
        if not paused:
            break
        assert {waiting.value["type"] for waiting in paused} == {"tool_approval"}
        resume = {waiting.id: {"type": "approve"} for waiting in paused}
        await agent.ainvoke(Command(resume=resume), config)
    state = await agent.aget_state(config)
    assert not state.interrupts
    messages = tool_messages(state)
    assert messages["call_note"].content == "noted 'quiet'"
    assert messages["call_shout"].content == "HEY"
    assert ran == ["hey"]
    assert ledger_lines(ledger) == ["quiet"]
    assert state.values["messages"][-1].content == "both done"


async def test_a_rejection_reaches_the_model_as_an_error_tool_message_with_the_reason(
    calls: ToolCalls, worker: Any, tmp_path: Path
):
    ledger = tmp_path / "ledger.txt"
    config = thread()
    agent = agent_for(calls, AIMessage("", tool_calls=[note_call(ledger, "x")]), AIMessage("ok"))
    await agent.ainvoke({"messages": [HumanMessage("note x")]}, config)
    [waiting] = (await agent.aget_state(config)).interrupts
    # LangChain's batched HITL response, one decision, is taken too.
    decision = {
        "decisions": [{"type": "reject", "message": "not in this ledger", "answered_by": "carol"}]
    }
    await agent.ainvoke(Command(resume={waiting.id: decision}), config)
    message = tool_messages(await agent.aget_state(config))["call_note"]
    assert message.status == "error"
    assert message.content == (
        'error: the call of tool "write_note" was denied by its reviewer: not in this ledger'
    )
    assert ledger_lines(ledger) == []
    outcome = await calls.get(waiting.value["call_id"]).result()
    assert outcome.phase is Phase.REJECTED
    status = await calls.get(waiting.value["call_id"]).status()
    assert [a.answered_by for a in status.answers] == ["carol"]  # who decided, as recorded


async def test_an_edit_that_breaks_the_schema_is_refused_and_the_call_keeps_waiting(
    calls: ToolCalls, worker: Any, tmp_path: Path
):
    ledger = tmp_path / "ledger.txt"
    config = thread()
    agent = agent_for(calls, AIMessage("", tool_calls=[note_call(ledger, "x")]), AIMessage("ok"))
    await agent.ainvoke({"messages": [HumanMessage("note x")]}, config)
    [waiting] = (await agent.aget_state(config)).interrupts
    call = calls.get(waiting.value["call_id"])
    bad = {"type": "edit", "edited_action": {"name": "write_note", "args": {"ledger": 5}}}
    await agent.ainvoke(Command(resume={waiting.id: bad}), config)
    [again] = (await agent.aget_state(config)).interrupts
    assert again.value["refused"]["reason"] == "schema"
    assert again.value["request_id"] == waiting.value["request_id"]
    status = await call.status()
    assert status.phase is Phase.AWAITING_INPUT
    assert status.answers == ()  # nothing recorded
    # A decision the call cannot take is refused the same way, naming what is wrong.
    respond = {"type": "respond", "message": "hi"}
    await agent.ainvoke(Command(resume={again.id: respond}), config)
    [third] = (await agent.aget_state(config)).interrupts
    assert third.value["refused"]["reason"] == "decision"
    assert "'respond'" in third.value["refused"]["message"]
    await agent.ainvoke(Command(resume={third.id: {"type": "approve", "answered_by": 5}}), config)
    [third] = (await agent.aget_state(config)).interrupts
    assert "'answered_by' must be a non-empty string" in third.value["refused"]["message"]
    # Then a good edit runs the tool once, with the edited arguments.
    good = {
        "type": "edit",
        "edited_action": {"name": "write_note", "args": {"ledger": str(ledger), "text": "y"}},
    }
    await agent.ainvoke(Command(resume={third.id: good}), config)
    state = await agent.aget_state(config)
    assert not state.interrupts
    assert tool_messages(state)["call_note"].content == "noted 'y'"
    assert ledger_lines(ledger) == ["y"]
    assert len((await call.status()).answers) == 1


async def test_a_second_question_takes_the_next_decision_and_the_first_is_not_sent_again(
    calls: ToolCalls, worker: Any, tmp_path: Path
):
    """An edit only the tool's validator refuses is accepted as an answer; the gate asks again.

    LangGraph re-runs the step with every decision so far: the first (accepted) edit must not
    be sent to the second question, the second decision must answer it.
    """
    ledger = tmp_path / "ledger.txt"
    config = thread()
    agent = agent_for(calls, AIMessage("", tool_calls=[note_call(ledger, "x")]), AIMessage("ok"))
    await agent.ainvoke({"messages": [HumanMessage("note x")]}, config)
    [first] = (await agent.aget_state(config)).interrupts
    shouting = {
        "type": "edit",
        "edited_action": {"name": "write_note", "args": {"ledger": str(ledger), "text": "LOUD"}},
    }
    await agent.ainvoke(Command(resume={first.id: shouting}), config)
    [second] = (await agent.aget_state(config)).interrupts
    call_id = first.value["call_id"]
    assert second.value["request_id"] == f"{call_id}/r2"
    assert "upper case" in json.dumps(second.value["prompt"]["refused_edit"])
    assert "refused" not in second.value  # the edit was accepted as an answer; the tool refused it
    await agent.ainvoke(Command(resume={second.id: {"type": "approve"}}), config)
    state = await agent.aget_state(config)
    assert not state.interrupts
    assert tool_messages(state)["call_note"].content == "noted 'x'"
    assert ledger_lines(ledger) == ["x"]
    answers = (await calls.get(call_id).status()).answers
    assert [(a.request_id, json.loads(a.response)["decision"]) for a in answers] == [
        (f"{call_id}/r1", "edit"),
        (f"{call_id}/r2", "approve"),
    ]


async def test_an_answer_from_elsewhere_is_picked_up_and_a_second_resume_runs_nothing_again(
    calls: ToolCalls, worker: Any, tmp_path: Path
):
    ledger = tmp_path / "ledger.txt"
    config = thread()
    saver = InMemorySaver()
    agent = agent_for(
        calls,
        AIMessage("", tool_calls=[note_call(ledger, "once")]),
        AIMessage("first"),
        AIMessage("second"),
        saver=saver,
    )
    await agent.ainvoke({"messages": [HumanMessage("note once")]}, config)
    paused = await agent.aget_state(config)
    [waiting] = paused.interrupts
    await calls.get(waiting.value["call_id"]).answer({"decision": "approve"}, answered_by="bob")
    await agent.ainvoke(Command(resume={waiting.id: {"type": "wait"}}), config)
    assert tool_messages(await agent.aget_state(config))["call_note"].content == "noted 'once'"
    # Resume the same paused step again (LangGraph's own replay from a checkpoint): the step
    # attaches to the ended call and gets its result; the tool does not run again.
    await agent.ainvoke(Command(resume={waiting.id: {"type": "approve"}}), paused.config)
    history = [s async for s in agent.aget_state_history(config)]
    replayed = [tool_messages(s).get("call_note") for s in history]
    assert {m.content for m in replayed if m is not None} == {"noted 'once'"}
    assert ledger_lines(ledger) == ["once"]
    status = await calls.get(waiting.value["call_id"]).status()
    assert [a.answered_by for a in status.answers] == ["bob"]
    assert await scheduled_rounds(calls, waiting.value["call_id"]) == 2


async def test_in_one_toolnode_task_a_decision_naming_its_call_never_answers_another(
    calls: ToolCalls, worker: Any, tmp_path: Path
):
    """A plain ToolNode runs a message's calls in one task: LangGraph hands resume values to
    that task's interrupts by order, whichever call reaches its interrupt first. A decision that
    names its call (``call_id``) is refused by any other call, which asks again."""
    ledger = tmp_path / "ledger.txt"
    builder = StateGraph(MessagesState)
    builder.add_node("tools", ToolNode(scope_tools(calls, REGISTRY)))
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    config = thread()
    message = AIMessage(
        "", tool_calls=[note_call(ledger, "yes", "c1"), note_call(ledger, "no", "c2")]
    )
    await graph.ainvoke({"messages": [HumanMessage("two notes"), message]}, config)
    decisions = {
        "c1": {"type": "approve"},
        "c2": {"type": "reject", "message": "not this one"},
    }
    for _ in range(10):
        paused = (await graph.aget_state(config)).interrupts
        if not paused:
            break
        resume = {
            waiting.id: {
                **decisions[waiting.value["tool_call_id"]],
                "call_id": waiting.value["call_id"],
            }
            for waiting in paused
        }
        await graph.ainvoke(Command(resume=resume), config)
    state = await graph.aget_state(config)
    assert not state.interrupts
    messages = tool_messages(state)
    assert (messages["c1"].content, messages["c1"].status) == ("noted 'yes'", "success")
    assert messages["c2"].status == "error"
    assert messages["c2"].content.endswith("denied by its reviewer: not this one")
    assert ledger_lines(ledger) == ["yes"]


class AskCount:
    """A resumable tool whose question is not an approval: how many, then it says so."""

    def definition(self) -> Definition:
        return Definition(
            name="count",
            description="Ask a person how many, then say it.",
            input_schema={"type": "object", "properties": {"what": {"type": "string"}}},
        )

    async def call(self, invocation: Invocation) -> Result:
        if invocation.continuation is None:
            return Result(
                input_request=InputRequest(
                    prompt=b'{"question": "how many?"}',
                    response_schema=b'{"type": "integer", "minimum": 0}',
                    state=b"null",
                )
            )
        return Result(
            output=Output.text_output(f"got {json.loads(invocation.continuation.response)}")
        )


async def test_a_question_that_is_no_approval_takes_an_answer_decision(
    temporal_client: Any, task_queue: str
):
    asking = Registry(AskCount())
    calls = ToolCalls(temporal_client, task_queue=task_queue)
    agent = create_agent(
        scripted(
            AIMessage("", tool_calls=[{"name": "count", "args": {"what": "apples"}, "id": "q1"}]),
            AIMessage("counted"),
        ),
        scope_tools(calls, asking),
        checkpointer=InMemorySaver(),
    )
    config = thread()
    async with build_worker(temporal_client, asking, task_queue=task_queue):
        await agent.ainvoke({"messages": [HumanMessage("count apples")]}, config)
        [waiting] = (await agent.aget_state(config)).interrupts
        assert waiting.value["type"] == "tool_input"
        assert waiting.value["allowed_decisions"] == ["answer", "wait"]
        assert waiting.value["prompt"] == {"question": "how many?"}
        schema = Draft202012Validator(waiting.response_schema)
        assert schema.is_valid({"type": "answer", "answer": 3})
        assert not schema.is_valid({"type": "answer", "answer": -1})
        assert not schema.is_valid({"type": "approve"})
        await agent.ainvoke(Command(resume={waiting.id: {"type": "approve"}}), config)
        [again] = (await agent.aget_state(config)).interrupts
        assert again.value["refused"]["reason"] == "decision"
        assert "not for approval" in again.value["refused"]["message"]
        await agent.ainvoke(Command(resume={again.id: {"type": "answer", "answer": -1}}), config)
        [third] = (await agent.aget_state(config)).interrupts
        assert third.value["refused"]["reason"] == "schema"
        await agent.ainvoke(Command(resume={third.id: {"type": "answer", "answer": 3}}), config)
        state = await agent.aget_state(config)
    assert not state.interrupts
    assert tool_messages(state)["q1"].content == "got 3"


async def test_inline_tools_wait_for_the_call_without_a_graph(
    calls: ToolCalls, worker: Any, tmp_path: Path
):
    ledger = tmp_path / "ledger.txt"
    told: list[CallStatus] = []
    tools = scope_tools(
        calls,
        REGISTRY,
        conversation_id=f"c-inline-{uuid.uuid4()}",
        on_wait="inline",
        on_waiting=told.append,
    )
    [note] = [t for t in tools if t.name == "write_note"]
    running = asyncio.create_task(note.ainvoke({"type": "tool_call", **note_call(ledger, "z")}))
    for _ in range(300):
        if told:
            break
        await asyncio.sleep(0.05)
    [status] = told
    assert status.phase is Phase.AWAITING_INPUT
    await calls.get(status.call_id).answer({"decision": "approve"})
    message = await asyncio.wait_for(running, timeout=30)
    assert isinstance(message, ToolMessage)
    assert (message.content, message.status) == ("noted 'z'", "success")
    assert ledger_lines(ledger) == ["z"]


async def test_failures_reach_the_model_as_error_tool_messages(calls: ToolCalls, worker: Any):
    tools = {t.name: t for t in scope_tools(calls, REGISTRY, conversation_id=f"c-{uuid.uuid4()}")}
    failed = await tools["fail"].ainvoke(
        {"type": "tool_call", "name": "fail", "id": "f1", "args": {"why": "disk full"}}
    )
    assert (failed.content, failed.status) == ("disk full", "error")
    invalid = await tools["sleep"].ainvoke(
        {"type": "tool_call", "name": "sleep", "id": "s1", "args": {"seconds": "soon"}}
    )
    assert invalid.status == "error"
    assert "label" in invalid.content or "seconds" in invalid.content
    errored = await tools["boom"].ainvoke(
        {"type": "tool_call", "name": "boom", "id": "b1", "args": {"secret": "s3cr3t"}}
    )
    assert errored.status == "error"
    assert "s3cr3t" not in errored.content


async def test_misuse_is_refused_with_what_to_do(calls: ToolCalls, worker: Any, tmp_path: Path):
    with pytest.raises(ValueError, match="on_wait must be"):
        scope_tools(calls, REGISTRY, on_wait="later")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="turn id must be a non-empty string"):
        scope_tools(calls, REGISTRY, conversation_id=" ")
    with pytest.raises(TypeError, match="registry must be"):
        scope_tools(calls, [])  # type: ignore[arg-type]
    tools = {t.name: t for t in scope_tools(calls, REGISTRY)}
    with pytest.raises(AgentsError, match="invoke it with a ToolCall"):
        await tools["sleep"].ainvoke({"seconds": 0.01, "label": "x"})
    with pytest.raises(AgentsError, match="thread_id"):
        await tools["sleep"].ainvoke({"type": "tool_call", **sleep_call("x")})
    with pytest.raises(AgentsError, match="ainvoke"):
        tools["sleep"].invoke({"type": "tool_call", **sleep_call("x")}, thread())
    # A gated call outside a graph cannot pause: it says so (the call keeps waiting).
    with pytest.raises(AgentsError, match="on_wait='inline'"):
        await tools["write_note"].ainvoke(
            {"type": "tool_call", **note_call(tmp_path / "l.txt", "q")}, thread()
        )


# --- the scenario, with real processes ---------------------------------------------


@pytest.fixture
async def example_worker(
    temporal_client: Any, task_queue: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Path]:
    files = tmp_path / "files"
    monkeypatch.setenv(example_tools.FILES_DIR_ENV, str(files))
    async with build_worker(temporal_client, example_tools.registry, task_queue=task_queue):
        yield files


def agent_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "examples.agent_langgraph.agent", *args]


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


def copy_checkpoints(folder: Path, source: str, target: str) -> None:
    """Copy the example's database, its write-ahead log and its thread file."""
    for saved in folder.glob(f"{source}.*"):
        shutil.copy(saved, folder / saved.name.replace(source, target))


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


@pytest.fixture
def agent_env(temporal_address: str, task_queue: str, example_worker: Path) -> dict[str, str]:
    env = dict(os.environ, SCOPE_TOOL_ADDRESS=temporal_address, SCOPE_TOOL_TASK_QUEUE=task_queue)
    env[example_tools.FILES_DIR_ENV] = str(example_worker)
    return env


async def test_the_agent_is_killed_while_approval_waits_and_new_processes_resume_it(
    calls: ToolCalls, example_worker: Path, agent_env: dict[str, str], tmp_path: Path
):
    db = tmp_path / "graph.sqlite"
    log = tmp_path / "agent-1.log"
    with log.open("wb") as sink:
        first = await asyncio.create_subprocess_exec(
            *agent_command("run", "write hello world to notes.txt", "--db", str(db), "--hold"),
            cwd=REPOSITORY,
            env=agent_env,
            stdout=sink,
            stderr=asyncio.subprocess.STDOUT,
        )
    try:
        printed = await wait_for_line(log, "holding", first)
    finally:
        first.send_signal(signal.SIGKILL)  # the agent dies without any chance to clean up
        await asyncio.wait_for(first.wait(), timeout=10)
    assert first.returncode == -signal.SIGKILL
    [call_id] = [line.split(": ", 1)[1] for line in printed.splitlines() if "call id: " in line]
    assert call_id.startswith(db.with_suffix(".thread").read_text() + ":call_")
    assert (await calls.get(call_id).status()).phase is Phase.AWAITING_INPUT
    assert not (example_worker / "notes.txt").exists()
    # A copy of the checkpoints as they were at the kill: resuming it later is a second resume
    # of the same paused step (as after a resume that died before its checkpoint was saved).
    copy_checkpoints(tmp_path, "graph", "copy")

    code, _, errors = await run_process(
        sys.executable, "-m", "scope_tool.cli", "answer", call_id, '{"decision": "approve"}',
        "--by", "alice", env=agent_env,
    )  # fmt: skip
    assert code == 0, errors

    for database in (db, tmp_path / "copy.sqlite"):
        code, output, errors = await run_process(
            *agent_command("resume", "--db", str(database)), env=agent_env
        )
        assert code == 0, output + errors
        assert output.strip() == "Done. The tool said: wrote 11 bytes to notes.txt"
    assert (example_worker / "notes.txt").read_text() == "hello world"
    outcome = await calls.get(call_id).result()
    assert (outcome.phase, outcome.rounds) == (Phase.COMPLETED, 2)  # asked once, wrote once
    status = await calls.get(call_id).status()
    assert [(a.answered_by, json.loads(a.response)) for a in status.answers] == [
        ("alice", {"decision": "approve"})
    ]
    assert await scheduled_rounds(calls, call_id) == 2  # the tool never ran twice


# --- the reference sample in docs/agents.md ------------------------------------------------


def reference_block() -> Any:
    from docs._markdown import ROOT, read_page

    found = [
        block
        for block in read_page(ROOT / "docs" / "agents.md").blocks
        if block.language == "python" and "scope_tools(calls, registry)" in block.text
    ]
    assert len(found) == 1, "docs/agents.md has no (or several) LangChain reference samples"
    return found[0]


@pytest.mark.parametrize("decide_here", [False, True], ids=["answer-from-code", "decision"])
async def test_the_reference_sample_runs_as_written(
    temporal_client: Any,
    temporal_address: str,
    task_queue: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    decide_here: bool,
):
    from docs._samples import compile_sample

    block = reference_block()
    conversation = f"chat-{uuid.uuid4().hex[:8]}"
    source = block.text.replace('"chat-42"', repr(conversation))
    assert repr(conversation) in source
    monkeypatch.setenv("SCOPE_TOOL_ADDRESS", temporal_address)
    monkeypatch.setenv("SCOPE_TOOL_TASK_QUEUE", task_queue)
    monkeypatch.setenv(example_tools.FILES_DIR_ENV, str(tmp_path / "files"))
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "langchain_reference"}
    exec(compile_sample(block, source), namespace)
    async with build_worker(temporal_client, example_tools.registry, task_queue=task_queue):
        [call_id] = await namespace["start_thread"]()
        assert call_id.startswith(f"{conversation}:call_")
        if decide_here:
            said = await namespace["resume_thread"]({"type": "approve"})
        else:
            await namespace["answer_from_code"](call_id)
            said = await namespace["resume_thread"]({"type": "wait"})
    assert said == "Done. The tool said: wrote 5 bytes to notes.txt"
    assert (tmp_path / "files" / "notes.txt").read_text() == "hello"


async def test_a_new_process_rejects_through_langgraph_and_the_model_reads_the_reason(
    calls: ToolCalls, example_worker: Path, agent_env: dict[str, str], tmp_path: Path
):
    db = tmp_path / "graph.sqlite"
    code, output, errors = await run_process(
        *agent_command("run", "write hi to a.txt", "--db", str(db)), env=agent_env
    )
    assert code == 0, output + errors
    assert "waiting for approval: write_file" in output
    reject = '{"type": "reject", "message": "not today"}'
    code, output, errors = await run_process(
        *agent_command("resume", "--db", str(db), "--decision", reject), env=agent_env
    )
    assert code == 0, output + errors
    assert output.strip() == (
        'Done. The tool said: error: the call of tool "write_file" was denied by its reviewer:'
        " not today"
    )
    assert not (example_worker / "a.txt").exists()
