"""The policy's part of a call's audit trail: each vote, rule verdict, deadline step and
withdrawal, in order, read from the workflow's history (see :mod:`scope_tool.client.history`).

Nothing here is recorded for the reader's sake: the steps come from what the workflow already
writes (its input, its timers, the accepted updates with their results), decided by the same
code the workflow runs (``scope_tool.workflows._policy``: :class:`DeadlineClock` for which step
a timer brought, who may answer after an escalation or a delegation), so the trail shows what
the workflow did.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum

from scope_tool.wire import DelegateInput, ExtendReceipt, ToolCallInput, WithdrawInput
from scope_tool.wire._status import DeadlineStep
from scope_tool.workflows._policy import (
    DeadlineClock,
    delegated_answerers,
    escalated_answerers,
    next_occasion,
)

__all__ = ["PolicyEvent", "PolicyEventKind", "PolicyTrail"]


class PolicyEventKind(StrEnum):
    """What a :class:`PolicyEvent` records."""

    VOTE = "vote"
    """A voter's accepted vote under a quorum policy (``decided``: it decided the question)."""
    RULES = "rules"
    """The rules' verdict when the question was asked (``decided``: a rule answered it; in
    shadow mode never, the text starts ``shadow:``)."""
    REEVALUATION = "reevaluation"
    """An operator re-evaluated the question with changed rules (``by``)."""
    REMINDER = "reminder"
    EXTENSION = "extension"
    ESCALATION = "escalation"
    DELEGATION = "delegation"
    WITHDRAWAL = "withdrawal"


@dataclass(frozen=True, slots=True, kw_only=True)
class PolicyEvent:
    """One step of a question's policy, as the history recorded it.

    ``by`` is the voter, the person who extended, delegated or withdrew, the operator who
    re-evaluated, or ``rule:NAME`` for a rule that decided. ``decision`` is a vote's
    (``approve``, ``deny``, ``edit``, or ``answer`` for any other answer) or the rules'
    effect (``allow``, ``deny``, ``ask``). ``assignees`` are whom an escalation or a delegation
    gave the question to (a reminder: who may answer it then); ``deadline`` the question's
    deadline after the step. ``text`` is the tally after a vote, the rules' verdict, or the
    withdrawal's reason.
    """

    kind: PolicyEventKind
    request_id: str
    at: datetime
    by: str | None = None
    decision: str | None = None
    verified: bool = False
    channel: str | None = None
    decided: bool = False
    assignees: tuple[str, ...] = ()
    deadline: datetime | None = None
    before_seconds: float | None = None
    text: str = ""
    client_identity: str = ""


