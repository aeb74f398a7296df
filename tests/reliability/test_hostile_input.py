"""Hostile input through the client facade: requests and answers, fuzzed by hypothesis.

Every example must be refused cleanly (see ``_refusals``): a clear error or an INVALID call for
requests, ``AnswerRejectedError`` and an unchanged call for answers; no WorkflowTaskFailed in
any history, and the worker process still alive at the end. One suite, two sizes (``_sizes``):
``make stress`` runs the same properties with ten times the generated examples and records
its figures.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from datetime import timedelta
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType

from scope_tool import Request
from scope_tool.client import CallConflictError, Phase, ToolCallHandle, ToolCalls
from scope_tool.errors import ToolError
from scope_tool.workflows._answer_check import WORKFLOW_CHECK_BYTES

from ._figures import record_figures
from ._hostile_inputs import (
    EXPLICIT_REQUESTS,
    HOSTILE_CALL_IDS,
    costly_answers,
    explicit_answers,
    hostile_answers,
    hostile_requests,
)
from ._ledger import SideEffectLedger
from ._processes import WorkerProcess
from ._refusals import (
    HostileTally,
    check_answer_refused,
    check_call_id,
    check_request_refused,
    run_property,
    workflow_task_failures,
)
from ._sizes import SIZE


async def _waiting_call(calls: ToolCalls, prefix: str) -> ToolCallHandle:
    call_id = f"{prefix}-{uuid.uuid4().hex[:12]}"
    handle = await calls.start(
        Request(name="approve_write", arguments=json.dumps({"key": call_id})), call_id=call_id
    )
    for _ in range(400):
        status = await handle.status()
        if status.phase is Phase.AWAITING_INPUT:
            return handle
        await asyncio.sleep(0.05)
    raise AssertionError(f"{call_id} never asked for input: {status}")


@pytest.mark.timeout(SIZE.test_timeout_seconds)
async def test_hostile_requests_are_refused(
    reliability_calls: ToolCalls, tool_worker: WorkerProcess
) -> None:
    tally = HostileTally()
    loop = asyncio.get_running_loop()
    await asyncio.to_thread(
        run_property,
        hostile_requests(),
        lambda pair: check_request_refused(reliability_calls, *pair, tally=tally),
        loop=loop,
        max_examples=SIZE.hostile_requests,
        explicit=EXPLICIT_REQUESTS,
        concurrency=16,
    )
    for call_id in HOSTILE_CALL_IDS:
        await check_call_id(reliability_calls, call_id, tally=tally)
    failures = await workflow_task_failures(reliability_calls.client, tally.call_ids)
    _record("hostile_requests", tally, failures, worker_alive=tool_worker.alive)
    assert tally.total >= len(EXPLICIT_REQUESTS) + len(HOSTILE_CALL_IDS)
    assert tally.violations == [], tally.report()
    assert failures == ()
    assert tool_worker.alive, tool_worker.log_text()[-3000:]
    assert "Traceback" not in tool_worker.log_text()


@pytest.mark.timeout(SIZE.test_timeout_seconds)
async def test_hostile_answers_are_refused_and_change_nothing(
    reliability_calls: ToolCalls, tool_worker: WorkerProcess, shared_ledger: SideEffectLedger
) -> None:
    handle = await _waiting_call(reliability_calls, "hostile-answers")
    baseline = await handle.status()
    tally = HostileTally()
    loop = asyncio.get_running_loop()
    await asyncio.to_thread(
        run_property,
        hostile_answers(handle.call_id),
        lambda pair: check_answer_refused(handle, baseline, *pair, tally=tally),
        loop=loop,
        max_examples=SIZE.hostile_answers,
        explicit=explicit_answers(handle.call_id),
        # One at a time: answers to one call that arrive together share its workflow tasks,
        # and under load several costly ones in one task once failed that task (see
        # test_answer_bursts for bursts on purpose).
    )
    _record("hostile_answers", tally, (), worker_alive=tool_worker.alive)

    # A hostile request reusing the waiting call's id is refused (an id names one request:
    # another tool or other arguments is a conflict); it never alters the call.
    for name, arguments in EXPLICIT_REQUESTS[:12]:
        with pytest.raises(CallConflictError, match=handle.call_id):
            await reliability_calls.start(
                Request(name=name, arguments=arguments), call_id=handle.call_id
            )
    assert await handle.status() == baseline
    assert tally.violations == [], tally.report()

    # After all that, the call still takes its one real answer and does its effect once.
    receipt = await handle.answer({"approve": True, "key": handle.call_id}, answered_by="tester")
    assert receipt.request_id == f"{handle.call_id}/r1"
    assert not receipt.duplicate
    outcome = await asyncio.wait_for(handle.result(), 60)
    assert outcome.phase is Phase.COMPLETED, outcome
    assert shared_ledger.effect_counts()[handle.call_id] == 1

    history = await handle.workflow_handle.fetch_history()
    accepted = [
        event
        for event in history.events
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
    ]
    # Answers too large to check in workflow code (costly_answers) are let through the
    # validator provisionally and refused by the handler after the check_answer activity; no
    # other refused answer reaches the history. Their text went ahead by signal, so their
    # update names it by digest.
    provisional = [event for event in accepted[:-1] if _staged_or_large(event)]
    assert 1 <= len(accepted) <= 1 + len(costly_answers(handle.call_id))
    assert len(provisional) == len(accepted) - 1, "a refused answer reached the history"
    assert await workflow_task_failures(reliability_calls.client, [handle.call_id]) == ()
    assert tool_worker.alive, tool_worker.log_text()[-3000:]
    assert "Traceback" not in tool_worker.log_text()


def _record(
    scenario: str, tally: HostileTally, failures: tuple[str, ...], *, worker_alive: bool
) -> None:
    """Print what was tried; at full size, record it for the README's figures."""
    print(f"{scenario}: {tally.total} tried: {dict(tally.counts)}")
    if SIZE.record_figures:
        record_figures(
            scenario,
            {
                "tried": tally.total,
                "mishandled": len(tally.violations),
                "refusals": dict(tally.counts),
                "mishandled_examples": tally.violations[:10],
                "workflow_task_failed": len(failures),
                "worker_alive": worker_alive,
            },
        )


