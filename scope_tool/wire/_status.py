"""What a caller sees of one call: its phase, the pending question, the answers, the outcome.

These values travel as query results and as the workflow result, so every field is plain data
(raw JSON kept as ``bytes``, sequences as tuples) and every field added later gets a default, so
histories recorded by an older version still decode.

Each value owns its JSON (``to_json_dict``): the one documented shape of ``--json``, the inbox
API and webhooks. It is the value's fields in order, by the rules of
:func:`~scope_tool.wire._json_form.json_members`: raw JSON fields become JSON values, times ISO 8601
UTC with ``Z`` and milliseconds, enums their string values; each method says what it adds,
converts otherwise or leaves out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import Any, Final, Literal

from scope_tool import ApprovalPolicy, FailureKind, Output, Principal
from scope_tool.wire._json_form import iso_time, json_members
from scope_tool.wire._prompt import json_value
from scope_tool.wire.errors import RefusalDetail

__all__ = [
    "STATUS_ANSWER_BYTES",
    "TERMINAL_PHASES",
    "AnswerRecord",
    "CallOutcome",
    "CallStatus",
    "CallSummary",
    "DeadlineStep",
    "PendingInput",
    "Phase",
    "RefusedAnswer",
    "RoundRoute",
    "VoteRecord",
    "WorkerWait",
    "principal_json",
    "shown_answers",
]


def principal_json(principal: Principal | None) -> dict[str, Any] | None:
    """A principal as ``{user, tenant, roles}`` (the shape of ``principal`` in status JSON)."""
    if principal is None:
        return None
    return {"user": principal.user, "tenant": principal.tenant, "roles": list(principal.roles)}


class Phase(StrEnum):
    """Where a call is. The value is also the ``ScopeToolPhase`` search attribute."""

    RUNNING = "RUNNING"
    AWAITING_INPUT = "AWAITING_INPUT"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    REJECTED = "REJECTED"
    INVALID = "INVALID"
    EXPIRED = "EXPIRED"
    CANCELLED = "CANCELLED"
    ERRORED = "ERRORED"
    WITHDRAWN = "WITHDRAWN"
    """The caller or an operator withdrew the pending question (not a denial)."""

    @property
    def is_terminal(self) -> bool:
        """True once the call has ended; a terminal phase never changes again."""
        return self in TERMINAL_PHASES


TERMINAL_PHASES = frozenset(
    {
        Phase.COMPLETED,
        Phase.FAILED,
        Phase.REJECTED,
        Phase.INVALID,
        Phase.EXPIRED,
        Phase.CANCELLED,
        Phase.ERRORED,
        Phase.WITHDRAWN,
    }
)


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingInput:
    """The committed question a call waits on.

    ``request_id`` binds an answer to this one question of this one call: it is
    ``"{call_id}/r{round}"``, so an answer meant for an earlier round or another call is refused.
    """

    request_id: str
    prompt: bytes
    response_schema: bytes
    asked_at: datetime
    deadline: datetime | None = None

    def to_json_dict(self) -> dict[str, Any]:
        """``{request_id, prompt, response_schema, asked_at, deadline}`` as JSON values."""
        return json_members(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class AnswerRecord:
    """One accepted answer: who gave it, when, and the exact JSON text."""

    request_id: str
    round: int
    response: bytes
    answered_by: str | None = None
    answered_at: datetime
    # True when ``answered_by`` is the subject of an identity token the workflow verified.
    verified: bool = False
    omitted_response_bytes: int = 0
    """Set when a status snapshot leaves the text out (see :func:`shown_answers`): its size in
    bytes. ``response`` is then ``null``; the call's history has the text."""
    channel: str | None = None
    """Where the verified answer came from: its identity token's issuer (``inbox``, ``cli``,
    ``email``, ``slack``); ``None`` for an answer without a token."""

    voters: tuple[str, ...] = ()
    """On a quorum call: the voters whose agreeing votes decided (``answered_by`` is the last
    of them, or the editor whose arguments they approved; a deny is decided by its voter)."""
    reason: str = ""
    """Why the answer was given without a person: ``"auto-approved by rule small-refunds:
    amount <= 100"`` (``answered_by`` is then ``rule:NAME``)."""
    rule_verdict: str = ""
    """What the policy's rules said of this question when a person answered it (in shadow
    mode, what they would have decided), e.g. ``"shadow: auto-approved by rule ..."``."""

    def to_json_dict(self) -> dict[str, Any]:
        """``{request_id, round, response, answered_by, answered_at, verified,
        omitted_response_bytes, channel, voters, reason, rule_verdict}``."""
        return json_members(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class VoteRecord:
    """One vote on the pending question of a call with a quorum policy.

    ``voter`` is the verified identity when the call requires one, else ``answered_by``;
    ``kind`` is ``approve``, ``deny``, ``edit`` (an approval answer's decision) or ``answer``.
    ``superseded`` marks a vote an edit set aside (the vote restarted on new arguments).
    """

    request_id: str
    voter: str
    kind: str
    response: bytes
    voted_at: datetime
    verified: bool = False
    superseded: bool = False

    def to_json_dict(self) -> dict[str, Any]:
        """``{request_id, voter, kind, response, voted_at, verified, superseded}``."""
        return json_members(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class DeadlineStep:
    """A step a waiting question's deadline took (a policy's ``reminders``, ``escalate_to``).

    ``kind`` is ``reminder`` (the question was sent again, ``before_seconds`` before its
    deadline), ``escalation`` (the deadline passed unanswered: ``assignees`` may answer now,
    until the new ``deadline``), ``extension`` (``by`` moved the ``deadline`` later; it sends
    nothing) or ``delegation`` (the assignee ``by`` handed the question to ``assignees``). ``occasion`` numbers the question's notifications after its first (the channels'
    announcement occasion; an extension keeps the last one).
    """

    kind: str
    request_id: str
    at: datetime
    occasion: int
    assignees: tuple[str, ...] = ()
    deadline: datetime | None = None
    before_seconds: float | None = None
    by: str | None = None

    def to_json_dict(self) -> dict[str, Any]:
        """``{kind, request_id, at, occasion, assignees, deadline, before_seconds, by}``."""
        return json_members(self)


STATUS_ANSWER_BYTES: Final = 256 * 1024
"""How many bytes of answer text a status snapshot carries at most, newest answers first.

A snapshot travels as one payload (query result, ``first_stop`` update result), which Temporal
refuses past 2 MiB ("Blob data size exceeds limit"): two answers near ``MAX_INPUT_BYTES`` made a
call's status unreadable."""


def shown_answers(answers: Iterable[AnswerRecord]) -> tuple[AnswerRecord, ...]:
    """``answers`` as a status snapshot shows them: the texts of the newest up to
    :data:`STATUS_ANSWER_BYTES` in all; each other one has ``response`` ``null`` and its size in
    ``omitted_response_bytes``."""
    budget = STATUS_ANSWER_BYTES
    shown: list[AnswerRecord] = []
    for answer in reversed(tuple(answers)):
        size = len(answer.response)
        if size <= budget:
            budget -= size
            shown.append(answer)
        else:
            shown.append(replace(answer, response=b"null", omitted_response_bytes=size))
    return tuple(reversed(shown))


@dataclass(frozen=True, slots=True, kw_only=True)
class RefusedAnswer:
    """An answer sent by signal that failed the checks; the call kept waiting.

    ``reason`` is a :class:`~scope_tool.client.RefusalReason` value; ``detail`` its facts as fields
    (``None`` in snapshots recorded before details existed).
    """

    request_id: str | None
    reason: str
    message: str
    answered_by: str | None = None
    detail: RefusalDetail | None = None

    def to_json_dict(self) -> dict[str, Any]:
        """``{request_id, reason, message, answered_by, detail}``."""
        return json_members(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class CallOutcome:
    """The one result of a finished call.

    ``output`` is what the model may see. ``message`` is a diagnostic for operators (the
    refusal text for INVALID, the error for ERRORED); ``evidence`` is what a failing tool
    observed (``CallError.evidence``), kept apart from the model-visible output.
    """

    phase: Phase
    output: Output = field(default_factory=Output)
    failure_kind: FailureKind | None = None
    message: str = ""
    rounds: int = 0
    evidence: Output | None = None

    def to_json_dict(self) -> dict[str, Any]:
        """``{phase, output, failure_kind, message, rounds, evidence, text, details}``.

        ``output`` is the whole model-visible output; ``text`` its text blocks joined (or its
        details as JSON text when it has no text); ``details`` its details as a JSON value.
        """
        output = json_value(self.output.to_json())
        text = self.output.text()
        evidence = self.evidence
        return {
            **json_members(
                self,
                output=output,
                evidence=json_value(evidence.to_json()) if evidence is not None else None,
            ),
            "text": text if text is not None else json.dumps(output),
            "details": json_value(self.output.details) if self.output.details else None,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundRoute:
    """Where the round in flight was sent: the task queue, and the contract it must run on.

    ``contract_digest`` is ``None`` for round 1 (any worker serving the tool takes it).
    """

    task_queue: str
    round: int
    contract_digest: str | None = None
    scheduled_at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundProgress:
    """What the tool of the round in flight last reported (``scope_tool._round``).

    Filled in by :meth:`ToolCallHandle.status` from the round's last heartbeat (the workflow
    does not see heartbeats while a round runs): an upstream MCP server's progress
    notifications arrive here through the gateway, with the idempotency key of the call.
    """

    idempotency_key: str | None = None
    progress: float | None = None
    total: float | None = None
    message: str | None = None

    def to_json_dict(self) -> dict[str, Any]:
        """``{idempotency_key, progress, total, message}``."""
        return json_members(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerWait:
    """Why a running call is stuck: its round was scheduled and no worker has taken it.

    Filled in by :meth:`ToolCallHandle.status` (not by the workflow, which cannot see pollers)
    when the round has waited a few seconds; ``last_poll_at`` is when a worker last polled the
    round's queue (``None``: none in the server's poller history, about five minutes).
    """

    tool: str
    contract_digest: str | None
    task_queue: str
    waiting_since: datetime
    last_poll_at: datetime | None = None

    @property
    def message(self) -> str:
        """One line for people: which worker the call waits for."""
        contract = (
            f", contract {self.contract_digest[:12]}" if self.contract_digest is not None else ""
        )
        polled = (
            f"no worker has polled task queue {self.task_queue!r} since"
            f" {iso_time(self.last_poll_at)}"
            if self.last_poll_at is not None
            else f"no worker polls task queue {self.task_queue!r}"
        )
        return f"waiting for a worker with tool {self.tool}{contract} ({polled})"

    def to_json_dict(self) -> dict[str, Any]:
        """As plain JSON, with :attr:`message` for people."""
        return {"message": self.message, **json_members(self)}


@dataclass(frozen=True, slots=True, kw_only=True)
class CallStatus:
    """A snapshot of one call, answered by the ``status`` query."""

    call_id: str
    tool: str
    phase: Phase
    round: int
    pending: PendingInput | None = None
    answers: tuple[AnswerRecord, ...] = ()
    outcome: CallOutcome | None = None
    refused: tuple[RefusedAnswer, ...] = ()
    # Refused answers no longer in ``refused`` (only the newest are kept).
    refused_dropped: int = 0
    notify_errors: tuple[str, ...] = ()
    # Who may answer (the ``answered_by`` values the call accepts); empty means anyone.
    allowed_answerers: tuple[str, ...] = ()
    # Who the agent acts for (given to the tool's Authorizer), or None.
    principal: Principal | None = None
    # Whether answers must carry a verified identity token.
    require_verified: bool = False
    # The round in flight and its queue (None while waiting for input or once finished).
    route: RoundRoute | None = None
    # Set by the facade when that round has waited a few seconds for a worker.
    waiting_for_worker: WorkerWait | None = None
    # How the pending (else the last) question is decided (None: by the first accepted answer).
    policy: ApprovalPolicy | None = None
    # The votes on the pending question (a quorum policy), superseded ones included.
    votes: tuple[VoteRecord, ...] = ()
    # Where the vote on the pending question stands ("" without a quorum or a question).
    tally: str = ""
    # What the policy's rules said of the pending question ("" without rules).
    rule_verdict: str = ""
    progress: RoundProgress | None = None
    """Filled in by the client: the running round's last report (None: nothing reported)."""
    # The reminders sent and escalations taken, oldest first (a policy with deadline steps).
    deadline_steps: tuple[DeadlineStep, ...] = ()
    policy_source: Literal["call", "tool"] | None = None
    """Whose ``policy`` applies: ``"call"`` (started with it, ``ToolCalls.start(policy=...)``),
    ``"tool"`` (the tool's own, ``require_approval(..., policy=...)``, for a call started
    without one); ``None`` with no policy."""

    def to_json_dict(self) -> dict[str, Any]:
        """The snapshot as plain JSON, each member in its own value's shape.

        ``route`` is the workflow's own bookkeeping, not part of the shape
        (``waiting_for_worker`` says what a caller needs of it); ``policy`` is
        :meth:`~scope_tool.ApprovalPolicy.to_json_dict`'s shape.
        """
        return json_members(
            self,
            principal=principal_json(self.principal),
            policy=self.policy.to_json_dict() if self.policy is not None else None,
            leave_out=("route",),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class CallSummary:
    """One row of :meth:`ToolCalls.list`, read from the search attributes (no query)."""

    call_id: str
    tool: str
    phase: Phase
    started_at: datetime

    def to_json_dict(self) -> dict[str, Any]:
        """``{call_id, tool, phase, started_at}``."""
        return json_members(self)
