"""An answer deadline of days ends the call EXPIRED (time-skipping test server)."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

from runtime.example_tools import REGISTRY, ledger_lines
from scope_tool import Request
from scope_tool.client import Phase
from scope_tool.testing import start_worker


async def test_unanswered_for_three_days_expires(time_skipping_env: Any, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    request = Request(
        name="deploy_plan", arguments=json.dumps({"ledger": str(ledger), "service": "batch"})
    )
    async with start_worker(time_skipping_env.client, REGISTRY) as started:
        handle = await started.calls.start(
            request, call_id=f"expire-{uuid.uuid4()}", answer_timeout=timedelta(days=3)
        )
        outcome = await handle.result()  # the test server skips the three days
        status = await handle.status()
    assert outcome.phase is Phase.EXPIRED
    assert outcome.message == f"no answer to {handle.call_id}/r1 before the deadline"
    assert outcome.rounds == 1
    assert status.phase is Phase.EXPIRED
    assert status.pending is None
    assert ledger_lines(ledger) == ["plan"]


async def test_the_deadline_is_shown_while_waiting(time_skipping_env: Any, tmp_path: Path) -> None:
    request = Request(
        name="deploy_plan",
        arguments=json.dumps({"ledger": str(tmp_path / "ledger"), "service": "batch"}),
    )
    async with start_worker(time_skipping_env.client, REGISTRY) as started:
        handle = await started.calls.start(
            request, call_id=f"deadline-{uuid.uuid4()}", answer_timeout=timedelta(days=2)
        )
        with time_skipping_env.auto_time_skipping_disabled():
            status = await handle.status()
            while status.pending is None:
                status = await handle.status()
            assert status.pending.deadline - status.pending.asked_at == timedelta(days=2)
            await handle.answer({"approve": False})
        outcome = await handle.result()
    assert outcome.phase is Phase.COMPLETED
