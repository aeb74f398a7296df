"""The ``scope_tool.check_answer`` activity: finish a schema check the workflow could not afford.

Workflow code checks an answer only up to a fixed size and work budget
(``scope_tool.workflows._answer_check.WORKFLOW_CHECK_BYTES`` / ``WORKFLOW_CHECK_STEPS``), because a workflow task that does not yield
within 2 s fails and is retried forever. An answer over that budget (e.g. ~1 MB of decimals
against an ``anyOf``/``multipleOf`` schema) is checked here with no budget, in a thread so the
worker's event loop keeps heartbeating and polling; the verdict goes back to the update or
signal handler that asked. The check is pure, so a retried attempt gives the same verdict.

The answer is parsed once (``CompiledSchema.check_json``: the I-JSON rules and the exact values
in one pass). A thread, not a process pool: the only stall of the event loop is the JSON parse
(one C call holding the GIL, 0.1-0.25 s per MiB), while a pool would cost every worker a child
process that takes seconds to start (docs/performance.md, "A costly answer's verdict").
"""

from __future__ import annotations

import asyncio

from temporalio import activity

from scope_tool._ijson import IJSONError
from scope_tool._schema import CompiledSchema
from scope_tool._schema_check import CheckOutcome
from scope_tool.wire import CHECK_ANSWER_ACTIVITY, CheckAnswerInput, CheckAnswerResult

__all__ = ["check_answer"]


@activity.defn(name=CHECK_ANSWER_ACTIVITY)
async def check_answer(request: CheckAnswerInput) -> CheckAnswerResult:
    """The schema's verdict on ``request.response``, with no work budget."""
    return await asyncio.to_thread(check_answer_now, request)


def check_answer_now(request: CheckAnswerInput) -> CheckAnswerResult:
    """The same verdict, synchronously (what the activity runs in its thread)."""
    schema = CompiledSchema.parse(request.response_schema)
    try:
        verdict = schema.check_json(request.response)  # parses once (I-JSON and values)
    except IJSONError as exc:
        return CheckAnswerResult(accepted=False, reason="invalid_json", detail=str(exc))
    if verdict.outcome is CheckOutcome.ACCEPTED:
        return CheckAnswerResult(accepted=True)
    return CheckAnswerResult(
        accepted=False, detail=verdict.detail, path=verdict.path, violation=verdict.violation
    )
