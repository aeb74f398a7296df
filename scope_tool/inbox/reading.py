"""Reading calls for people: statuses with timeouts, the waiting list, refusals in words.

A call whose worker is down does not answer its status query (the server waits up to half a
minute), so one such call must not stall every page: the waiting list reads statuses in
parallel with a short timeout, and a call that timed out is not asked again for a while.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final

from scope_tool.client import (
    AnswerReceipt,
    AnswerRejectedError,
    AnswerText,
    BatchItem,
    BatchReceipt,
    CallStatus,
    CallSummary,
    Phase,
    RefusalReason,
    ToolCalls,
    ToolCallsError,
)
from scope_tool.client.history import CallHistory
from scope_tool.wire.identity import issue_token

__all__ = ["REFUSAL_HTTP_STATUS", "CallReader", "FinishedCall", "json_text", "refusal_text"]

_STATUS_TIMEOUT_SECONDS = 10.0
_LIST_STATUS_TIMEOUT_SECONDS = 3.0
_UNREADABLE_RETRY_SECONDS = 30.0
_TOKEN_LIFETIME = timedelta(minutes=2)
"""An inbox token is issued for one answer and sent at once; short-lived keeps it harmless."""
_MAX_PARALLEL_QUERIES = 100
_HISTORY_TIMEOUT_SECONDS = 10.0
_FINISHED_HISTORIES_KEPT = 1000
"""Trails of finished calls kept in memory: a finished call's history never changes."""
"""Status queries in flight at once: all of a default page, so unreadable calls cost one timeout."""

REFUSAL_HTTP_STATUS = {
    RefusalReason.NOT_ALLOWED: 403,
    RefusalReason.STALE_REQUEST: 409,
    RefusalReason.NOT_WAITING: 409,
    RefusalReason.FINISHED: 409,
    RefusalReason.DUPLICATE_VOTER: 409,
    RefusalReason.NOT_VERIFIED: 403,
    RefusalReason.TOKEN_EXPIRED: 403,
}
"""HTTP status per :attr:`AnswerRejectedError.reason`; any other refusal is 422."""


class CallReader:
    """Reads calls through the facade on behalf of the pages and the API.

    Args:
        calls: The client facade.
        limit: At most this many waiting calls are listed.
        identity_secret: when set, every answer carries an identity token the inbox issues
            for the person it authenticated (``scope_tool.wire.identity``), so calls that require
            verified answerers take it; ``None``: answers carry the name only.
    """

    def __init__(
        self, calls: ToolCalls, *, limit: int, identity_secret: bytes | None = None
    ) -> None:
        self.calls = calls
        self._limit = limit
        self._identity_secret = identity_secret
        self._unreadable_until: dict[str, float] = {}
        self._finished: OrderedDict[str, CallHistory] = OrderedDict()

    async def history(self, call_id: str) -> CallHistory:
        """The call's audit trail (read from its event history; no worker needed).

        A finished call's trail is kept (it never changes), so the recently-finished list
        reads each one once.

        Raises:
            CallNotFoundError: no such call.
            ToolCallsError: the server refused; ``TimeoutError`` when it did not answer.
        """
        known = self._finished.get(call_id)
        if known is not None:
            self._finished.move_to_end(call_id)
            return known
        async with asyncio.timeout(_HISTORY_TIMEOUT_SECONDS):
            history = await self.calls.get(call_id).history()
        if history.ended_at is not None:
            self._finished[call_id] = history
            while len(self._finished) > _FINISHED_HISTORIES_KEPT:
                self._finished.popitem(last=False)
        return history

    async def finished(self, *, limit: int) -> list[FinishedCall]:
        """Calls that ended, most recently ended first.

        Listed from visibility (the newest calls, keeping those in a terminal phase), each
        with its trail when it can be read (``history`` is ``None`` otherwise; the row stays).
        """
        summaries = [
            summary
            for summary in await self.calls.list(limit=limit * 2)
            if summary.phase.is_terminal
        ][:limit]
        gate = asyncio.Semaphore(_MAX_PARALLEL_QUERIES)

        async def read(summary: CallSummary) -> FinishedCall:
            async with gate:
                try:
                    history: CallHistory | None = await self.history(summary.call_id)
                except (ToolCallsError, TimeoutError, ValueError):
                    history = None
            return FinishedCall(summary=summary, history=history)

        rows = list(await asyncio.gather(*(read(summary) for summary in summaries)))
        rows.sort(key=_ended_or_started, reverse=True)
        return rows

    async def answer(
        self, call_id: str, response: bytes, *, request_id: str | None, identity: str
    ) -> AnswerReceipt:
        """Answer as ``identity`` through the facade, with a fresh identity token if configured.

        ``response`` is JSON text: an :class:`AnswerText` the inbox made, or what a person wrote.
        """
        token = None
        if self._identity_secret is not None:
            token = issue_token(
                identity, secret=self._identity_secret, issuer="inbox", lifetime=_TOKEN_LIFETIME
            )
        return await self.calls.get(call_id).answer(
            response, request_id=request_id, answered_by=identity, identity_token=token
        )

    async def answer_batch(
        self, items: Sequence[BatchItem], response: bytes, *, identity: str
    ) -> BatchReceipt:
        """One answer to several calls as ``identity``, checked as one batch (see
        ``ToolCalls.answer_batch``), with a fresh identity token if configured."""
        token = None
        if self._identity_secret is not None:
            token = issue_token(
                identity, secret=self._identity_secret, issuer="inbox", lifetime=_TOKEN_LIFETIME
            )
        return await self.calls.answer_batch(
            items, response, answered_by=identity, identity_token=token
        )

    async def status(self, call_id: str) -> CallStatus:
        """One call's status; ``TimeoutError`` when nothing answers the query in time."""
        async with asyncio.timeout(_STATUS_TIMEOUT_SECONDS):
            return await self.calls.get(call_id).status()

    async def waiting(self) -> tuple[list[CallStatus], list[CallSummary]]:
        """Calls waiting now (oldest question first, as ``scope-tool pending`` lists them), and
        those whose status cannot be read."""
        summaries = await self.calls.list(phase=Phase.AWAITING_INPUT, limit=self._limit)
        gate = asyncio.Semaphore(_MAX_PARALLEL_QUERIES)
        now = time.monotonic()

        async def read(call_id: str) -> CallStatus | None:
            if self._unreadable_until.get(call_id, 0.0) > now:
                return None
            async with gate:
                try:
                    async with asyncio.timeout(_LIST_STATUS_TIMEOUT_SECONDS):
                        status = await self.calls.get(call_id).status()
                except (ToolCallsError, TimeoutError):
                    self._unreadable_until[call_id] = time.monotonic() + _UNREADABLE_RETRY_SECONDS
                    return None
            self._unreadable_until.pop(call_id, None)
            return status

        statuses = await asyncio.gather(*(read(summary.call_id) for summary in summaries))
        unreadable = [
            summary for summary, status in zip(summaries, statuses, strict=True) if status is None
        ]
        waiting = [status for status in statuses if status is not None and status.pending]
        waiting.sort(key=_asked_at)  # first asked, first shown: the one waiting longest on top
        live = {summary.call_id for summary in summaries}
        for call_id in [known for known in self._unreadable_until if known not in live]:
            del self._unreadable_until[call_id]
        return waiting, unreadable


