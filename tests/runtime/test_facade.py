"""Start-or-attach, listing by search attributes, visibility fields, contract pinning."""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers.waiting import wait_for_phase, wait_until_async

from runtime.example_tools import CHANGED_REGISTRY, ledger_lines
from scope_tool import Request
from scope_tool.client import CallConflictError, CallNotFoundError, Phase, ToolCalls, ToolCallsError
from scope_tool.workers import build_worker


async def test_second_start_attaches_to_the_running_call(
    calls: ToolCalls, worker: Any, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"
    request = Request(
        name="deploy_plan", arguments=json.dumps({"ledger": str(ledger), "service": "a"})
    )
    call_id = f"attach-{uuid.uuid4()}"
    first = await calls.start(request, call_id=call_id)
    await wait_for_phase(first, Phase.AWAITING_INPUT)
    second = await calls.start(request, call_id=call_id)
    assert (await second.status()).pending == (await first.status()).pending
    await second.answer({"approve": False})
    assert (await first.result()).phase is Phase.COMPLETED
    assert ledger_lines(ledger) == ["plan"]


async def test_start_with_the_id_of_a_finished_call_returns_that_call(
    calls: ToolCalls, worker: Any, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"
    arguments = json.dumps({"ledger": str(ledger), "seconds": 0})
    call_id = f"finished-{uuid.uuid4()}"
    handle = await calls.start(Request(name="slow", arguments=arguments), call_id=call_id)
    outcome = await handle.result()
    again = await calls.start(Request(name="slow", arguments=arguments), call_id=call_id)
    assert await again.result() == outcome
    assert ledger_lines(ledger) == ["start", "end"]  # the tool ran once


async def test_unknown_call_id(calls: ToolCalls) -> None:
    with pytest.raises(CallNotFoundError, match="no tool call with id 'nope-"):
        await calls.get(f"nope-{uuid.uuid4()}").status()


async def test_start_refuses_bad_arguments_and_starts_nothing(calls: ToolCalls) -> None:
    request = Request(name="echo", arguments="{}")
    with pytest.raises(ValueError, match="call_id must be a non-empty string"):
        await calls.start(request, call_id=" ")
    with pytest.raises(ValueError, match="notify_url must be an http"):
        await calls.start(request, call_id="x", notify_url="ftp://example")
    with pytest.raises(ValueError, match="allowed_answerers must be a sequence"):
        await calls.start(request, call_id="x", allowed_answerers="alice")
    with pytest.raises(CallNotFoundError):
        await calls.get("x").status()


async def test_list_by_phase_and_tool_newest_first(
    calls: ToolCalls, worker: Any, tmp_path: Path
) -> None:
    prefix = f"list-{uuid.uuid4()}"
    waiting = []
    for index in range(2):
        handle = await calls.start(
            Request(
                name="deploy_plan",
                arguments=json.dumps({"ledger": str(tmp_path / "l"), "service": str(index)}),
            ),
            call_id=f"{prefix}-{index}",
        )
        await wait_for_phase(handle, Phase.AWAITING_INPUT)
        waiting.append(handle.call_id)
    done = await calls.start(Request(name="echo", arguments='{"text":"x"}'), call_id=f"{prefix}-e")
    await done.result()

    async def listed() -> list[Any]:
        return [
            summary
            for summary in await calls.list(phase=Phase.AWAITING_INPUT, tool="deploy_plan")
            if summary.call_id.startswith(prefix)
        ]

    found: list[Any] = []

    async def refresh() -> bool:
        found[:] = await listed()
        return len(found) == 2

    await wait_until_async(refresh)
    assert [summary.call_id for summary in found] == list(reversed(waiting))
    assert all(s.tool == "deploy_plan" and s.phase is Phase.AWAITING_INPUT for s in found)
    completed: list[Any] = []

    async def done_listed() -> bool:
        # Visibility is eventually consistent: the close is listed a moment after the result.
        listing = await calls.list(phase=Phase.COMPLETED, tool="echo")
        completed[:] = [s for s in listing if s.call_id == done.call_id]
        return len(completed) == 1

    await wait_until_async(done_listed)
    assert completed[0].phase is Phase.COMPLETED
    with pytest.raises(ValueError, match="tool must be a tool name"):
        await calls.list(tool="x' OR 'a'='a")
    for call_id in waiting:
        await calls.get(call_id).cancel()


async def test_visibility_fields(calls: ToolCalls, worker: Any, tmp_path: Path) -> None:
    handle = await calls.start(
        Request(
            name="deploy_plan",
            arguments=json.dumps({"ledger": str(tmp_path / "l"), "service": "ui"}),
        ),
        call_id=f"vis-{uuid.uuid4()}",
    )
    await wait_for_phase(handle, Phase.AWAITING_INPUT)

    async def described_phase() -> Any:
        # The query can answer from the worker's state before the upsert's workflow task is
        # recorded, so the attribute is read until it has caught up (a loaded machine lags).
        described = await handle.workflow_handle.describe()
        found = {key.name: value for key, value in _pairs(described.typed_search_attributes)}
        return described if found.get("ScopeToolPhase") == "AWAITING_INPUT" else None

    description = None
    for _ in range(100):
        description = await described_phase()
        if description is not None:
            break
        await asyncio.sleep(0.1)
    assert description is not None, "ScopeToolPhase never reached AWAITING_INPUT"
    assert await description.static_summary() == "scope-tool call of deploy_plan"
    attributes = {key.name: value for key, value in _pairs(description.typed_search_attributes)}
    assert attributes["ScopeToolName"] == "deploy_plan"
    assert attributes["ScopeToolPhase"] == "AWAITING_INPUT"
    metadata = await handle.workflow_handle.query("__temporal_workflow_metadata")
    assert "approve this plan?" in metadata.current_details
    await handle.cancel()
    await handle.result()
    description = await handle.workflow_handle.describe()
    attributes = {key.name: value for key, value in _pairs(description.typed_search_attributes)}
    assert attributes["ScopeToolPhase"] == "CANCELLED"


async def test_changed_contract_waits_for_its_own_contract(
    calls: ToolCalls, temporal_client: Any, task_queue: str, tmp_path: Path
) -> None:
    """A re-entry never runs on a changed contract: the call waits, then resumes on its own."""
    ledger = tmp_path / "ledger"
    request = Request(
        name="deploy_plan", arguments=json.dumps({"ledger": str(ledger), "service": "db"})
    )
    from runtime.example_tools import REGISTRY

    async with build_worker(temporal_client, REGISTRY, task_queue=task_queue):
        handle = await calls.start(request, call_id=f"pin-{uuid.uuid4()}")
        await wait_for_phase(handle, Phase.AWAITING_INPUT)
    async with build_worker(temporal_client, CHANGED_REGISTRY, task_queue=task_queue):
        await handle.answer({"approve": True})

        async def stuck() -> bool:
            return (await handle.status()).waiting_for_worker is not None

        await wait_until_async(stuck)
        status = await handle.status()
        assert status.phase is Phase.RUNNING
        wait = status.waiting_for_worker
        assert wait is not None
        digest = REGISTRY.resolve("deploy_plan").contract.digest  # type: ignore[union-attr]
        assert wait.contract_digest == digest
        assert wait.message.startswith(
            f"waiting for a worker with tool deploy_plan, contract {digest[:12]}"
        )
        assert ledger_lines(ledger) == ["plan"]
    async with build_worker(temporal_client, REGISTRY, task_queue=task_queue):
        status = await wait_for_phase(handle, Phase.AWAITING_INPUT)
        assert status.round == 2
        assert status.waiting_for_worker is None
    assert ledger_lines(ledger) == ["plan", "prepare"]
    await handle.cancel()


def _pairs(attributes: Any) -> list[tuple[Any, Any]]:
    return [(pair.key, pair.value) for pair in attributes]


async def test_status_of_a_finished_call_with_no_worker(
    calls: ToolCalls, temporal_client: Any, task_queue: str
) -> None:
    from runtime.example_tools import REGISTRY

    async with build_worker(temporal_client, REGISTRY, task_queue=task_queue):
        handle = await calls.start(
            Request(name="echo", arguments='{"text":"late"}'), call_id=f"nowk-{uuid.uuid4()}"
        )
        outcome = await handle.result()
    status = await handle.status(wait_for_worker=timedelta(seconds=1))
    assert status.phase is Phase.COMPLETED
    assert status.tool == "echo"
    assert status.outcome == outcome


async def test_status_of_a_running_call_with_no_worker_says_so(
    calls: ToolCalls, task_queue: str
) -> None:
    handle = await calls.start(
        Request(name="echo", arguments='{"text":"x"}'), call_id=f"nowk2-{uuid.uuid4()}"
    )
    with pytest.raises(ToolCallsError, match=f"needs a worker on task queue '{task_queue}'"):
        await handle.status(wait_for_worker=timedelta(seconds=1))
    await handle.workflow_handle.terminate()


async def test_arguments_that_are_not_utf8_are_invalid(calls: ToolCalls, worker: Any) -> None:
    handle = await calls.start(
        Request(name="echo", arguments=b'{"text":"\xff"}'), call_id=f"utf8-{uuid.uuid4()}"
    )
    outcome = await handle.result()
    assert outcome.phase is Phase.INVALID
    assert "one valid RFC 7493 JSON document" in outcome.message


async def test_connect_uses_the_scope_tool_converter(
    temporal_address: str, task_queue: str, worker: Any
) -> None:
    connected = await ToolCalls.connect(temporal_address, task_queue=task_queue)
    assert connected.task_queue == task_queue
    handle = await connected.start(
        Request(name="echo", arguments='{"text":"via connect"}'), call_id=f"conn-{uuid.uuid4()}"
    )
    assert (await handle.result()).output.text() == "echo: via connect"


@pytest.mark.parametrize("finish_first", [False, True], ids=["running", "finished"])
async def test_a_call_id_names_one_request(
    calls: ToolCalls, worker: Any, tmp_path: Path, finish_first: bool
) -> None:
    ledger = tmp_path / "ledger"
    arguments = json.dumps({"ledger": str(ledger), "seconds": 0 if finish_first else 2})
    call_id = f"one-request-{uuid.uuid4()}"
    first = await calls.start(Request(name="slow", arguments=arguments), call_id=call_id)
    assert first.attached is False
    if finish_first:
        await first.result()
    same = await calls.start(Request(name="slow", arguments=arguments), call_id=call_id)
    assert same.attached is True
    other = json.dumps({"ledger": str(ledger), "seconds": 1})
    with pytest.raises(CallConflictError, match="already exists with other arguments"):
        await calls.start(Request(name="slow", arguments=other), call_id=call_id)
    with pytest.raises(CallConflictError, match="already exists with tool 'slow'"):
        await calls.start(Request(name="echo", arguments='{"text":"x"}'), call_id=call_id)
    await same.result()
    assert ledger_lines(ledger) == ["start", "end"]  # the tool ran once
