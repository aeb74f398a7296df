"""Replay: recorded histories must replay without non-determinism errors.

Fresh histories are recorded and replayed in the run; a few are also committed under
``histories/`` so a later change to the workflow that would break calls already running in
production fails here. Re-record them (only for an intended, compatible change) with
``SCOPE_TOOL_RECORD_HISTORIES=1 pytest tests/runtime/test_replay.py``.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

from helpers.waiting import wait_for_phase
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from scope_tool import Request
from scope_tool.client import DATA_CONVERTER, Phase, ToolCalls
from scope_tool.workers import workflow_runner
from scope_tool.workflows import ToolCallWorkflow

HISTORIES = Path(__file__).parent / "histories"


def _replayer() -> Replayer:
    return Replayer(
        workflows=[ToolCallWorkflow],
        data_converter=DATA_CONVERTER,
        workflow_runner=workflow_runner(),
    )


async def _record(calls: ToolCalls, tmp_path: Path) -> dict[str, WorkflowHistory]:
    """Run one call per scenario; return each finished call's history by scenario name."""
    ledger = str(tmp_path / "ledger")
    plan = Request(name="deploy_plan", arguments=json.dumps({"ledger": ledger, "service": "s"}))
    handles: dict[str, Any] = {}

    approved = await calls.start(plan, call_id=f"replay-approved-{uuid.uuid4()}")
    await wait_for_phase(approved, Phase.AWAITING_INPUT)
    await approved.signal_answer({"approve": "no"}, answered_by="x")  # refused, recorded
    await approved.answer({"approve": True}, answered_by="alice")
    status = await wait_for_phase(approved, Phase.AWAITING_INPUT)
    while status.round != 2:
        status = await wait_for_phase(approved, Phase.AWAITING_INPUT)
    await approved.answer('"confirm"', request_id=status.pending.request_id, answered_by="bob")
    handles["approved_in_three_rounds"] = approved

    cancelled = await calls.start(plan, call_id=f"replay-cancelled-{uuid.uuid4()}")
    await wait_for_phase(cancelled, Phase.AWAITING_INPUT)
    await cancelled.cancel()
    handles["cancelled_while_waiting"] = cancelled

    failed = await calls.start(
        Request(name="boom", arguments=json.dumps({"ledger": ledger})),
        call_id=f"replay-errored-{uuid.uuid4()}",
    )
    handles["errored_with_evidence"] = failed

    echoed = await calls.start(
        Request(name="echo", arguments='{"text":"hi"}'), call_id=f"replay-echo-{uuid.uuid4()}"
    )
    handles["completed_in_one_round"] = echoed

    notified = await calls.start(
        plan, call_id=f"replay-notified-{uuid.uuid4()}", notify_url="http://127.0.0.1:9/hook"
    )
    await wait_for_phase(notified, Phase.AWAITING_INPUT)
    await notified.answer({"approve": False}, answered_by="alice")
    handles["notified_by_child_workflows"] = notified

    histories = {}
    for name, handle in handles.items():
        await handle.result()
        histories[name] = await handle.workflow_handle.fetch_history()
    return histories


async def test_fresh_histories_replay(calls: ToolCalls, worker: Any, tmp_path: Path) -> None:
    histories = await _record(calls, tmp_path)
    replayer = _replayer()
    for name, history in histories.items():
        result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
        assert result.replay_failure is None, f"{name}: {result.replay_failure}"
    if os.environ.get("SCOPE_TOOL_RECORD_HISTORIES") == "1":
        HISTORIES.mkdir(exist_ok=True)
        for name, history in histories.items():
            (HISTORIES / f"{name}.json").write_text(history.to_json(), encoding="utf-8")


async def test_committed_histories_replay() -> None:
    files = sorted(HISTORIES.glob("*.json"))
    # notified_by_activities.json was recorded before notices became child workflows: calls
    # started then must still replay (workflow.patched keeps their activity path). The four
    # oldest predate routing (rounds on the main queue); routed_approved_in_three_rounds.json
    # predates eager rounds (rounds on tool and contract queues, no "eager-rounds" marker);
    # eager_approved_in_three_rounds.json has every round offered on the main queue, gated by
    # the "eager-rounds" marker; eager_input_approved_in_three_rounds.json the same, gated by
    # the input's eager_rounds field, with no marker; shown_late_approved_in_three_rounds.json
    # also leaves the phase attribute alone at each answer (running_shown_late).
    # deadline_steps_extended_delegated_escalated.json (reminders, an extension, a delegation,
    # the escalation) and named_answerers_approved.json (allowed_answerers, no policy) predate
    # ToolCallInput.assignee_attribute: their ScopeToolAssignee writes are their own upserts,
    # and only with deadline steps or a delegation; their assignee_*.json twins were recorded
    # with it (the attribute rides on the phase's upserts).
    assert len(files) >= 10, f"expected recorded histories in {HISTORIES}"
    replayer = _replayer()
    for file in files:
        history = WorkflowHistory.from_json(file.stem, file.read_text(encoding="utf-8"))
        result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
        assert result.replay_failure is None, f"{file.name}: {result.replay_failure}"


async def test_a_changed_workflow_is_caught_by_replay(tmp_path: Path) -> None:
    """The guard works: a history whose commands differ from the code fails to replay."""
    file = HISTORIES / "approved_in_three_rounds.json"
    raw = json.loads(file.read_text(encoding="utf-8"))
    for event in raw["events"]:
        attributes = event.get("activityTaskScheduledEventAttributes")
        if attributes:
            attributes["activityType"]["name"] = "scope_tool.some_other_activity"
    history = WorkflowHistory.from_json(file.stem, json.dumps(raw))
    result = await _replayer().replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is not None