class PolicyTrail:
    """The policy events of one call, advanced by the history walk as the workflow went."""

    def __init__(self) -> None:
        self.events: list[PolicyEvent] = []
        self.steps: list[DeadlineStep] = []  # as the workflow's status lists them
        self._clock: DeadlineClock | None = None
        self._fired = False  # a step timer fired; its step is taken in the next task
        self._due: datetime | None = None  # that task started then; its step not taken yet

    def add(self, event: PolicyEvent) -> None:
        self.events.append(event)

    def asked(self, call: ToolCallInput, *, at: datetime) -> None:
        """A question started waiting at ``at``: its deadline steps start, as the workflow's."""
        policy = call.policy
        self._fired = False
        self._due = None
        self._clock = None
        if policy is None or not policy.has_deadline_steps or call.answer_timeout_seconds is None:
            return
        self._clock = DeadlineClock(policy, at + timedelta(seconds=call.answer_timeout_seconds))
        self._clock.next_step(at)

    def answered(self) -> None:
        """The question no longer waits: its timers take no step."""
        self._clock = None
        self._fired = False
        self._due = None

    def timer_fired(self) -> None:
        """A timer fired: the workflow takes the step in its next task."""
        if self._clock is not None:
            self._fired = True

    def task_started(self, *, at: datetime) -> None:
        """A workflow task started at ``at``: a timer that fired brings its step in it, unless
        an update of the same task answered the question or moved its deadline first (the
        workflow runs updates before timers; their events follow the task's completion), so
        the step is taken by :meth:`take_due` at the task's first other event."""
        if self._clock is not None and self._fired:
            self._fired = False
            self._due = at

    def task_failed(self) -> None:
        """The task failed or timed out: nothing it did counts, and its retry takes the step
        (at the retry's own time)."""
        if self._due is not None:
            self._due = None
            self._fired = True

    def take_due(self, call: ToolCallInput, request_id: str) -> ToolCallInput | None:
        """Take the step due in the current task, if any; returns the call as it stands after
        an escalation (who may answer), else ``None``."""
        clock, at = self._clock, self._due
        if clock is None or at is None:
            return None
        self._due = None
        fired = clock.fire(at)
        if fired is None:
            self._clock = None  # the last deadline passed: the question expires
            return None
        changed = None
        occasion = next_occasion(self.steps, request_id)
        if fired.kind == "reminder":
            step = DeadlineStep(
                kind="reminder",
                request_id=request_id,
                at=at,
                occasion=occasion,
                assignees=tuple(call.allowed_answerers),
                deadline=fired.deadline,
                before_seconds=fired.before_seconds,
            )
        else:
            changed = replace(call, allowed_answerers=escalated_answerers(call, clock.policy))
            step = DeadlineStep(
                kind="escalation",
                request_id=request_id,
                at=at,
                occasion=occasion,
                assignees=clock.policy.escalate_to,
                deadline=fired.deadline,
            )
        self._step(step)
        clock.next_step(at)
        return changed

    def extended(
        self,
        call: ToolCallInput,
        extended_by: str | None,
        receipt: ExtendReceipt,
        *,
        seconds: float,
        at: datetime,
        task_at: datetime,
        identity: str,
    ) -> None:
        """An accepted extension (its update completed at ``at``, handled in the task that
        started at ``task_at``)."""
        clock = self._clock
        self._due = None  # the wait woke for the new deadline: a timer of this task took no step
        if clock is not None:
            clock.extend(seconds)
            clock.next_step(task_at)
        request_id = receipt.request_id
        self._step(
            DeadlineStep(
                kind="extension",
                request_id=request_id,
                at=task_at,
                occasion=next_occasion(self.steps, request_id) - 1,
                assignees=tuple(call.allowed_answerers),
                deadline=receipt.deadline,
                by=extended_by,
            ),
            identity=identity,
            shown_at=at,
        )

    def delegated(
        self,
        call: ToolCallInput,
        delegation: DelegateInput,
        request_id: str,
        deadline: datetime | None,
        *,
        at: datetime,
        task_at: datetime,
        identity: str,
    ) -> ToolCallInput:
        """An accepted delegation: the call as it stands after it (who may answer)."""
        self._step(
            DeadlineStep(
                kind="delegation",
                request_id=request_id,
                at=task_at,
                occasion=next_occasion(self.steps, request_id),
                assignees=tuple(delegation.to),
                deadline=deadline,
                by=delegation.delegated_by,
            ),
            identity=identity,
            shown_at=at,
        )
        return replace(call, allowed_answerers=delegated_answerers(call, delegation))

    def withdrawn(
        self, withdrawal: WithdrawInput, request_id: str, *, at: datetime, identity: str
    ) -> None:
        self.answered()
        self.add(
            PolicyEvent(
                kind=PolicyEventKind.WITHDRAWAL,
                request_id=request_id,
                at=at,
                by=withdrawal.withdrawn_by,
                text=withdrawal.reason,
                client_identity=identity,
            )
        )

    @property
    def deadline(self) -> datetime | None:
        """The waiting question's deadline now (deadline steps only)."""
        return self._clock.deadline if self._clock is not None else None

    def _step(
        self, step: DeadlineStep, *, identity: str = "", shown_at: datetime | None = None
    ) -> None:
        self.steps.append(step)
        self.add(
            PolicyEvent(
                kind=PolicyEventKind(step.kind),
                request_id=step.request_id,
                at=shown_at or step.at,
                by=step.by,
                assignees=step.assignees,
                deadline=step.deadline,
                before_seconds=step.before_seconds,
                client_identity=identity,
            )
        )
