"""Refused cleanly: the checks every piece of hostile input must pass.

What counts as refused cleanly:

* a request (tool name + arguments) either fails at ``ToolCalls.start`` with a protocol or
  value error that says what was wrong (nothing started), or the call ends INVALID with a
  message and an ``error: ...`` model-visible output. Never COMPLETED, never ERRORED (which
  would mean the runtime choked instead of refusing);
* an answer raises :class:`AnswerRejectedError` with a known reason and a message, and the call
  it was sent to is unchanged afterwards (same phase, round, pending request, no answers);
* no workflow history holds a WorkflowTaskFailed event, and the worker process stays alive.

Hypothesis drives the generation. Its runner is synchronous, so it runs in a thread and hands
each example to the test's event loop (where the Temporal client lives) with
``run_coroutine_threadsafe``; every mishandled example is collected, not just the first.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, TypeVar

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from scope_tool import Request
from scope_tool.client import AnswerRejectedError, CallStatus, ToolCallHandle, ToolCalls
from scope_tool.client import Phase as CallPhase
from scope_tool.errors import ToolError
from scope_tool.wire.errors import ANSWER_REJECTION_REASONS

__all__ = [
    "HostileTally",
    "check_answer_refused",
    "check_call_id",
    "check_request_refused",
    "run_property",
    "workflow_task_failures",
]

T = TypeVar("T")

_RESULT_TIMEOUT = 60.0


class HostileTally:
    """Counts what was tried and how it was refused, for the report and the README."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.call_ids: list[str] = []
        self.violations: list[str] = []

    def add(self, what: str) -> None:
        self.counts[what] += 1

    async def checking(self, label: str, check: Awaitable[None]) -> None:
        """Run one check; a broken expectation is recorded (with the input) instead of raised.

        Collecting every violation of a run, rather than stopping at the first, makes one run
        report every kind of input that is mishandled.
        """
        try:
            await check
        except Exception as error:  # AssertionError or an unexpected exception type
            self.counts["_violations"] += 1
            self.violations.append(f"{label}: {type(error).__name__}: {str(error)[:400]}")

    def report(self, limit: int = 15) -> str:
        """The violations, one per line, for the assertion message."""
        return "\n".join(self.violations[:limit]) + (
            f"\n... and {len(self.violations) - limit} more" if len(self.violations) > limit else ""
        )

    @property
    def total(self) -> int:
        """How many inputs were tried."""
        return self.counts["_requests"] + self.counts["_answers"]


async def check_request_refused(
    calls: ToolCalls, name: str, arguments: str, *, tally: HostileTally
) -> None:
    """Start one hostile request; a mishandled one is recorded in ``tally.violations``."""
    tally.add("_requests")
    await tally.checking(
        f"request {_shorten(name, 60)} {_shorten(arguments, 100)}",
        _request_refused(calls, name, arguments, tally=tally),
    )


async def check_call_id(calls: ToolCalls, call_id: str, *, tally: HostileTally) -> None:
    """Start a well-formed echo call under an odd id; a mishandled one goes to ``violations``."""
    tally.add("_requests")
    await tally.checking(
        f"call id {_shorten(call_id, 60)}", _call_id_handled(calls, call_id, tally=tally)
    )


async def _call_id_handled(calls: ToolCalls, call_id: str, *, tally: HostileTally) -> None:
    unique = f"{call_id}{uuid.uuid4().hex}" if call_id.strip() and len(call_id) < 1_000 else call_id
    refusal: Exception | None = None
    try:
        handle = await calls.start(Request(name="echo", arguments='{"text":"a"}'), call_id=unique)
    except (ToolError, ValueError, TypeError) as error:
        refusal = error
    if refusal is not None:
        assert str(refusal).strip()
        assert "codec can't encode" not in str(refusal), f"unclear refusal: {refusal}"
        tally.add(f"call id refused ({type(refusal).__name__})")
        return
    tally.call_ids.append(unique)
    outcome = await asyncio.wait_for(handle.result(), _RESULT_TIMEOUT)
    assert outcome.phase is CallPhase.COMPLETED, outcome
    tally.add("call id worked")


async def _request_refused(
    calls: ToolCalls, name: str, arguments: str, *, tally: HostileTally
) -> None:
    call_id = f"hostile-{uuid.uuid4().hex}"
    refusal: Exception | None = None
    try:
        handle = await calls.start(Request(name=name, arguments=arguments), call_id=call_id)
    except (ToolError, ValueError, TypeError) as error:
        refusal = error
    if refusal is not None:
        assert str(refusal).strip(), f"empty refusal for {name!r}"
        assert not await _exists(calls, call_id), f"{call_id} was started despite the refusal"
        tally.add(f"request refused at start ({type(refusal).__name__})")
        return
    tally.call_ids.append(call_id)
    outcome = await asyncio.wait_for(handle.result(), _RESULT_TIMEOUT)
    assert outcome.phase is CallPhase.INVALID, (
        f"hostile request {name[:60]!r} / {arguments[:120]!r} ended {outcome.phase}: "
        f"{outcome.message[:300]!r}"
    )
    assert outcome.message.strip(), "INVALID without a message"
    text = outcome.output.text()
    assert text is not None
    assert text.startswith("error: "), text[:200]
    tally.add("request ended INVALID")


