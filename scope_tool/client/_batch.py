"""One decision for several waiting calls: :meth:`ToolCalls.answer_batch`.

A batch is checked before anything is sent: every call's status is read, and the same decision
the workflow makes (:class:`~scope_tool.workflows._answer_check.AnswerCheck`, over the state the
status shows) is run for the answer on each: the request still the pending one, the actor
allowed (answerers, voters, a vote not already cast), the answer valid for that question's
schema. Only if every call passes is any answer sent; otherwise nothing is written and the
refusal names each call that failed and why. Each call then gets its own request-bound answer
(the same path as :meth:`ToolCallHandle.answer`).

The check and the sending are not one transaction (each call is its own workflow): a call
answered by someone else in the moment between them refuses its answer as any stale answer is
refused, and the receipt lists it under ``refused``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from scope_tool import InputRequest
from scope_tool.client._answer_text import AnswerText
from scope_tool.client._handle import ToolCallHandle
from scope_tool.wire import AnswerInput, AnswerReceipt, ToolCallInput
from scope_tool.wire._status import CallStatus
from scope_tool.wire.errors import (
    AnswerRejectedError,
    CallNotFoundError,
    RefusalReason,
    ToolCallsError,
)
from scope_tool.wire.identity import token_subject
from scope_tool.workflows._answer_check import AnswerCheck, CallState, Refused

__all__ = [
    "MAX_BATCH",
    "BatchItem",
    "BatchProblem",
    "BatchReceipt",
    "BatchRefusedError",
    "answer_batch",
]

MAX_BATCH = 500
"""Most calls one batch decides."""
_PARALLEL = 32
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchItem:
    """One call of a batch, and the question the actor saw (``None``: the one pending now)."""

    call_id: str
    request_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchProblem:
    """Why one call of a batch did not pass the check."""

    call_id: str
    reason: RefusalReason
    message: str


class BatchRefusedError(ToolCallsError, ValueError):
    """A batch failed its check: no answer was sent to any of its calls.

    Attributes:
        problems: each call that failed, with a :class:`RefusalReason` and the words.
    """

    def __init__(self, problems: Sequence[BatchProblem], *, size: int) -> None:
        named = "; ".join(f"{each.call_id}: {each.reason} ({each.message})" for each in problems)
        super().__init__(
            f"batch of {size} refused, nothing was written: {len(problems)} call(s) failed the"
            f" check: {named}"
        )
        self.problems = tuple(problems)

    @property
    def call_ids(self) -> tuple[str, ...]:
        """The calls that failed the check, in the batch's order."""
        return tuple(each.call_id for each in self.problems)


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchReceipt:
    """What a batch did: each call's receipt, and any refused after the check (a race)."""

    receipts: tuple[tuple[str, AnswerReceipt], ...]
    refused: tuple[BatchProblem, ...] = ()


async def answer_batch(
    get: Callable[[str], ToolCallHandle],
    items: Sequence[BatchItem],
    raw: AnswerText,
    *,
    answered_by: str | None,
    identity_token: str | None,
) -> BatchReceipt:
    """Check every call of the batch, then answer each (see the module docstring)."""
    if not items:
        raise ValueError("a batch needs at least one call")
    if len(items) > MAX_BATCH:
        raise ValueError(f"a batch decides at most {MAX_BATCH} calls, got {len(items)}")
    ids = [item.call_id for item in items]
    repeated = sorted({each for each in ids if ids.count(each) > 1})
    if repeated:
        raise ValueError(f"a batch names each call once; repeated: {', '.join(repeated)}")
    handles = [get(item.call_id) for item in items]
    gate = asyncio.Semaphore(_PARALLEL)

    async def bounded(work: Awaitable[_T]) -> _T:
        async with gate:
            return await work

    voter = answered_by
    if identity_token is not None:
        voter = token_subject(identity_token) or answered_by
    answer = AnswerInput(response=bytes(raw), answered_by=voter, identity_token=identity_token)
    checked = await asyncio.gather(
        *(
            bounded(_check(handle, item, answer))
            for handle, item in zip(handles, items, strict=True)
        )
    )
    problems = [each for each in checked if isinstance(each, BatchProblem)]
    if problems:
        raise BatchRefusedError(problems, size=len(items))
    pinned = [each for each in checked if isinstance(each, str)]

    async def send(handle: ToolCallHandle, request_id: str) -> AnswerReceipt | BatchProblem:
        try:
            return await handle.answer(
                raw,
                request_id=request_id,
                answered_by=answered_by,
                identity_token=identity_token,
            )
        except AnswerRejectedError as refused:
            return BatchProblem(
                call_id=refused.call_id, reason=refused.reason, message=refused.message
            )

    sent = await asyncio.gather(
        *(
            bounded(send(handle, request_id))
            for handle, request_id in zip(handles, pinned, strict=True)
        )
    )
    return BatchReceipt(
        receipts=tuple(
            (item.call_id, each)
            for item, each in zip(items, sent, strict=True)
            if isinstance(each, AnswerReceipt)
        ),
        refused=tuple(each for each in sent if isinstance(each, BatchProblem)),
    )


async def _check(
    handle: ToolCallHandle, item: BatchItem, answer: AnswerInput
) -> str | BatchProblem:
    """The pending request id to answer, or why this call fails the batch's check."""
    call_id = item.call_id
    try:
        status = await handle.status()
    except CallNotFoundError:
        return BatchProblem(
            call_id=call_id, reason=RefusalReason.NOT_WAITING, message="no call with this id"
        )
    except ToolCallsError as error:
        return BatchProblem(call_id=call_id, reason=RefusalReason.NOT_WAITING, message=str(error))
    pending = status.pending
    if item.request_id is not None and (pending is None or pending.request_id != item.request_id):
        now = f"it now waits on {pending.request_id}" if pending else f"it is {status.phase.value}"
        return BatchProblem(
            call_id=call_id,
            reason=RefusalReason.STALE_REQUEST,
            message=f"request {item.request_id} is no longer the pending one; {now}",
        )
    verdict = AnswerCheck.unbounded(_state(status)).accept(answer)
    if isinstance(verdict, Refused):
        return BatchProblem(call_id=call_id, reason=verdict.reason, message=verdict.message)
    assert pending is not None  # an accepted verdict means a question is pending
    return pending.request_id


def _state(status: CallStatus) -> CallState:
    """The call's state as its status shows it, for the workflow's own answer check."""
    pending = status.pending
    request = (
        InputRequest(prompt=pending.prompt, response_schema=pending.response_schema, state=b"{}")
        if pending is not None
        else None
    )
    return CallState(
        call=ToolCallInput(
            call_id=status.call_id,
            tool=status.tool,
            allowed_answerers=status.allowed_answerers,
            require_verified=status.require_verified,
            policy=status.policy,
        ),
        phase=status.phase,
        pending=pending,
        pending_request=request,
        answered={},
        voted=frozenset(vote.voter for vote in status.votes if not vote.superseded),
    )
