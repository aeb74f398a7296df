"""run_turn: a model turn's calls started together, ids derived, retries attach."""

from __future__ import annotations

import json
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers.agent_tools import REGISTRY, ledger_lines

from scope_tool.agents import ModelToolCall, TurnError, call_id_for, run_turn
from scope_tool.client import CallNotFoundError, Phase, ToolCalls


def sleep_call(tool_call_id: str, seconds: float) -> ModelToolCall:
    return ModelToolCall(
        tool_call_id=tool_call_id,
        name="sleep",
        arguments={"seconds": seconds, "label": tool_call_id},
    )


async def test_a_turn_returns_each_call_ended_or_waiting(
    calls: ToolCalls, worker: Any, tmp_path: Path
):
    ledger = tmp_path / "ledger"
    turn_id = f"turn-{uuid.uuid4()}"
    tool_calls = [
        sleep_call("call_a", 0),
        ModelToolCall(
            tool_call_id="call_b",
            name="write_note",
            arguments=json.dumps({"ledger": str(ledger), "text": "b"}),
        ),
        ModelToolCall(tool_call_id="call_c", name="fail", arguments={"why": "disk full"}),
        ModelToolCall(tool_call_id="call_d", name="boom", arguments={"secret": "hunter2"}),
        ModelToolCall(tool_call_id="call_e", name="sleep", arguments={"seconds": "x"}),
    ]
    turn = await run_turn(calls, turn_id, tool_calls, registry=REGISTRY)
    assert [call.tool_call_id for call in turn.calls] == [
        "call_a",
        "call_b",
        "call_c",
        "call_d",
        "call_e",
    ]
    assert [call.call_id for call in turn.calls] == [
        call_id_for(turn_id, f"call_{x}") for x in "abcde"
    ]
    assert [call.tool_call_id for call in turn.waiting] == ["call_b"]
    assert [call.tool_call_id for call in turn.ended] == ["call_a", "call_c", "call_d", "call_e"]
    assert not turn.complete
    results = turn.results()
    assert results["call_a"].text == "slept call_a"
    assert "waiting for approval" in results["call_b"].text
    assert turn_id in results["call_b"].text
    assert (results["call_c"].text, results["call_c"].is_error) == ("disk full", True)
    assert "hunter2" not in results["call_d"].text
    assert results["call_e"].phase is Phase.INVALID
    assert ledger_lines(ledger) == []


async def test_a_retried_turn_attaches_and_never_runs_a_call_twice(
    calls: ToolCalls, worker: Any, tmp_path: Path
):
    ledger = tmp_path / "ledger"
    turn_id = f"turn-{uuid.uuid4()}"
    tool_calls = [
        ModelToolCall(
            tool_call_id="call_1",
            name="write_note",
            arguments={"ledger": str(ledger), "text": "once"},
        )
    ]
    first = await run_turn(calls, turn_id, tool_calls, registry=REGISTRY)
    await calls.get(first.calls[0].call_id).answer({"decision": "approve"})
    await calls.get(first.calls[0].call_id).result()
    retried = await run_turn(calls, turn_id, tool_calls, registry=REGISTRY)
    assert retried.complete
    assert retried.results()["call_1"].text == "noted 'once'"
    assert ledger_lines(ledger) == ["once"]


async def test_the_calls_of_a_turn_run_together(calls: ToolCalls, worker: Any):
    turn_id = f"turn-{uuid.uuid4()}"
    started = time.monotonic()
    turn = await run_turn(
        calls, turn_id, [sleep_call(f"c{i}", 1.0) for i in range(5)], registry=REGISTRY
    )
    elapsed = time.monotonic() - started
    assert turn.complete
    assert elapsed < 4.0, f"five 1 s calls took {elapsed:.2f} s; they did not run together"


async def test_max_wait_returns_running_calls_as_running(calls: ToolCalls, worker: Any):
    turn = await run_turn(
        calls,
        f"turn-{uuid.uuid4()}",
        [sleep_call("slow", 5.0)],
        registry=REGISTRY,
        max_wait=timedelta(seconds=0.3),
    )
    assert [call.tool_call_id for call in turn.running] == ["slow"]
    assert "still running" in turn.results()["slow"].text
    await calls.get(turn.calls[0].call_id).cancel()


async def test_a_malformed_turn_starts_nothing(calls: ToolCalls):
    with pytest.raises(TurnError, match="appears twice"):
        await run_turn(calls, "t", [sleep_call("a", 0), sleep_call("a", 0)], registry=REGISTRY)
    with pytest.raises(TurnError, match="turn id must be a non-empty string"):
        await run_turn(calls, " ", [sleep_call("a", 0)], registry=REGISTRY)
    with pytest.raises(TurnError, match="tool call id must be a non-empty string"):
        await run_turn(calls, "t", [sleep_call("", 0)], registry=REGISTRY)
    with pytest.raises(TurnError, match="1000"):
        await run_turn(calls, "t" * 1000, [sleep_call("a", 0)], registry=REGISTRY)
    with pytest.raises(TurnError, match="sequence of ModelToolCall"):
        await run_turn(calls, "t", [{"tool_call_id": "a"}], registry=REGISTRY)  # type: ignore[list-item]
    with pytest.raises(TurnError, match="not JSON-compatible"):
        await run_turn(
            calls,
            "t",
            [ModelToolCall(tool_call_id="a", name="sleep", arguments={"x": object()})],
            registry=REGISTRY,
        )


async def test_a_tool_the_registry_does_not_hold_is_refused_and_nothing_starts(
    calls: ToolCalls, worker: Any
) -> None:
    """A model may invent a name: it must not become a durable call (#25 item 8)."""
    turn_id = f"turn-{uuid.uuid4()}"
    invented = ModelToolCall(tool_call_id="b", name="delete_everything", arguments={})
    with pytest.raises(TurnError, match=r"unknown tool 'delete_everything'; the registry holds: "):
        await run_turn(calls, turn_id, [sleep_call("a", 0), invented], registry=REGISTRY)
    for tool_call_id in ("a", "b"):
        with pytest.raises(CallNotFoundError):
            await calls.get(call_id_for(turn_id, tool_call_id)).status()