async def _exists(calls: ToolCalls, call_id: str) -> bool:
    try:
        await calls.client.get_workflow_handle(call_id).describe()
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            return False
        raise
    return True


def _same_state(before: CallStatus, after: CallStatus) -> bool:
    return (
        after.phase is before.phase
        and after.round == before.round
        and after.answers == before.answers
        and (after.pending.request_id if after.pending else None)
        == (before.pending.request_id if before.pending else None)
        and after.outcome == before.outcome
    )


async def check_answer_refused(
    handle: ToolCallHandle,
    baseline: CallStatus,
    response: Any,
    request_id: str | None,
    *,
    tally: HostileTally,
) -> None:
    """Send one hostile answer; a mishandled one is recorded in ``tally.violations``."""
    tally.add("_answers")
    await tally.checking(
        f"answer {_shorten(response, 120)} request {_shorten(request_id, 60)}",
        _answer_refused(handle, baseline, response, request_id, tally=tally),
    )


async def _answer_refused(
    handle: ToolCallHandle,
    baseline: CallStatus,
    response: Any,
    request_id: str | None,
    *,
    tally: HostileTally,
) -> None:
    refusal: AnswerRejectedError | None = None
    receipt: object = None
    try:
        receipt = await handle.answer(response, request_id=request_id, answered_by="fuzzer")
    except AnswerRejectedError as error:
        refusal = error
    assert refusal is not None, f"hostile answer was accepted: {receipt}"
    assert refusal.reason in ANSWER_REJECTION_REASONS, refusal.reason
    assert str(refusal).strip()
    tally.add(f"answer rejected ({refusal.reason})")
    after = await handle.status()
    assert _same_state(baseline, after), f"the call changed: {baseline} -> {after}"


def _shorten(value: Any, width: int = 200) -> str:
    """A printable prefix of any value, even one too deep for ``repr``."""
    try:
        text = repr(value)
    except (RecursionError, ValueError):
        return f"<{type(value).__name__} too deep or too long to print>"
    return text if len(text) <= width else f"{text[:width]}...({len(text)} chars)"


def run_property(
    strategy: st.SearchStrategy[T],
    check: Callable[[T], Coroutine[Any, Any, None]],
    *,
    loop: asyncio.AbstractEventLoop,
    max_examples: int,
    explicit: Sequence[T] = (),
    per_example_timeout: float = 90.0,
    concurrency: int = 1,
) -> None:
    """Run ``check`` on ``explicit`` then on ``max_examples`` generated values (in a thread).

    ``max_examples=0`` runs the explicit values only (the small size of a suite). With
    ``concurrency`` above 1, hypothesis first generates every value (generation only: these
    properties never shrink), then up to that many checks run at once: each check stands alone
    (its own call, or a refusal that must change nothing), and most of their time is waiting
    (an unserved tool's INVALID comes after a schedule-to-start timeout, a CLI check is a
    process start).
    """
    values: list[T] = list(explicit)
    if max_examples > 0:
        # Explicit values are never given to hypothesis: some (a list nested 100 000 deep) are
        # too deep for its own reporting machinery to handle as @example values.
        generated: list[T] = []

        @settings(
            max_examples=max_examples,
            deadline=None,
            database=None,
            phases=(Phase.generate,),
            suppress_health_check=list(HealthCheck),
            print_blob=False,
        )
        @given(strategy)
        def property_holds(value: T) -> None:
            if concurrency > 1:
                generated.append(value)
            else:
                _run_checks(check, [value], loop, per_example_timeout, 1)

        if concurrency == 1:
            _run_checks(check, values, loop, per_example_timeout, 1)
            property_holds()
            return
        property_holds()
        values += generated
    _run_checks(check, values, loop, per_example_timeout, concurrency)


def _run_checks(
    check: Callable[[T], Coroutine[Any, Any, None]],
    values: Sequence[T],
    loop: asyncio.AbstractEventLoop,
    per_example_timeout: float,
    concurrency: int,
) -> None:
    """Each value's check on ``loop``, at most ``concurrency`` at once; the first failure raises."""

    async def all_checks() -> None:
        gate = asyncio.Semaphore(concurrency)

        async def one(value: T) -> None:
            async with gate:
                await asyncio.wait_for(check(value), per_example_timeout)

        await asyncio.gather(*(one(value) for value in values))

    if values:
        asyncio.run_coroutine_threadsafe(all_checks(), loop).result()


async def workflow_task_failures(client: Client, call_ids: Sequence[str]) -> tuple[str, ...]:
    """Every WorkflowTaskFailed event in these calls' histories (a crash of workflow code)."""
    failures: list[str] = []
    gate = asyncio.Semaphore(16)

    async def one(call_id: str) -> None:
        async with gate:
            history = await client.get_workflow_handle(call_id).fetch_history()
        for event in history.events:
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
                message = event.workflow_task_failed_event_attributes.failure.message
                failures.append(f"{call_id}: {message[:300]}")

    await asyncio.gather(*(one(call_id) for call_id in call_ids))
    return tuple(failures)
