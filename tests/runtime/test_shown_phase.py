"""The ScopeToolPhase attribute after an answer: written only when the next round runs a while.

An answer sets the call RUNNING at once (its status says so); the search attribute keeps
AWAITING_INPUT until the round it starts has run ``ROUND_RUNNING_AFTER_SECONDS`` (the round then
signals ``round_running``) or ends, so a quick round costs no search-attribute write. A
``round_running`` signal from anyone else changes nothing that is not already true.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

from helpers.replay import assert_replays
from helpers.waiting import wait_for_phase, wait_until_async
from temporalio.api.enums.v1 import EventType

from scope_tool import Definition, InputRequest, Invocation, Output, Registry, Request, Result
from scope_tool.client import Phase, ToolCalls
from scope_tool.testing import start_worker
from scope_tool.wire import PHASE_KEY, ROUND_RUNNING, ROUND_RUNNING_AFTER_SECONDS


class ApproveThenWork:
    """Asks for approval; approved, works for ``seconds`` (ledger lines ``start`` / ``end``)."""

    def definition(self) -> Definition:
        return Definition(
            name="approve_then_work",
            description="asks, then works for a while",
            input_schema={
                "type": "object",
                "properties": {"ledger": {"type": "string"}, "seconds": {"type": "number"}},
                "required": ["ledger", "seconds"],
                "additionalProperties": False,
            },
        )

    async def call(self, invocation: Invocation) -> Result:
        arguments = json.loads(invocation.arguments)
        if invocation.continuation is None:
            return Result(
                input_request=InputRequest(
                    prompt=json.dumps("go ahead?"), response_schema={"type": "boolean"}, state="{}"
                )
            )
        _note(arguments["ledger"], "start")
        await asyncio.sleep(arguments["seconds"])
        _note(arguments["ledger"], "end")
        return Result(output=Output.text_output("worked"))


def _note(ledger: str, line: str) -> None:
    with Path(ledger).open("a") as file:
        file.write(line + "\n")


async def _shown(handle: Any) -> str | None:
    description = await handle.workflow_handle.describe()
    return description.typed_search_attributes.get(PHASE_KEY)


async def _phase_writes(handle: Any) -> list[str]:
    history = await handle.workflow_handle.fetch_history()
    written = []
    for event in history.events:
        if event.event_type == EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
            fields = event.upsert_workflow_search_attributes_event_attributes.search_attributes
            if "ScopeToolPhase" in fields.indexed_fields:
                written.append(json.loads(fields.indexed_fields["ScopeToolPhase"].data))
    return written


async def _signals(handle: Any) -> list[str]:
    history = await handle.workflow_handle.fetch_history()
    return [
        event.workflow_execution_signaled_event_attributes.signal_name
        for event in history.events
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
    ]


async def _start(calls: ToolCalls, ledger: Path, seconds: float) -> Any:
    handle = await calls.start(
        Request(
            name="approve_then_work",
            arguments=json.dumps({"ledger": str(ledger), "seconds": seconds}),
        ),
        call_id=f"shown-{uuid.uuid4()}",
    )
    await wait_for_phase(handle, Phase.AWAITING_INPUT)
    return handle


async def test_a_quick_round_after_an_answer_writes_no_running_phase(
    temporal_client: Any, tmp_path: Path
) -> None:
    async with start_worker(temporal_client, Registry(ApproveThenWork())) as started:
        handle = await _start(started.calls, tmp_path / "ledger", 0)
        await handle.answer(True)
        assert (await handle.result()).phase is Phase.COMPLETED
        assert await _phase_writes(handle) == ["AWAITING_INPUT", "COMPLETED"]
        assert ROUND_RUNNING not in await _signals(handle)
        await assert_replays(handle)


async def test_a_long_round_after_an_answer_shows_running_while_it_works(
    temporal_client: Any, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"
    async with start_worker(temporal_client, Registry(ApproveThenWork())) as started:
        handle = await _start(started.calls, ledger, ROUND_RUNNING_AFTER_SECONDS + 2)
        await handle.answer(True)
        assert (await handle.status()).phase is Phase.RUNNING  # the status is exact at once

        async def shown_running() -> bool:
            return await _shown(handle) == "RUNNING"

        await wait_until_async(shown_running, within=ROUND_RUNNING_AFTER_SECONDS + 5)
        assert ledger.read_text().splitlines() == ["start"]  # still working
        assert (await handle.result()).phase is Phase.COMPLETED
        assert await _shown(handle) == "COMPLETED"
        assert await _phase_writes(handle) == ["AWAITING_INPUT", "RUNNING", "COMPLETED"]
        assert await _signals(handle) == [ROUND_RUNNING]
        await assert_replays(handle)


async def test_round_running_from_any_client_changes_nothing_untrue(
    temporal_client: Any, tmp_path: Path
) -> None:
    async with start_worker(temporal_client, Registry(ApproveThenWork())) as started:
        handle = await _start(started.calls, tmp_path / "ledger", 0)
        raw = temporal_client.get_workflow_handle(handle.call_id)
        await raw.signal(ROUND_RUNNING, 1)  # the waiting round's number
        await raw.signal(ROUND_RUNNING, "not a round")
        await raw.signal(ROUND_RUNNING, args=[1, 2])
        await raw.signal(ROUND_RUNNING, 2)
        assert (await handle.status()).phase is Phase.AWAITING_INPUT
        assert await _shown(handle) == "AWAITING_INPUT"
        await handle.answer(True)
        assert (await handle.result()).phase is Phase.COMPLETED
        assert await _phase_writes(handle) == ["AWAITING_INPUT", "COMPLETED"]
        await assert_replays(handle)
