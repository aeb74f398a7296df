"""The values of a call's audit trail (:mod:`scope_tool.client.history` reads them from the
call's event history and re-exports them)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from scope_tool import ApprovalPolicy, Principal
from scope_tool.client._policy_trail import PolicyEvent
from scope_tool.wire._json_form import json_members
from scope_tool.wire._status import AnswerRecord, CallOutcome, DeadlineStep, principal_json

__all__ = ["AnswerVia", "CallHistory", "HistoryAnswer", "HistoryQuestion", "HistoryRefusal"]


class AnswerVia(StrEnum):
    """How an answer reached the call."""

    UPDATE = "update"
    SIGNAL = "signal"
    RULE = "rule"
    """Decided by a rule of the call's policy when the question was asked (no person)."""
    POLICY = "policy"
    """The policy's ``expiry_answer``, taken when the question's deadline passed."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryQuestion:
    """A question the call committed and waited on."""

    request_id: str
    round: int
    prompt: bytes
    response_schema: bytes
    asked_at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryAnswer(AnswerRecord):
    """An answer the call accepted, and how it came (``duplicate``: an exact repeat, taken
    without effect).

    Under a quorum policy each vote is one entry: ``decided`` is false for a vote that left
    the question waiting, and the vote that decided it lists the agreeing ``voters``.
    """

    client_identity: str
    via: AnswerVia
    duplicate: bool = False
    decided: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryRefusal:
    """An answer sent by signal that the call refused; it kept waiting."""

    request_id: str | None
    reason: str
    message: str
    response: bytes
    answered_by: str | None
    client_identity: str
    refused_at: datetime
    via: AnswerVia = AnswerVia.SIGNAL


@dataclass(frozen=True, slots=True, kw_only=True)
class CallHistory:
    """The audit trail of one call (see the module docstring for what it can show).

    ``execution_status`` is Temporal's (``RUNNING``, ``COMPLETED``, ``TERMINATED``...);
    ``outcome`` is the call's own result, present once the workflow returned one.
    """

    call_id: str
    tool: str
    arguments: bytes
    started_at: datetime
    started_by: str
    allowed_answerers: tuple[str, ...] = ()
    principal: Principal | None = None
    require_verified: bool = False
    policy: ApprovalPolicy | None = None
    questions: tuple[HistoryQuestion, ...] = ()
    answers: tuple[HistoryAnswer, ...] = ()
    refusals: tuple[HistoryRefusal, ...] = ()
    policy_events: tuple[PolicyEvent, ...] = ()
    """The policy's steps in the order they happened: votes, rule verdicts, reminders,
    extensions, escalations, delegations, a withdrawal (see :class:`PolicyEvent`)."""
    deadline_steps: tuple[DeadlineStep, ...] = ()
    """The deadline steps, as ``status().deadline_steps`` lists them."""
    rounds: int = 0
    execution_status: str = "RUNNING"
    outcome: CallOutcome | None = None
    ended_at: datetime | None = None

    def to_json(self) -> dict[str, Any]:
        """One JSON-compatible shape (raw JSON fields parsed, times ISO 8601 UTC).

        The fields in order, by :func:`~scope_tool.wire._json_form.json_members`'s rules, but for
        times (to the microsecond, as the events record them) and ``outcome`` (without
        ``evidence``, and without the status JSON's ``text`` and ``details``).
        """
        outcome = self.outcome
        return json_members(
            self,
            started_at=_iso(self.started_at),
            principal=principal_json(self.principal),
            policy=self.policy.to_json_dict() if self.policy is not None else None,
            questions=[json_members(each, asked_at=_iso(each.asked_at)) for each in self.questions],
            answers=[
                # A history always has the text: nothing is left out of it.
                json_members(
                    each,
                    leave_out=("omitted_response_bytes",),
                    answered_at=_iso(each.answered_at),
                )
                for each in self.answers
            ],
            refusals=[
                json_members(each, refused_at=_iso(each.refused_at)) for each in self.refusals
            ],
            policy_events=[
                json_members(
                    each, at=_iso(each.at), deadline=_iso(each.deadline) if each.deadline else None
                )
                for each in self.policy_events
            ],
            deadline_steps=[
                json_members(
                    each, at=_iso(each.at), deadline=_iso(each.deadline) if each.deadline else None
                )
                for each in self.deadline_steps
            ],
            outcome=None
            if outcome is None
            else json_members(
                outcome, output=json.loads(outcome.output.to_json()), leave_out=("evidence",)
            ),
            ended_at=_iso(self.ended_at) if self.ended_at else None,
        )


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
