"""The votes on a call's pending question under a quorum policy (:class:`Ballot`), and the
withdrawal of a pending question (:func:`withdrawal_refusal`).

The workflow opens one ballot per question of a call whose ``ToolCallInput.policy`` asks for a
quorum, casts every accepted answer into it as a vote, and takes the question as answered once
the policy's tally (``scope_tool.ApprovalPolicy.tally``, a pure function) decides. The history
reader runs the same class over the same events, so the audit trail shows what the workflow
decided. Deterministic and free of Temporal: state in, state out.

An edit (``{"decision": "edit", ...}``) restarts the vote on the new arguments: the votes cast so
far are kept but superseded, and the question's request id gains a suffix (``/r2`` becomes
``/r2e1``), so a vote sent for the earlier arguments (bound to the old id) is refused
``stale_request``: every approver approves the arguments they saw.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Literal

from scope_tool import ApprovalPolicy, InputRequest
from scope_tool._policy import Tally, vote_kind
from scope_tool._rules import RuleVerdict, evaluate
from scope_tool.errors import InvalidPolicyError
from scope_tool.wire import DelegateInput, ReevaluateInput, ToolCallInput, WithdrawInput
from scope_tool.wire._approval_prompt import read_approval
from scope_tool.wire._status import AnswerRecord, DeadlineStep, PendingInput, Phase, VoteRecord
from scope_tool.wire.errors import RefusalReason

__all__ = [
    "MAX_WITHDRAW_REASON",
    "RULE_ANSWERER_PREFIX",
    "Ballot",
    "Cast",
    "DeadlineClock",
    "DeadlineFired",
    "answerers_now",
    "delegated_answerers",
    "escalated_answerers",
    "expiry_answer",
    "next_occasion",
    "reevaluation",
    "rule_answer",
    "rule_decision",
    "rule_verdict_text",
    "tool_policy_refusal",
    "withdrawal_refusal",
    "withdrawn_message",
]


class Cast:
    """What one vote did: the tally after it, and the decisive vote once decided."""

    __slots__ = ("decisive", "tally")

    def __init__(self, tally: Tally, decisive: VoteRecord | None) -> None:
        self.tally = tally
        self.decisive = decisive


class Ballot:
    """The votes on one question (see the module docstring)."""

    __slots__ = ("_base", "_edits", "_policy", "_votes", "request_id")

    def __init__(self, policy: ApprovalPolicy, request_id: str) -> None:
        self._policy = policy
        self._base = request_id
        self._edits = 0
        self._votes: list[VoteRecord] = []
        self.request_id = request_id
        """The id votes must carry now (the question's, with ``e{n}`` after the n-th edit)."""

    @classmethod
    def open(cls, policy: ApprovalPolicy | None, request_id: str) -> Ballot | None:
        """A ballot for the question ``request_id``, or ``None`` when one answer decides it."""
        if policy is None or not policy.is_quorum:
            return None
        return cls(policy, request_id)

    @property
    def votes(self) -> tuple[VoteRecord, ...]:
        """Every vote on the question, superseded ones included, in the order cast."""
        return tuple(self._votes)

    def voters(self) -> frozenset[str]:
        """Who has voted on the current arguments (they may not vote again)."""
        return frozenset(vote.voter for vote in self._votes if not vote.superseded)

    def tally(self) -> Tally:
        """Where the vote on the current arguments stands."""
        current = [vote for vote in self._votes if not vote.superseded]
        return self._policy.tally([(vote.voter, vote.response) for vote in current])

    def cast(self, *, voter: str, response: bytes, verified: bool, at: datetime) -> Cast:
        """Record one accepted vote and return the tally (decided or not)."""
        kind = vote_kind(response)
        if kind == "edit":
            # The editor's vote opens the ballot on the new arguments.
            self._votes = [replace(each, superseded=True) for each in self._votes]
            self._edits += 1
            self.request_id = f"{self._base}e{self._edits}"
        self._votes.append(
            VoteRecord(
                request_id=self.request_id,
                voter=voter,
                kind=kind,
                response=response,
                voted_at=at,
                verified=verified,
            )
        )
        tally = self.tally()
        if tally.decided is None:
            return Cast(tally, None)
        current = [each for each in self._votes if not each.superseded]
        return Cast(tally, current[tally.decided])


def answerers_now(call: ToolCallInput) -> tuple[str, ...]:
    """Who may answer the call's pending question now, by name (empty: anyone).

    Under a quorum the policy's voters (when it names them) are who votes; otherwise the
    call's ``allowed_answerers`` as they stand now (an escalation or a delegation changes them).
    The ``ScopeToolAssignee`` attribute and the Web UI's details show this.
    """
    policy = call.policy
    if policy is not None and policy.is_quorum and policy.eligible:
        return policy.eligible
    return tuple(call.allowed_answerers)


def escalated_answerers(call: ToolCallInput, policy: ApprovalPolicy) -> tuple[str, ...]:
    """Who may answer after an escalation: ``escalate_to`` beside the first answerers, or
    instead of them (``escalation_replaces``); empty: anyone (no first answerers, not replaced)."""
    first = tuple(call.allowed_answerers)
    if policy.escalation_replaces or not first:
        # With no allowed_answerers anyone could answer, and still can unless replaced.
        return policy.escalate_to if policy.escalation_replaces else ()
    return first + tuple(each for each in policy.escalate_to if each not in first)


def delegated_answerers(call: ToolCallInput, delegation: DelegateInput) -> tuple[str, ...]:
    """Who may answer after ``delegation``: the delegating assignee leaves, ``to`` join."""
    kept = tuple(each for each in call.allowed_answerers if each != delegation.delegated_by)
    return kept + tuple(each for each in delegation.to if each not in kept)


def next_occasion(steps: Sequence[DeadlineStep], request_id: str) -> int:
    """The question's next notification occasion (1 for its first after asking): each
    reminder, escalation and delegation is one; an extension sends nothing."""
    return 1 + sum(
        1 for each in steps if each.request_id == request_id and each.kind != "extension"
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class DeadlineFired:
    """The step a question's timer brought: a reminder (``before_seconds`` before
    ``deadline``) or the escalation (the question's new ``deadline``)."""

    kind: Literal["reminder", "escalation"]
    deadline: datetime
    before_seconds: float | None = None


class DeadlineClock:
    """The deadline steps of one waiting question under a policy with deadline steps:
    which comes next and what a timer that fired brings.

    The workflow waits for each step's moment with one timer; the history reader runs the same
    clock over the timers the history recorded, so both take the same steps. Pure: the moments
    come in as arguments.
    """

    __slots__ = ("_reminders", "deadline", "escalated", "extended", "policy")

    def __init__(self, policy: ApprovalPolicy, deadline: datetime) -> None:
        self.policy = policy
        self.deadline = deadline
        """The question's deadline now (moved by extensions and by the escalation)."""
        self.extended = 0.0
        """Seconds added by extensions so far (at most the policy's ``max_extension``)."""
        self.escalated = False
        self._reminders = list(policy.reminders)  # not sent yet, earliest first

    def next_step(self, now: datetime) -> datetime:
        """The moment of the next step (:meth:`upcoming` says which).

        A reminder whose moment has already passed (a workflow task run late) is dropped, never
        sent late; an extension moves the ones not sent yet later.
        """
        deadline = self.deadline
        self._reminders = [o for o in self._reminders if deadline - timedelta(seconds=o) > now]
        return self.upcoming()[1]

    def upcoming(self) -> tuple[Literal["reminder", "escalation", "expiry"], datetime]:
        """The next step as :meth:`next_step` last found it (nothing dropped): its kind and
        moment (the Web UI's details show it)."""
        if self._reminders:
            return "reminder", self.deadline - timedelta(seconds=self._reminders[0])
        if not self.escalated and self.policy.escalate_to:
            return "escalation", self.deadline
        return "expiry", self.deadline

    def fire(self, now: datetime) -> DeadlineFired | None:
        """The next step's timer fired at ``now``: the step it brings, or ``None`` (the last
        deadline passed unanswered: the question expires)."""
        if self._reminders:
            return DeadlineFired(
                kind="reminder", deadline=self.deadline, before_seconds=self._reminders.pop(0)
            )
        policy = self.policy
        if self.escalated or not policy.escalate_to:
            return None
        assert policy.escalation_timeout is not None  # the policy checks they go together
        self.escalated = True
        self.deadline = now + timedelta(seconds=policy.escalation_timeout)
        return DeadlineFired(kind="escalation", deadline=self.deadline)

    def extend(self, seconds: float) -> datetime:
        """Move the deadline ``seconds`` later (the caller checked the policy allows it)."""
        self.extended += seconds
        self.deadline = self.deadline + timedelta(seconds=seconds)
        return self.deadline


MAX_WITHDRAW_REASON = 1000
"""Longest withdrawal reason (characters): it is shown on every surface and to the model."""


def withdrawal_refusal(
    call_id: str, phase: Phase, pending_request_id: str | None, withdrawal: WithdrawInput
) -> tuple[RefusalReason, str] | None:
    """Why a withdrawal of the pending question is refused, or ``None`` (it is taken).

    Only a question can be withdrawn (a running round is cancelled instead), only the pending
    one (a ``request_id`` naming another is stale), and only with a reason.
    """
    reason = withdrawal.reason
    if not isinstance(reason, str) or not reason.strip() or len(reason) > MAX_WITHDRAW_REASON:
        return (
            RefusalReason.INVALID_JSON,
            f"a withdrawal needs a reason of 1 to {MAX_WITHDRAW_REASON} characters",
        )
    if phase.is_terminal:
        return (
            RefusalReason.FINISHED,
            f"call {call_id!r} has finished ({phase.value}); there is nothing to withdraw",
        )
    if pending_request_id is None:
        return (
            RefusalReason.NOT_WAITING,
            f"call {call_id!r} is not waiting for input (phase {phase.value}); cancel it instead",
        )
    if withdrawal.request_id is not None and withdrawal.request_id != pending_request_id:
        return (
            RefusalReason.STALE_REQUEST,
            f"request {withdrawal.request_id!r} is not the pending one; call {call_id!r} now"
            f" waits on {pending_request_id!r}",
        )
    return None


def withdrawn_message(withdrawal: WithdrawInput, request_id: str) -> str:
    """The outcome's message of a withdrawn call (operators, status, history)."""
    who = withdrawal.withdrawn_by or "the caller"
    return f"{request_id} was withdrawn by {who}: {withdrawal.reason}"


RULE_ANSWERER_PREFIX = "rule:"
"""``answered_by`` of an answer a rule gave: ``rule:NAME``."""


def rule_decision(call: ToolCallInput, pending: PendingInput) -> RuleVerdict | None:
    """The policy's rules on an approval question (``None``: no rules, or not an approval)."""
    policy = call.policy
    if policy is None or not policy.rules:
        return None
    if read_approval(pending.prompt, pending.response_schema) is None:
        return None
    return policy.evaluate(call.tool, call.arguments, call.principal)


def rule_answer(call: ToolCallInput, verdict: RuleVerdict | None) -> bytes | None:
    """The approval answer a rule gives (``None``: a person decides; always in shadow mode)."""
    if verdict is None or verdict.rule is None or call.policy is None or call.policy.shadow:
        return None
    if verdict.effect == "allow":
        return b'{"decision":"approve"}'
    if verdict.effect == "deny":
        return json.dumps(
            {"decision": "deny", "reason": verdict.reason}, separators=(",", ":")
        ).encode()
    return None


def rule_verdict_text(call: ToolCallInput, verdict: RuleVerdict | None) -> str:
    """The rules' verdict as status and the answer record show it ("" without rules)."""
    if verdict is None:
        return ""
    shadow = call.policy is not None and call.policy.shadow
    return f"shadow: {verdict.reason}" if shadow else verdict.reason


def reevaluation(
    call: ToolCallInput,
    phase: Phase,
    pending: PendingInput | None,
    request: ReevaluateInput,
    *,
    at: datetime,
    round_number: int,
) -> tuple[str, AnswerRecord | None] | tuple[RefusalReason, str]:
    """An operator's re-evaluation of the pending approval question with ``request.rules``:
    ``(verdict text, the answer a rule gives or None)``, or ``(reason, message)`` refused.

    A rule that allows or denies decides the question, recorded with its reason and the
    operator; ``ask`` (or no match) leaves it waiting with the new verdict shown.
    """
    if phase.is_terminal:
        return RefusalReason.FINISHED, f"call {call.call_id!r} has finished ({phase.value})"
    if pending is None:
        return RefusalReason.NOT_WAITING, f"call {call.call_id!r} is not waiting for input"
    if read_approval(pending.prompt, pending.response_schema) is None:
        return (
            RefusalReason.NOT_WAITING,
            f"call {call.call_id!r} waits on a question that is not an approval; rules decide"
            " approvals only",
        )
    verdict = evaluate(request.rules, call.tool, call.arguments, call.principal)
    text = f"{verdict.reason} (re-evaluated by {request.by or 'an operator'})"
    if verdict.rule is None or verdict.effect == "ask":
        return text, None
    answer = (
        b'{"decision":"approve"}'
        if verdict.effect == "allow"
        else json.dumps({"decision": "deny", "reason": text}, separators=(",", ":")).encode()
    )
    return text, AnswerRecord(
        request_id=pending.request_id,
        round=round_number,
        response=answer,
        answered_by=f"{RULE_ANSWERER_PREFIX}{verdict.rule.name}",
        answered_at=at,
        reason=text,
    )


EXPIRY_ANSWERER = "policy:expiry"
"""``answered_by`` of the answer a policy's ``expiry_answer`` gives at the deadline."""


def expiry_answer(
    call: ToolCallInput,
    pending: PendingInput,
    request: InputRequest,
    *,
    at: datetime,
    round_number: int,
) -> AnswerRecord | str | None:
    """At the deadline: the policy's safe default answer, a problem (why it cannot be taken,
    so the call ends EXPIRED saying so), or ``None`` (no default: EXPIRED)."""
    policy = call.policy
    if policy is None or policy.expiry_answer is None:
        return None
    text = policy.expiry_answer.encode("utf-8")
    checked = request.check_response(text)
    if not checked.accepted:
        return (
            f"no answer to {pending.request_id} before the deadline; the policy's expiry_answer"
            f" does not satisfy the question's schema ({checked.detail})"
        )
    return AnswerRecord(
        request_id=pending.request_id,
        round=round_number,
        response=text,
        answered_by=EXPIRY_ANSWERER,
        answered_at=at,
        reason="no answer before the deadline: the policy's expiry_answer was taken",
    )


def tool_policy_refusal(call: ToolCallInput, policy: ApprovalPolicy) -> str | None:
    """Why the tool's own ``policy`` cannot decide a question of ``call`` (started without a
    policy), or ``None``: the checks ``ToolCalls.start`` makes of a call's policy, made when
    the question is asked, since only then is the tool's policy known (a worker cannot know at
    its start which calls will come without an answer deadline). Pure: a replay agrees."""
    where = f"tool {call.tool!r} carries an approval policy"
    timeout = call.answer_timeout_seconds
    try:
        policy.check_deadline(timedelta(seconds=timeout) if timeout is not None else None)
    except InvalidPolicyError as error:
        if timeout is None:
            return (
                f"{where} with reminders, escalation or extensions (reminders, escalate_to,"
                " max_extension), which count from the call's answer deadline, and call"
                f" {call.call_id!r} has none: start the call with an answer deadline"
                " (answer_timeout=, `scope-tool call --answer-timeout`) or with a policy of its"
                " own; the question was not asked"
            )
        return (
            f"{where} the call's answer deadline cannot carry: {error}; the question was not asked"
        )
    answerers = call.allowed_answerers
    outside = [each for each in policy.eligible if each not in answerers] if answerers else []
    if outside:
        return (
            f"{where} naming voters call {call.call_id!r}'s allowed_answerers leave out:"
            f" {', '.join(outside)}; the question was not asked"
        )
    return None
