"""Every terminal phase reached through a real server, with its outcome checked."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

from helpers.waiting import wait_for_phase, wait_until

from runtime.example_tools import ledger_lines
from scope_tool import FailureKind, Request
from scope_tool.client import Phase, ToolCalls


def _id() -> str:
    return f"call-{uuid.uuid4()}"


async def test_completed(calls: ToolCalls, worker: Any) -> None:
    handle = await calls.start(Request(name="echo", arguments='{"text":"hi"}'), call_id=_id())
    outcome = await handle.result()
    assert outcome.phase is Phase.COMPLETED
    assert outcome.output.text() == "echo: hi"
    assert outcome.rounds == 1
    assert outcome.failure_kind is None
    status = await handle.status()
    assert status.phase is Phase.COMPLETED
    assert status.outcome == outcome
    assert status.tool == "echo"


async def test_failed(calls: ToolCalls, worker: Any, tmp_path: Path) -> None:
    arguments = json.dumps({"ledger": str(tmp_path / "ledger")})
    handle = await calls.start(Request(name="fail", arguments=arguments), call_id=_id())
    outcome = await handle.result()
    assert outcome.phase is Phase.FAILED
    assert outcome.failure_kind is FailureKind.FAILED
    assert outcome.output.text() == "error: the disk is full"
    assert "ENOSPC" in outcome.message


async def test_rejected_by_guard(calls: ToolCalls, worker: Any) -> None:
    handle = await calls.start(
        Request(name="guarded_echo", arguments='{"text":"x"}'), call_id=_id()
    )
    outcome = await handle.result()
    assert outcome.phase is Phase.REJECTED
    assert outcome.failure_kind is FailureKind.REJECTED
    assert outcome.output.text() == 'error: tool "guarded_echo" is not authorized'


async def test_invalid_arguments(calls: ToolCalls, worker: Any) -> None:
    handle = await calls.start(Request(name="echo", arguments='{"text":5}'), call_id=_id())
    outcome = await handle.result()
    assert outcome.phase is Phase.INVALID
    assert outcome.message.startswith("tool: invalid invocation")
    assert outcome.output.text() == f"error: {outcome.message}"


async def test_malformed_json_arguments(calls: ToolCalls, worker: Any) -> None:
    handle = await calls.start(Request(name="echo", arguments='{"text":'), call_id=_id())
    outcome = await handle.result()
    assert outcome.phase is Phase.INVALID
    assert "invalid invocation" in outcome.message


async def test_unknown_tool(calls: ToolCalls, worker: Any) -> None:
    handle = await calls.start(Request(name="no_such_tool", arguments="{}"), call_id=_id())
    outcome = await handle.result()
    assert outcome.phase is Phase.INVALID
    # No worker polls the tool's queue, so round 1 is never taken and the call ends INVALID.
    assert outcome.message.startswith("no worker serves tool 'no_such_tool'")
    assert outcome.output.text() == f"error: {outcome.message}"


async def test_errored_plain_exception(calls: ToolCalls, worker: Any, tmp_path: Path) -> None:
    arguments = json.dumps({"ledger": str(tmp_path / "ledger")})
    handle = await calls.start(Request(name="plain_boom", arguments=arguments), call_id=_id())
    outcome = await handle.result()
    assert outcome.phase is Phase.ERRORED
    assert outcome.message == "ValueError: plain programming error"
    assert outcome.output.text() is None or outcome.output.text() == ""
    assert outcome.evidence is None


async def test_errored_keeps_call_error_evidence_out_of_the_output(
    calls: ToolCalls, worker: Any, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"
    handle = await calls.start(
        Request(name="boom", arguments=json.dumps({"ledger": str(ledger)})), call_id=_id()
    )
    outcome = await handle.result()
    assert outcome.phase is Phase.ERRORED
    assert "database connection lost" in outcome.message
    assert outcome.evidence is not None
    assert outcome.evidence.text() == "inserted 3 rows before the connection dropped"
    assert "inserted" not in (outcome.output.text() or "")
    assert outcome.output.content == ()
    assert ledger_lines(ledger) == ["boom"]


async def test_cancelled_while_waiting(calls: ToolCalls, worker: Any, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    arguments = json.dumps({"ledger": str(ledger), "service": "api"})
    handle = await calls.start(Request(name="deploy_plan", arguments=arguments), call_id=_id())
    await wait_for_phase(handle, Phase.AWAITING_INPUT)
    await handle.cancel()
    outcome = await handle.result()
    assert outcome.phase is Phase.CANCELLED
    assert outcome.rounds == 1
    assert ledger_lines(ledger) == ["plan"]


async def test_cancelled_while_the_tool_runs(calls: ToolCalls, worker: Any, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    arguments = json.dumps({"ledger": str(ledger), "seconds": 30})
    handle = await calls.start(Request(name="slow", arguments=arguments), call_id=_id())
    await wait_until(lambda: ledger_lines(ledger) == ["start"])
    await handle.cancel()
    outcome = await asyncio.wait_for(handle.result(), timeout=20)
    assert outcome.phase is Phase.CANCELLED
    assert ledger_lines(ledger) == ["start"]  # the tool was cancelled, it never reached "end"
