"""A call's audit trail as the rows of its page: started, asked, answered, refused, ended.

The trail is :meth:`scope_tool.client.ToolCallHandle.history`, read from the call's Temporal event
history, so it is the same record ``scope-tool history`` prints and it is there for finished
calls with no worker running. This module only orders and words it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from scope_tool.client import read_approval, read_prompt
from scope_tool.client.history import CallHistory, HistoryAnswer, HistoryRefusal
from scope_tool.inbox.display import DisplayField, display_fields

__all__ = ["TrailEntry", "trail_entries"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TrailEntry:
    """One row of the trail.

    Attributes:
        at: When it happened (the server's event time).
        event: ``started``, ``asked``, ``answered``, ``refused`` or ``ended``.
        summary: One line a person reads.
        who: Who did it: the answerer's name, or the Temporal client identity that started
            the call or sent the answer ("" when not recorded).
        fields: The value involved (arguments, answer), member by member.
    """

    at: datetime
    event: str
    summary: str
    who: str = ""
    fields: tuple[DisplayField, ...] = ()


def trail_entries(history: CallHistory) -> tuple[TrailEntry, ...]:
    """Every recorded step of the call, oldest first."""
    entries = [
        TrailEntry(
            at=history.started_at,
            event="started",
            summary=f"call of {history.tool} started",
            who=history.started_by,
            fields=display_fields(history.arguments),
        )
    ]
    for question in history.questions:
        approval = read_approval(question.prompt, question.response_schema)
        asked = approval.question if approval else read_prompt(question.prompt).one_line()
        entries.append(
            TrailEntry(
                at=question.asked_at,
                event="asked",
                summary=f"round {question.round} asked: {_short(asked)}",
            )
        )
    for answer in history.answers:
        by = answer.answered_by or "(not recorded)"
        note = " (a repeat, taken without effect)" if answer.duplicate else ""
        summary = f"round {answer.round} answered by {by} via {answer.via.value}{note}"
        entries.append(_sent("answered", answer.answered_at, summary, answer))
    for refusal in history.refusals:
        summary = f"answer refused ({refusal.reason}): {_short(refusal.message)}"
        entries.append(_sent("refused", refusal.refused_at, summary, refusal))
    if history.ended_at is not None:
        outcome = history.outcome
        summary = (
            f"ended {outcome.phase.value} after {outcome.rounds} round(s)"
            if outcome is not None
            else f"ended without an outcome ({history.execution_status})"
        )
        entries.append(TrailEntry(at=history.ended_at, event="ended", summary=summary))
    entries.sort(key=lambda entry: entry.at)
    return tuple(entries)


def _sent(
    event: str, at: datetime, summary: str, sent: HistoryAnswer | HistoryRefusal
) -> TrailEntry:
    """An answer, taken or refused: who sent it and the fields it held."""
    return TrailEntry(
        at=at,
        event=event,
        summary=summary,
        who=_who(sent.answered_by, sent.client_identity),
        fields=display_fields(sent.response),
    )


def _who(claimed: str | None, client_identity: str) -> str:
    if claimed and client_identity:
        return f"{claimed} (from {client_identity})"
    return claimed or client_identity


def _short(text: str, limit: int = 160) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