async def test_hostile_signalled_answers_are_recorded_as_refused(
    reliability_calls: ToolCalls, tool_worker: WorkerProcess
) -> None:
    """The fire-and-forget path: a bad signal is noted in status and the call keeps waiting."""
    handle = await _waiting_call(reliability_calls, "hostile-signals")
    baseline = await handle.status()
    sent = 0
    for response, request_id in explicit_answers(handle.call_id):
        if not isinstance(response, bytes):
            continue  # values that cannot even be encoded are refused before sending
        if len(response) > WORKFLOW_CHECK_BYTES:
            continue  # checked by an activity: tests/runtime/test_costly_answers.py
        await handle.signal_answer(response, request_id=request_id, answered_by="fuzzer")
        sent += 1
    for _ in range(200):
        status = await handle.status()
        if len(status.refused) + status.refused_dropped >= sent:
            break
        await asyncio.sleep(0.05)
    # Status keeps the newest 20 refusals and counts the rest (#17 item 2).
    assert len(status.refused) == min(sent, 20), (sent, status.refused)
    assert status.refused_dropped == sent - len(status.refused)
    assert all(refusal.reason and refusal.message for refusal in status.refused)
    assert status.phase is Phase.AWAITING_INPUT
    assert status.answers == ()
    assert status.round == baseline.round
    assert await workflow_task_failures(reliability_calls.client, [handle.call_id]) == ()
    await handle.cancel()
    assert tool_worker.alive


