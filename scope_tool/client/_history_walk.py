"""The walk over a call's event history that rebuilds its audit trail (see
:mod:`scope_tool.client.history`): the call's state as the workflow saw it, one event at a time,
decided by the workflow's own code."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from temporalio.api.common.v1 import Payloads
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.converter import DataConverter

from scope_tool import ApprovalPolicy, InputRequest
from scope_tool._policy import vote_kind
from scope_tool.client._history_values import (
    AnswerVia,
    CallHistory,
    HistoryAnswer,
    HistoryQuestion,
    HistoryRefusal,
)
from scope_tool.client._policy_trail import PolicyEvent, PolicyEventKind, PolicyTrail
from scope_tool.wire import (
    ANSWER,
    DELEGATE_QUESTION,
    EXTEND_DEADLINE,
    REEVALUATE_RULES,
    ROUND_ACTIVITIES,
    STAGE_ANSWER,
    WITHDRAW_QUESTION,
    AnswerInput,
    AnswerReceipt,
    CallToolInput,
    DelegateInput,
    ExtendInput,
    ExtendReceipt,
    ReevaluateInput,
    RoundInputRequested,
    RoundResult,
    StagedAnswer,
    ToolCallInput,
    WithdrawInput,
    WithdrawReceipt,
)
from scope_tool.wire._questions import read_question
from scope_tool.wire._staging import StagedTexts
from scope_tool.wire._status import (
    AnswerRecord,
    CallOutcome,
    PendingInput,
    Phase,
)
from scope_tool.wire.errors import RefusalReason
from scope_tool.wire.identity import token_claims
from scope_tool.workflows._answer_check import Accepted, AnswerCheck, CallState, Unchecked
from scope_tool.workflows._policy import (
    EXPIRY_ANSWERER,
    RULE_ANSWERER_PREFIX,
    Ballot,
    reevaluation,
    rule_answer,
    rule_decision,
    rule_verdict_text,
    tool_policy_refusal,
)

__all__ = ["HistoryWalk"]


class HistoryWalk:
    """The call's state as the workflow saw it, advanced one history event at a time."""

    def __init__(self, call_id: str, data_converter: DataConverter) -> None:
        self.call_id = call_id
        self.converter = data_converter
        self.call: ToolCallInput | None = None
        self.started_call: ToolCallInput | None = None  # before escalations and delegations
        self.started_at = _EPOCH
        self.started_by = ""
        self.rounds: dict[int, int] = {}  # scheduled event id -> round
        self.round = 0
        self.phase = Phase.RUNNING
        self.pending: PendingInput | None = None
        self.pending_request: InputRequest | None = None
        # Committed at the next task: the round, the question, the tool's policy.
        self.asked: tuple[int, InputRequest, ApprovalPolicy | None] | None = None
        self.answered: dict[str, AnswerRecord] = {}
        self.ballot: Ballot | None = None
        self.rule_verdict = ""
        self.reevaluations: dict[str, tuple[ReevaluateInput, str]] = {}
        self.updates: dict[str, tuple[AnswerInput, str]] = {}
        # Extensions, delegations and withdrawals accepted, by update id: (name, input, client).
        self.steps: dict[str, tuple[str, Any, str]] = {}
        self.trail = PolicyTrail()
        self.task_at = _EPOCH  # workflow.now() of the latest workflow task
        self.staged = StagedTexts()
        self.questions: list[HistoryQuestion] = []
        self.answers: list[HistoryAnswer] = []
        self.refusals: list[HistoryRefusal] = []
        self.status = "RUNNING"
        self.outcome: CallOutcome | None = None
        self.ended_at: datetime | None = None

    async def step(self, event: HistoryEvent) -> None:
        # As workflow.now() computes it, so asked_at equals the workflow's own to the microsecond.
        at = datetime.fromtimestamp(event.event_time.ToNanoseconds() / 1e9, UTC)
        kind = event.event_type
        if kind in _TASK_FAILURES:
            self.trail.task_failed()
        elif kind not in _WITHIN_TASK:
            self._take_due()
        if kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
            started = event.workflow_execution_started_event_attributes
            self.call = self.started_call = await self._one(started.input, ToolCallInput)
            self.started_at, self.started_by = at, started.identity
        elif kind == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
            self.task_at = at
            # A timer that fired brings its step in this task (a reminder, the escalation).
            self.trail.task_started(at=at)
            if self.asked is not None:
                self._ask(at)
        elif kind == EventType.EVENT_TYPE_TIMER_FIRED:
            self.trail.timer_fired()
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            scheduled = event.activity_task_scheduled_event_attributes
            if scheduled.activity_type.name in ROUND_ACTIVITIES:
                round_input = await self._one(scheduled.input, CallToolInput)
                self._expired(round_input, at)
                self.rounds[event.event_id] = round_input.round
                self.round = max(self.round, round_input.round)
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            completed = event.activity_task_completed_event_attributes
            asked_round = self.rounds.get(completed.scheduled_event_id)
            if asked_round is not None:
                result = await self._one(completed.result, cast(type, RoundResult))
                if isinstance(result, RoundInputRequested):
                    self.asked = (asked_round, read_question(result.input_request), result.policy)
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
            signaled = event.workflow_execution_signaled_event_attributes
            if signaled.signal_name == ANSWER:
                answer = await self._one(signaled.input, AnswerInput)
                self._signal(self.staged.unstaged(answer), identity=signaled.identity, at=at)
            elif signaled.signal_name == STAGE_ANSWER:
                self.staged.add((await self._one(signaled.input, StagedAnswer)).response)
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
            accepted = event.workflow_execution_update_accepted_event_attributes
            update_request = accepted.accepted_request
            if update_request.input.name == ANSWER:
                answer = self.staged.unstaged(
                    await self._one(update_request.input.args, AnswerInput)
                )
                self.updates[update_request.meta.update_id] = (answer, update_request.meta.identity)
            elif update_request.input.name in _STEP_UPDATES:
                name = update_request.input.name
                self.steps[update_request.meta.update_id] = (
                    name,
                    await self._one(update_request.input.args, _STEP_UPDATES[name][0]),
                    update_request.meta.identity,
                )
            elif update_request.input.name == REEVALUATE_RULES:
                request = await self._one(update_request.input.args, ReevaluateInput)
                self.reevaluations[update_request.meta.update_id] = (
                    request,
                    update_request.meta.identity,
                )
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED:
            update_done = event.workflow_execution_update_completed_event_attributes
            step = self.steps.pop(update_done.meta.update_id, None)
            if step is not None and update_done.outcome.HasField("success"):
                name, request, identity = step
                result = await self._one(update_done.outcome.success, _STEP_UPDATES[name][1])
                self._stepped(name, request, result, identity=identity, at=at)
            reevaluated = self.reevaluations.pop(update_done.meta.update_id, None)
            if reevaluated is not None and update_done.outcome.HasField("success"):
                self._reevaluated(*reevaluated, at=at)
            sent = self.updates.pop(update_done.meta.update_id, None)
            if sent is not None and update_done.outcome.HasField("success"):
                receipt = await self._one(update_done.outcome.success, AnswerReceipt)
                answer, identity = sent
                # An accepted update passed the workflow's token check: its subject answered.
                token = answer.identity_token
                claimed = token_claims(token) if token else None
                who: tuple[str | None, bool, str | None] = (
                    (claimed[0] if claimed else None, True, claimed[1] if claimed else None)
                    if token
                    else (answer.answered_by, False, None)
                )
                self._take(
                    answer,
                    receipt.request_id,
                    receipt.duplicate,
                    identity,
                    at,
                    AnswerVia.UPDATE,
                    who=who,
                )
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
            finished = event.workflow_execution_completed_event_attributes
            self.outcome = await self._one(finished.result, CallOutcome)
            self._end("COMPLETED", at)
        elif kind in _ENDINGS:
            self._end(_ENDINGS[kind], at)

    def _take_due(self) -> None:
        """The step a fired timer brought, once no update of its task answered first."""
        if self.call is None or self.pending is None:
            return
        changed = self.trail.take_due(self.call, self.pending.request_id)
        if changed is not None:
            self.call = changed
            self.pending = replace(self.pending, deadline=self.trail.deadline)

    def _ask(self, at: datetime) -> None:
        """The workflow commits the question when it next runs: workflow.now() is ``at``."""
        assert self.asked is not None
        assert self.started_call is not None
        round_number, request, tool_policy = self.asked
        self.asked = None
        # An escalation or a delegation holds for its question: the next starts afresh.
        self.call = call = self.started_call
        if call.policy is None and tool_policy is not None:
            # As the workflow: the tool's policy decides the question of a call started
            # without one; one the call cannot carry ended it INVALID, the question unasked.
            if tool_policy_refusal(call, tool_policy) is not None:
                return
            self.call = call = replace(call, policy=tool_policy)
        self.pending_request = request
        timeout = call.answer_timeout_seconds
        self.pending = PendingInput(
            request_id=f"{self.call_id}/r{round_number}",
            prompt=request.prompt,
            response_schema=request.response_schema,
            asked_at=at,
            deadline=at + timedelta(seconds=timeout) if timeout is not None else None,
        )
        self.phase = Phase.AWAITING_INPUT
        self.ballot = Ballot.open(call.policy, self.pending.request_id)
        self.questions.append(
            HistoryQuestion(
                request_id=self.pending.request_id,
                round=round_number,
                prompt=request.prompt,
                response_schema=request.response_schema,
                asked_at=at,
            )
        )
        self._rules(round_number, at)
        if self.pending is not None:  # no rule decided it: it waits
            self.trail.asked(call, at=at)

    def _stepped(
        self, name: str, request: Any, result: Any, *, identity: str, at: datetime
    ) -> None:
        """An accepted extension, delegation or withdrawal, as the workflow took it."""
        call, pending = self.call, self.pending
        assert call is not None
        # An accepted step with an identity token passed the workflow's check: its subject acted.
        token = getattr(request, "identity_token", None)
        claims = token_claims(token) if token else None
        if claims is not None and name == DELEGATE_QUESTION:
            request = replace(request, delegated_by=claims[0])
        if name == EXTEND_DEADLINE and pending is not None:
            self.trail.extended(
                call,
                claims[0] if claims is not None else request.extended_by,
                result,
                seconds=request.seconds,
                at=at,
                task_at=self.task_at,
                identity=identity,
            )
            self.pending = replace(pending, deadline=result.deadline)
        elif name == DELEGATE_QUESTION and pending is not None:
            self.call = self.trail.delegated(
                call,
                request,
                result,
                pending.deadline,
                at=at,
                task_at=self.task_at,
                identity=identity,
            )
        elif name == WITHDRAW_QUESTION:
            self.trail.withdrawn(request, result.request_id, at=at, identity=identity)

    def _rules(self, round_number: int, at: datetime) -> None:
        """As the workflow does when it commits a question: a rule may decide it at once."""
        assert self.call is not None
        assert self.pending is not None
        verdict = rule_decision(self.call, self.pending)
        self.rule_verdict = rule_verdict_text(self.call, verdict)
        decided = rule_answer(self.call, verdict)
        if verdict is not None:
            self.trail.add(
                PolicyEvent(
                    kind=PolicyEventKind.RULES,
                    request_id=self.pending.request_id,
                    at=at,
                    by=f"{RULE_ANSWERER_PREFIX}{verdict.rule.name}"
                    if decided is not None and verdict.rule is not None
                    else None,
                    decision=verdict.effect,
                    decided=decided is not None,
                    text=self.rule_verdict,
                )
            )
        if decided is None or verdict is None or verdict.rule is None:
            return
        entry = HistoryAnswer(
            request_id=self.pending.request_id,
            round=round_number,
            response=decided,
            answered_by=f"{RULE_ANSWERER_PREFIX}{verdict.rule.name}",
            client_identity="",
            answered_at=at,
            via=AnswerVia.RULE,
            reason=verdict.reason,
        )
        self.answered[entry.request_id] = entry
        self.answers.append(entry)
        self.trail.answered()
        self.pending = self.pending_request = None
        self.phase = Phase.RUNNING

    def _reevaluated(self, request: ReevaluateInput, identity: str, *, at: datetime) -> None:
        """An operator's re-evaluation, decided as the workflow decided it."""
        assert self.call is not None
        found = reevaluation(
            self.call, self.phase, self.pending, request, at=at, round_number=self.round
        )
        text, record = found
        if isinstance(text, RefusalReason) or self.pending is None:
            return
        self.rule_verdict = text
        self.trail.add(
            PolicyEvent(
                kind=PolicyEventKind.REEVALUATION,
                request_id=self.pending.request_id,
                at=at,
                by=request.by,
                decided=isinstance(record, AnswerRecord),
                text=text,
                client_identity=identity,
            )
        )
        if not isinstance(record, AnswerRecord):
            return
        entry = HistoryAnswer(
            request_id=record.request_id,
            round=record.round,
            response=record.response,
            answered_by=record.answered_by,
            client_identity=identity,
            answered_at=at,
            via=AnswerVia.RULE,
            reason=record.reason,
        )
        self.answered[entry.request_id] = entry
        self.answers.append(entry)
        self.trail.answered()
        self.pending = self.pending_request = None
        self.phase = Phase.RUNNING

    def _expired(self, round_input: CallToolInput, at: datetime) -> None:
        """A next round scheduled while the question had no answer: the deadline passed and
        the policy's ``expiry_answer`` was taken (the workflow records it as policy:expiry)."""
        policy = self.call.policy if self.call is not None else None
        pending = self.pending
        if pending is None or policy is None or policy.expiry_answer is None:
            return
        if round_input.response is None or round_input.round <= self.round:
            return
        entry = HistoryAnswer(
            request_id=pending.request_id,
            round=self.round,
            response=round_input.response,
            answered_by=EXPIRY_ANSWERER,
            client_identity="",
            answered_at=at,
            via=AnswerVia.POLICY,
            reason="no answer before the deadline: the policy's expiry_answer was taken",
        )
        self.answered[entry.request_id] = entry
        self.answers.append(entry)
        self.trail.answered()
        self.pending = self.pending_request = None
        self.phase = Phase.RUNNING

    def _state(self) -> CallState:
        """The call's state as the workflow had it at this point of its history."""
        assert self.call is not None
        return CallState(
            call=self.call,
            phase=self.phase,
            pending=self.pending,
            pending_request=self.pending_request,
            answered=self.answered,
            voted=self.ballot.voters() if self.ballot is not None else frozenset(),
        )

    def _signal(self, answer: AnswerInput, *, identity: str, at: datetime) -> None:
        assert self.call is not None
        # As the workflow's signal handler, it refuses tokens (they go by update).
        verdict = AnswerCheck.unbounded(self._state()).signal(answer)
        assert not isinstance(verdict, Unchecked)  # no budget, so never over it
        if isinstance(verdict, Accepted):
            self._take(
                answer,
                verdict.request_id,
                verdict.duplicate,
                identity,
                at,
                AnswerVia.SIGNAL,
                who=(verdict.answered_by, verdict.verified, verdict.channel),
            )
            return
        self.refusals.append(
            HistoryRefusal(
                request_id=answer.request_id,
                reason=verdict.reason,
                message=verdict.message,
                response=answer.response,
                answered_by=answer.answered_by,
                client_identity=identity,
                refused_at=at,
            )
        )

    def _take(
        self,
        answer: AnswerInput,
        request_id: str,
        duplicate: bool,
        identity: str,
        at: datetime,
        via: AnswerVia,
        *,
        who: tuple[str | None, bool, str | None],
    ) -> None:
        answered_by, verified, channel = who
        entry = HistoryAnswer(
            request_id=request_id,
            round=self.answered[request_id].round if duplicate else self.round,
            response=answer.response,
            answered_by=answered_by,
            client_identity=identity,
            answered_at=at,
            via=via,
            duplicate=duplicate,
            verified=verified,
            channel=channel,
        )
        ballot = self.ballot
        if not duplicate and ballot is not None and answered_by is not None:
            # As the workflow does: the answer is a vote, which may or may not decide.
            cast = ballot.cast(
                voter=answered_by, response=answer.response, verified=verified, at=at
            )
            if self.pending is not None and ballot.request_id != self.pending.request_id:
                self.pending = replace(self.pending, request_id=ballot.request_id)
            decisive = cast.decisive
            self.trail.add(
                PolicyEvent(
                    kind=PolicyEventKind.VOTE,
                    request_id=ballot.request_id,
                    at=at,
                    by=answered_by,
                    decision=vote_kind(answer.response),
                    verified=verified,
                    channel=channel,
                    decided=decisive is not None,
                    text=cast.tally.text(),
                    client_identity=identity,
                )
            )
            if decisive is None:
                self.answers.append(replace(entry, decided=False))
                return
            voters = (decisive.voter,) if cast.tally.denied else cast.tally.agreed
            entry = replace(entry, request_id=ballot.request_id, voters=voters)
        if not duplicate and self.rule_verdict:
            entry = replace(entry, rule_verdict=self.rule_verdict)
        if not duplicate:
            self.answered[entry.request_id] = entry
            self.trail.answered()
            self.pending = self.pending_request = None
            self.phase = Phase.RUNNING
            self.staged.clear()
        self.answers.append(entry)

    def _end(self, status: str, at: datetime) -> None:
        self.status, self.ended_at = status, at
        self.phase = self.outcome.phase if self.outcome is not None else Phase.ERRORED
        self.pending = self.pending_request = None
        self.trail.answered()

    async def _one(self, payloads: Payloads, hint: type) -> Any:
        values = await self.converter.decode(payloads.payloads, [hint])
        return values[0]

    def result(self) -> CallHistory:
        call = self.started_call  # as started: an escalation or delegation held for a question
        if call is None:
            raise ValueError(f"the history of {self.call_id!r} does not start a scope-tool call")
        arguments = call.arguments
        return CallHistory(
            call_id=self.call_id,
            tool=call.tool,
            arguments=arguments.encode("utf-8") if isinstance(arguments, str) else arguments,
            started_at=self.started_at,
            started_by=self.started_by,
            allowed_answerers=tuple(call.allowed_answerers),
            principal=call.principal,
            require_verified=call.require_verified,
            # The call's own policy, else the one its tool carried for the latest question.
            policy=call.policy
            if call.policy is not None or self.call is None
            else self.call.policy,
            questions=tuple(self.questions),
            answers=tuple(self.answers),
            refusals=tuple(self.refusals),
            policy_events=tuple(self.trail.events),
            deadline_steps=tuple(self.trail.steps),
            rounds=self.round,
            execution_status=self.status,
            outcome=self.outcome,
            ended_at=self.ended_at,
        )


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_STEP_UPDATES: dict[str, tuple[type, type]] = {
    EXTEND_DEADLINE: (ExtendInput, ExtendReceipt),
    DELEGATE_QUESTION: (DelegateInput, str),
    WITHDRAW_QUESTION: (WithdrawInput, WithdrawReceipt),
}
"""The updates that step a question's deadline or withdraw it: their input and result types."""
_WITHIN_TASK = frozenset(
    {
        EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED,
    }
)
"""Events that close a workflow task or carry its updates' messages: a step a timer brought in
that task waits past them (see ``PolicyTrail.task_started``)."""
_TASK_FAILURES = frozenset(
    {EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED, EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT}
)
_ENDINGS = {
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED: "FAILED",
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED: "TERMINATED",
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT: "TIMED_OUT",
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED: "CANCELED",
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW: "CONTINUED_AS_NEW",
}