@dataclass(frozen=True, slots=True, kw_only=True)
class FinishedCall:
    """One row of the recently-finished list: what visibility says, and the trail if read."""

    summary: CallSummary
    history: CallHistory | None = None

    @property
    def answered_by(self) -> tuple[str, ...]:
        """Who answered, in order (repeats left out)."""
        if self.history is None:
            return ()
        return tuple(
            answer.answered_by or "(not recorded)"
            for answer in self.history.answers
            if not answer.duplicate
        )


def _ended_or_started(row: FinishedCall) -> datetime:
    if row.history is not None and row.history.ended_at is not None:
        return row.history.ended_at
    return row.summary.started_at


def _asked_at(status: CallStatus) -> datetime:
    return (
        status.pending.asked_at if status.pending is not None else datetime.min.replace(tzinfo=UTC)
    )


_NO_LONGER_PENDING: Final = frozenset(
    {RefusalReason.STALE_REQUEST, RefusalReason.NOT_WAITING, RefusalReason.FINISHED}
)


def refusal_text(error: AnswerRejectedError) -> str:
    """A refusal as a person reads it next to the form, from its reason and detail fields."""
    detail = error.detail
    if error.reason in _NO_LONGER_PENDING:
        return f"this question is no longer pending ({error.reason}): {error.message}"
    if error.reason is RefusalReason.NOT_ALLOWED:
        allowed = ", ".join(detail.allowed_answerers)
        return f"you are not allowed to answer this call (allowed: {allowed})"
    if error.reason is RefusalReason.SCHEMA and detail.schema_path is not None:
        # The page already shows the schema; the person gets the violation itself.
        where = detail.schema_path or "(root)"
        return f"the call refused this answer (schema): at {where}: {detail.problem}"
    if error.reason is RefusalReason.INVALID_JSON and detail.suggestion is not None:
        return (
            f"the call refused this answer (invalid_json): {detail.problem};"
            f" to answer the text, send {detail.suggestion}"
        )
    return f"the call refused this answer ({error.reason}): {error.message}"


def json_text(value: object) -> AnswerText:
    """Compact JSON text of a value as the answer's text: made here, so the handle sends it as
    it is (the workflow still decides it)."""
    return AnswerText(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
