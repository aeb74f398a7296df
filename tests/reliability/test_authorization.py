"""Authorization: a Guard's policy error never leaks; a refusal is REJECTED with the generic text.

The broken authorizer raises an exception whose text is a fake secret. It must appear nowhere a
model or an operator browsing calls would see it: the outcome's output and message, the status
query, the workflow's memo, search attributes, summary and current details, nor the history.
"""

from __future__ import annotations

import asyncio
import uuid

from temporalio.api.sdk.v1 import WorkflowMetadata

from scope_tool import FailureKind, Request
from scope_tool.client import Phase, ToolCalls

from ._tools import BROKEN_POLICY_SECRET


async def _everything_visible(calls: ToolCalls, call_id: str) -> str:
    handle = calls.get(call_id)
    status = await handle.status()
    raw = calls.client.get_workflow_handle(call_id)
    description = await raw.describe()
    metadata = await raw.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
    history = await raw.fetch_history()
    return "\n".join(
        [
            repr(status),
            str(description.raw_description),
            str(metadata),
            history.to_json(),
        ]
    )


async def test_policy_error_is_sealed(reliability_calls: ToolCalls) -> None:
    call_id = f"auth-broken-{uuid.uuid4().hex[:12]}"
    handle = await reliability_calls.start(Request(name="guarded_broken"), call_id=call_id)
    outcome = await asyncio.wait_for(handle.result(), 60)

    assert outcome.phase is not Phase.COMPLETED, outcome
    assert outcome.output.text() != "the guarded operation ran"
    visible = "\n".join([repr(outcome), await _everything_visible(reliability_calls, call_id)])
    assert BROKEN_POLICY_SECRET not in visible
    assert "hunter2" not in visible
    # What is said instead is the protocol's sealed message.
    assert 'tool: authorization for "guarded_broken" failed' in outcome.message


async def test_refusal_is_rejected_with_generic_text(reliability_calls: ToolCalls) -> None:
    call_id = f"auth-refused-{uuid.uuid4().hex[:12]}"
    handle = await reliability_calls.start(Request(name="guarded_refused"), call_id=call_id)
    outcome = await asyncio.wait_for(handle.result(), 60)

    assert outcome.phase is Phase.REJECTED, outcome
    assert outcome.failure_kind is FailureKind.REJECTED
    assert outcome.output.text() == 'error: tool "guarded_refused" is not authorized'
    status = await handle.status()
    assert status.phase is Phase.REJECTED
    assert status.outcome == outcome
    assert "the guarded operation ran" not in await _everything_visible(reliability_calls, call_id)