async def test_answer_past_temporal_payload_limit_is_refused_without_failing_the_call(
    reliability_calls: ToolCalls, tool_worker: WorkerProcess
) -> None:
    """A 3 MB answer is over MAX_INPUT_BYTES and over Temporal's 2 MB payload limit.

    It must be refused like any over-limit answer: no WorkflowTaskFailed (an update rejection
    echoes its input, so rejecting it inside the workflow cannot be uploaded), and the call
    must go on answering status queries and accept its real answer at once.
    """
    handle = await _waiting_call(reliability_calls, "hostile-huge")
    baseline = await handle.status()
    tally = HostileTally()
    await check_answer_refused(handle, baseline, b'"' + b"a" * 3_000_000 + b'"', None, tally=tally)
    failures = await workflow_task_failures(reliability_calls.client, [handle.call_id])
    assert tally.violations == [], tally.report()
    assert failures == ()
    await asyncio.wait_for(
        handle.answer({"approve": True, "key": handle.call_id}, answered_by="tester"), 10
    )
    assert (await asyncio.wait_for(handle.result(), 30)).phase is Phase.COMPLETED


HOSTILE_START_OPTIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("answer_timeout of a million years", {"answer_timeout": timedelta(days=999_999_999)}),
    ("answer_timeout of 200 years", {"answer_timeout": timedelta(days=365 * 200)}),
    ("answer_timeout of 999 years", {"answer_timeout": timedelta(days=365 * 999)}),
    ("answer_timeout of 1 microsecond", {"answer_timeout": timedelta(microseconds=1)}),
    ("allowed_answerers of 3 MB", {"allowed_answerers": ["a" * 3_000_000]}),
    ("allowed_answerers with a lone surrogate", {"allowed_answerers": ["\ud800"]}),
    ("allowed_answerers as one string", {"allowed_answerers": "alice"}),
    ("notify_url that is not a URL", {"notify_url": "file:///etc/passwd"}),
)


async def test_hostile_start_options_are_refused_or_harmless(
    reliability_calls: ToolCalls, tool_worker: WorkerProcess
) -> None:
    """The caller's own options: refused at start with a clear error, or the call runs normally
    (asks, or expires at once), and never a failed workflow task."""
    violations: list[str] = []
    for label, options in HOSTILE_START_OPTIONS:
        call_id = f"hostile-options-{uuid.uuid4().hex[:12]}"
        request = Request(name="approve_write", arguments=json.dumps({"key": call_id}))
        try:
            handle = await reliability_calls.start(request, call_id=call_id, **options)
        except (ToolError, ValueError, TypeError) as error:
            if not str(error).strip():
                violations.append(f"{label}: empty refusal")
            continue
        except Exception as error:
            violations.append(f"{label}: {type(error).__name__}: {str(error)[:200]}")
            continue
        phase = None
        for _ in range(100):
            try:
                phase = (await handle.status(wait_for_worker=timedelta(seconds=3))).phase
            except Exception as error:
                phase = f"status failed: {type(error).__name__}"
                break
            if phase in (Phase.AWAITING_INPUT, Phase.EXPIRED):
                break
            await asyncio.sleep(0.05)
        if phase not in (Phase.AWAITING_INPUT, Phase.EXPIRED):
            violations.append(f"{label}: the call is stuck ({phase})")
        failures = await workflow_task_failures(reliability_calls.client, [call_id])
        if failures:
            violations.append(f"{label}: WorkflowTaskFailed: {failures[0][:200]}")
        with contextlib.suppress(Exception):
            await handle.cancel()
    assert violations == [], "\n".join(violations)
    assert tool_worker.alive


def _staged_or_large(accepted: Any) -> bool:
    """Whether an accepted ``answer`` update carried a text too large for workflow code:
    sent ahead by signal (the update names its digest) or carried whole."""
    payloads = accepted.workflow_execution_update_accepted_event_attributes.accepted_request.input.args.payloads
    if sum(len(payload.data) for payload in payloads) > WORKFLOW_CHECK_BYTES:
        return True
    return json.loads(payloads[0].data).get("response_digest") is not None
