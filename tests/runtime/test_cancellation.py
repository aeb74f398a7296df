"""Cancellation against a running round (issue 17 item 3) and a tool that blocks its loop (item 9).

The probe: cancel a call while a 1.5 s round runs; the round then returned its question and the
call went on to AWAITING_INPUT, a second cancel did nothing, a later answer ran round 2.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers.waiting import wait_until
from pydantic import BaseModel, ConfigDict

from runtime.example_tools import ledger_lines
from scope_tool import (
    Definition,
    Func,
    InputRequest,
    Invocation,
    Output,
    Registry,
    Request,
    Result,
)
from scope_tool.client import AnswerRejectedError, Phase, RefusalReason, ToolCalls
from scope_tool.workers import build_worker


def _append(ledger: str, line: str) -> None:
    with Path(ledger).open("a", encoding="utf-8") as file:
        file.write(line + "\n")


class _Slow(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ledger: str
    seconds: float = 1.5


class _AskSlowly:
    """Round 1 works ``seconds`` then asks; ``stubborn`` rounds ignore cancellation meanwhile."""

    def __init__(self, name: str, *, stubborn: bool, complete: bool = False) -> None:
        self._name = name
        self._stubborn = stubborn
        self._complete = complete

    def definition(self) -> Definition:
        return Definition(
            name=self._name,
            description="works a while, then asks (or completes)",
            input_schema={
                "type": "object",
                "properties": {"ledger": {"type": "string"}, "seconds": {"type": "number"}},
                "required": ["ledger"],
                "additionalProperties": False,
            },
        )

    async def call(self, invocation: Invocation) -> Result:
        arguments = json.loads(invocation.arguments)
        if invocation.continuation is not None:
            _append(arguments["ledger"], "round 2")
            return Result(output=Output.text_output("round 2 ran"))
        _append(arguments["ledger"], "start")
        try:
            await asyncio.sleep(arguments.get("seconds", 1.5))
        except asyncio.CancelledError:
            if not self._stubborn:
                raise
            await asyncio.sleep(0.5)  # finishes its work regardless
        _append(arguments["ledger"], "end")
        if self._complete:
            return Result(output=Output.text_output("done"))
        return Result(
            input_request=InputRequest(
                prompt=json.dumps({"question": "go on?"}),
                response_schema={"type": "boolean"},
                state="{}",
            )
        )


def _sync_write(value: _Slow) -> str:
    _append(value.ledger, "start")
    time.sleep(value.seconds)
    _append(value.ledger, "end")
    return "written"


async def _hog(value: _Slow) -> str:
    _append(value.ledger, "start")
    time.sleep(value.seconds)  # noqa: ASYNC251 (blocks its event loop: what item 9 is about)
    _append(value.ledger, "end")
    return "hogged"


async def _nap(value: _Slow) -> str:
    await asyncio.sleep(value.seconds)
    _append(value.ledger, "nap")
    return "rested"


REGISTRY = Registry(
    _AskSlowly("ask_slowly", stubborn=False),
    _AskSlowly("ask_stubbornly", stubborn=True),
    _AskSlowly("complete_stubbornly", stubborn=True, complete=True),
    Func(_sync_write, name="sync_write", description="a sync function with an effect"),
    Func(_hog, name="hog", description="an async tool that blocks its loop"),
    Func(_nap, name="nap", description="an async tool that awaits"),
)


@pytest.fixture
async def prompt_worker(temporal_client: Any, task_queue: str) -> AsyncIterator[Any]:
    """A worker with the default cancellation check (a heartbeat at least every second)."""
    async with build_worker(temporal_client, REGISTRY, task_queue=task_queue) as running:
        yield running


@pytest.fixture
async def deaf_worker(temporal_client: Any, task_queue: str) -> AsyncIterator[Any]:
    """A worker whose rounds hear of a cancellation only after they end (rare heartbeats)."""
    async with build_worker(
        temporal_client, REGISTRY, task_queue=task_queue, cancel_check_interval=timedelta(minutes=1)
    ) as running:
        yield running


def _calls(client: Any, task_queue: str, *, heartbeat: float) -> ToolCalls:
    return ToolCalls(client, task_queue=task_queue, heartbeat_timeout=timedelta(seconds=heartbeat))


async def _start(calls: ToolCalls, tool: str, ledger: Path, seconds: float = 1.5) -> Any:
    arguments = json.dumps({"ledger": str(ledger), "seconds": seconds})
    return await calls.start(
        Request(name=tool, arguments=arguments),
        call_id=f"cancel-{uuid.uuid4()}",
    )


async def _cancelled_mid_round(calls: ToolCalls, tool: str, ledger: Path) -> tuple[Any, Any]:
    handle = await _start(calls, tool, ledger)
    await wait_until(lambda: ledger_lines(ledger) == ["start"])
    await handle.cancel()
    outcome = await asyncio.wait_for(handle.result(), timeout=20)
    return handle, outcome


async def _assert_stays_cancelled(handle: Any, ledger: Path) -> None:
    await handle.cancel()  # a second cancel is harmless
    status = await handle.status()
    assert status.phase is Phase.CANCELLED
    assert status.pending is None
    with pytest.raises(AnswerRejectedError) as refused:
        await handle.answer(True)
    assert refused.value.reason is RefusalReason.FINISHED
    await asyncio.sleep(0.5)
    assert "round 2" not in ledger_lines(ledger)


async def test_cancel_during_a_round_that_then_asks_is_cancelled(
    temporal_client: Any, task_queue: str, deaf_worker: Any, tmp_path: Path
) -> None:
    """The probe, with the round ending before it hears: the question is not committed."""
    calls = _calls(temporal_client, task_queue, heartbeat=30)
    for attempt in range(3):
        ledger = tmp_path / f"ledger{attempt}"
        handle, outcome = await _cancelled_mid_round(calls, "ask_slowly", ledger)
        assert outcome.phase is Phase.CANCELLED, outcome
        assert "question the tool asked was not committed" in outcome.message
        assert ledger_lines(ledger) == ["start", "end"]  # the round did finish, unaware
        await _assert_stays_cancelled(handle, ledger)


async def test_cancel_reaches_a_running_tool_promptly(
    temporal_client: Any, task_queue: str, prompt_worker: Any, tmp_path: Path
) -> None:
    calls = _calls(temporal_client, task_queue, heartbeat=30)
    ledger = tmp_path / "ledger"
    handle = await _start(calls, "ask_slowly", ledger, seconds=30)
    await wait_until(lambda: ledger_lines(ledger) == ["start"])
    began = time.monotonic()
    await handle.cancel()
    outcome = await asyncio.wait_for(handle.result(), timeout=20)
    took = time.monotonic() - began
    assert outcome.phase is Phase.CANCELLED
    assert "the tool stopped at the cancellation" in outcome.message
    # A 30 s heartbeat timeout used to mean up to 10 s (then 24 s, SDK throttling) unaware.
    assert took < 4, took
    assert ledger_lines(ledger) == ["start"]
    await _assert_stays_cancelled(handle, ledger)


async def test_a_question_asked_after_hearing_the_cancel_is_not_committed(
    temporal_client: Any, task_queue: str, prompt_worker: Any, tmp_path: Path
) -> None:
    calls = _calls(temporal_client, task_queue, heartbeat=30)
    ledger = tmp_path / "ledger"
    handle, outcome = await _cancelled_mid_round(calls, "ask_stubbornly", ledger)
    assert outcome.phase is Phase.CANCELLED, outcome
    assert "asked a question after it, which was not committed" in outcome.message
    await _assert_stays_cancelled(handle, ledger)


@pytest.mark.parametrize("hears", [True, False], ids=["heard", "unaware"])
async def test_a_completed_result_is_never_replaced_by_cancellation(
    temporal_client: Any, task_queue: str, tmp_path: Path, hears: bool
) -> None:
    check = timedelta(seconds=1) if hears else timedelta(minutes=1)
    async with build_worker(
        temporal_client, REGISTRY, task_queue=task_queue, cancel_check_interval=check
    ):
        calls = _calls(temporal_client, task_queue, heartbeat=30)
        ledger = tmp_path / "ledger"
        _, outcome = await _cancelled_mid_round(calls, "complete_stubbornly", ledger)
    assert outcome.phase is Phase.COMPLETED, outcome
    assert outcome.output.text() == "done"


async def test_a_sync_tool_cancelled_mid_effect_says_its_thread_finished(
    temporal_client: Any, task_queue: str, prompt_worker: Any, tmp_path: Path
) -> None:
    calls = _calls(temporal_client, task_queue, heartbeat=30)
    ledger = tmp_path / "ledger"
    handle = await _start(calls, "sync_write", ledger, seconds=2.5)
    await wait_until(lambda: ledger_lines(ledger) == ["start"])
    await handle.cancel()
    outcome = await asyncio.wait_for(handle.result(), timeout=20)
    assert outcome.phase is Phase.CANCELLED
    assert "kept running after the cancellation and finished" in outcome.message, outcome
    assert "its effect may have happened" in outcome.message
    assert ledger_lines(ledger) == ["start", "end"]  # the effect did happen, and we say so


async def test_a_tool_blocking_its_loop_leaves_other_calls_alone(
    temporal_client: Any,
    task_queue: str,
    prompt_worker: Any,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Item 9: a 5 s time.sleep in an async tool; heartbeat timeout 2 s; 6 other calls."""
    caplog.set_level(logging.WARNING, logger="scope_tool.workers")
    calls = _calls(temporal_client, task_queue, heartbeat=2)
    hog_ledger = tmp_path / "hog"
    hog = await _start(calls, "hog", hog_ledger, seconds=5)
    await wait_until(lambda: "start" in ledger_lines(hog_ledger))
    others = [await _start(calls, "nap", tmp_path / f"nap{n}", seconds=3) for n in range(6)]
    outcomes = await asyncio.wait_for(
        asyncio.gather(*(handle.result() for handle in others)), timeout=30
    )
    assert [outcome.phase for outcome in outcomes] == [Phase.COMPLETED] * 6, outcomes
    hogged = await asyncio.wait_for(hog.result(), timeout=30)
    assert hogged.phase is Phase.COMPLETED, hogged  # its own heartbeats kept going too
    blocked = [r.getMessage() for r in caplog.records if "blocked its event loop" in r.getMessage()]
    assert len(blocked) == 1, blocked
    assert '"hog"' in blocked[0]
    assert hog.call_id in blocked[0]
    assert "round 1" in blocked[0]
