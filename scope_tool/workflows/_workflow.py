"""``scope_tool.ToolCall``: one logical tool call as one Temporal workflow.

Each round is one activity (``scope_tool.call_tool``) whose result is a tagged union. When the
tool asks for input, the ``InputRequest`` is committed as workflow state under a request id
(``"{call_id}/r{round}"``) and the call waits for an answer (update or signal ``answer``), the
optional answer deadline (EXPIRED) or cancellation (CANCELLED). An accepted answer re-enters the
tool in the next round, through ``InputRequest.continuation`` and ``Contract.prepare`` inside
the activity.

Routing: the workflow runs on the main task queue, and each round's activity on a queue only the
right workers poll: round 1 on the tool's queue (``wire.tool_queue``), later rounds on the queue
of the contract the call started with (``wire.contract_queue``). So a round never reaches a
worker without the tool, and a re-entry never one whose contract changed: while no such worker
runs, the round stays scheduled and the call waits (no schedule-to-start timeout), and a worker
serving that contract again picks it up. Only round 1 may be given a schedule-to-start timeout
(``ToolCallInput.unserved_timeout_seconds``): nothing has run yet, so a tool no worker serves
ends INVALID, which a model can read. Calls started before routing (``ToolCallInput.routed``
false, its default) keep running their rounds on the main queue, so their histories replay.

Eager rounds: before its routed queue, a round is offered on the workflow's own queue
(``wire.CALL_TOOL_HERE_ACTIVITY``). Temporal hands an activity scheduled on the workflow's queue
straight to the worker completing the workflow task when it has a free slot (eager dispatch),
saving a trip through the server's matching. A worker that does not serve the round's tool (round
1) or contract (re-entry) refuses it before running anything (``wire.NOT_SERVED_HERE``); so does
a round no slot took within ``_HERE_WAIT``; then the round is sent to its routed queue as above,
and no attempt is counted. A call started with ``eager_rounds`` in its input takes this path
without a patch marker (a marker costs two history events and a search-attribute write per
call); one started without it asks ``workflow.patched(EAGER_ROUNDS_PATCH)``, so histories
recorded before eager rounds (no marker) replay their rounds on the routed queues.

The module is deterministic: no I/O, time from ``workflow.now()``, no global state. It runs
outside Temporal's sandbox (``sandboxed=False``; see ``scope_tool.workers.workflow_runner``): it is the only
workflow a worker runs, user code never runs in it, and replaying recorded histories in the test
suite is what guards its determinism. The imports stay marked passed-through so the module still
loads in a sandboxed runner.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Literal, TypeVar, cast

from temporalio import workflow
from temporalio.common import RawValue, RetryPolicy, SearchAttributeUpdate
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    CancelledError,
    TimeoutType,
)
from temporalio.exceptions import TimeoutError as ActivityTimeoutError

with workflow.unsafe.imports_passed_through():
    import json
    from typing import assert_never

    from scope_tool import ApprovalPolicy, FailureKind, InputRequest, Output
    from scope_tool._definition import NAME_PATTERN
    from scope_tool.wire import (
        ANSWER,
        ASSIGNEE_KEY,
        CALL_TOOL_ACTIVITY,
        CALL_TOOL_HERE_ACTIVITY,
        CHECK_ANSWER_ACTIVITY,
        DELEGATE_QUESTION,
        EXTEND_DEADLINE,
        FIRST_STOP,
        NOT_SERVED_HERE,
        PHASE_KEY,
        REEVALUATE_RULES,
        RELEASE_ROUND_ACTIVITY,
        ROUND_RUNNING,
        STAGE_ANSWER,
        STATUS,
        TOOL_KEY,
        UNSERVED_TOOL,
        WITHDRAW_QUESTION,
        WORKFLOW_NAME,
        AnnounceInput,
        AnswerInput,
        AnswerReceipt,
        CallToolInput,
        CheckAnswerInput,
        CheckAnswerResult,
        DelegateInput,
        ExtendInput,
        ExtendReceipt,
        NotifyInput,
        ReevaluateInput,
        ReevaluateReceipt,
        ReleaseInput,
        RoundCancelled,
        RoundCompleted,
        RoundErrored,
        RoundFailed,
        RoundInputRequested,
        RoundInvalid,
        RoundResult,
        StagedAnswer,
        ToolCallInput,
        WithdrawInput,
        WithdrawReceipt,
        contract_queue,
        request_digest,
        tool_queue,
        update_id_digest,
    )
    from scope_tool.wire._questions import read_question
    from scope_tool.wire._staging import StagedTexts
    from scope_tool.wire._status import (
        AnswerRecord,
        CallOutcome,
        CallStatus,
        DeadlineStep,
        PendingInput,
        Phase,
        RefusedAnswer,
        RoundRoute,
        shown_answers,
    )
    from scope_tool.wire.errors import PayloadDecryptionError, RefusalReason
    from scope_tool.wire.identity import (
        IdentityError,
        installed_identity_secret,
        installed_worker_identity,
        token_claims,
        verify_token,
    )
    from scope_tool.wire.web_ui_text import finished_details, running_details, waiting_details
    from scope_tool.workflows._answer_check import (
        MAX_REFUSAL_TEXT,
        WORKFLOW_CHECK_BYTES,
        Accepted,
        AnswerCheck,
        CallState,
        Refused,
        Unchecked,
        encoded_size,
    )
    from scope_tool.workflows._notices import Notices, describe
    from scope_tool.workflows._policy import (
        RULE_ANSWERER_PREFIX,
        Ballot,
        DeadlineClock,
        answerers_now,
        delegated_answerers,
        escalated_answerers,
        expiry_answer,
        next_occasion,
        reevaluation,
        rule_answer,
        rule_decision,
        rule_verdict_text,
        tool_policy_refusal,
        withdrawal_refusal,
        withdrawn_message,
    )

__all__ = ["ToolCallWorkflow"]

_SignalInput = TypeVar("_SignalInput")

_VALIDATED = CheckAnswerResult(accepted=True)
"""The content verdict of an answer its update validator accepted (see ``_validated``)."""

_KEPT_REFUSALS = 20
"""Refused signal answers kept in status (the newest); older ones are only counted."""
EAGER_ROUNDS_PATCH = "eager-rounds"
"""The ``workflow.patched`` id of offering routed rounds on the main queue first."""
ONE_SCHEMA_CHECK_PATCH = "one-schema-check-at-a-time"
"""The ``workflow.patched`` id of running one ``check_answer`` activity at a time.

Each of those activities carries its answer (up to ``MAX_INPUT_BYTES``) as input, and every
activity scheduled in one workflow task travels in that task's one reply to the server, which
gRPC caps at 4 MiB: four large answers arriving together made the reply too large, and the
server ended the call. One at a time, a reply holds at most one answer being checked (and the
next round's, which carries the accepted answer)."""
_RELEASE_WAIT = timedelta(seconds=5)
"""How long telling a pinned question's process that no answer will come may take (each of
schedule-to-start and start-to-close): a live process takes it in milliseconds; a gone one
delays the call's close by this much, once."""
_HERE_WAIT = timedelta(seconds=3)
"""How long a round offered on the main queue may wait for a free slot there before it goes to
its routed queue (each of those has its own slots): an idle worker takes it in milliseconds, a
busy one must not hold up a tool another worker, or another queue, could run now."""
_NOT_TAKEN_HERE = frozenset({NOT_SERVED_HERE, "NotFoundError"})
"""Failures of a round offered on the main queue that ran nothing: refused by a worker without
the tool or contract, or failed by a worker predating ``CALL_TOOL_HERE_ACTIVITY`` (Temporal's
"not registered on this worker")."""
BOUNDED_TASK_CHECKS_PATCH = "bounded-answer-checks-per-task"
"""The ``workflow.patched`` id of bounding the answer text checked in workflow code per task."""
_TASK_CHECK_BYTES = 128 * 1024
"""Answer text one workflow task of a call started without ``ToolCallInput.task_check_bytes``
(clients of this version set ``wire.TASK_CHECK_BYTES``) may parse and check in workflow code;
past it, the checks of
that task go to the ``check_answer`` activity (one at a time). Temporal hands a call every
signal and update that arrived since its last task in one activation, and any Temporal client
may send them: a burst of answers slow to parse (deep nesting, ~50 ms per 64 KiB) ran one
activation past the SDK's two-second deadlock detector, and the task failed on every retry
and replay (second red-team pass of #25)."""
_CHECK_MIN_CHARGE = 4096
"""What each check counts against ``_TASK_CHECK_BYTES`` at least (its schema steps and the
work around it cost something even for a short answer)."""
_CHECK_TIMEOUT = timedelta(seconds=60)
_CHECK_ATTEMPTS = 3


@dataclass(frozen=True, slots=True, kw_only=True)
class _Question:
    """The question a call waits on: set when a round asks, cleared by its answer or the end.

    ``pending`` is what status shows; ``request`` the parsed ``InputRequest`` answers are
    checked against; ``carried`` the encoded size of what the next round carries besides the
    answer (the arguments and the question), so an answer too large to carry is refused.
    """

    pending: PendingInput
    request: InputRequest
    carried: int


@workflow.defn(name=WORKFLOW_NAME, sandboxed=False)
class ToolCallWorkflow:
    """Runs the rounds of one call; see the module docstring for the life of a call."""

    @workflow.init
    def __init__(self, call: ToolCallInput) -> None:
        self._call = call
        # The call as started: an escalation widens or replaces who may answer one question
        # (self._call's allowed_answerers), and a tool's policy decides one question of a call
        # started without one (self._call's policy); the next question starts from this again.
        self._started_call = call
        self._policy_source: Literal["call", "tool"] | None = (
            "call" if call.policy is not None else None
        )
        self._deadline_steps: list[DeadlineStep] = []
        self._assignees: list[str] = []  # what the ScopeToolAssignee attribute shows
        # The pending question's deadline steps (a policy with deadline steps only).
        self._clock: DeadlineClock | None = None
        self._phase = Phase.RUNNING
        # The phase the ScopeToolPhase attribute shows: it may lag behind _phase only while a
        # round that follows an answer runs (ToolCallInput.running_shown_late).
        self._shown_phase = Phase.RUNNING
        self._round = 0
        self._tool_ran = False  # a worker serving the tool returned a round (metric_tool)
        self._question: _Question | None = None
        self._ballot: Ballot | None = None  # the votes on the question (a quorum policy)
        self._rule_verdict = ""  # what the policy's rules said of the question
        self._answer: AnswerRecord | None = None
        self._answers: dict[str, AnswerRecord] = {}
        self._refused: list[RefusedAnswer] = []
        self._refused_dropped = 0
        self._notices = Notices(call)
        self._outcome: CallOutcome | None = None
        self._contract_digest: str | None = None
        self._route: RoundRoute | None = None
        # The question whose tool pinned the next round to the process that asked (its queue).
        self._pinned: RoundInputRequested | None = None
        # A pinned question not (yet) re-entered: its process's queue and the round that asked.
        self._held: tuple[str, int] | None = None
        self._schema_check = asyncio.Lock()
        self._staged = StagedTexts()
        # Answers whose content the update validator accepted in this worker (request id and
        # text): their handler takes that verdict instead of parsing and checking the text
        # again. Validators do not run on replay, so there the handler decides it itself, to
        # the same verdict (the check is a pure function of the same state).
        self._validated: set[tuple[str, bytes]] = set()
        # Answer text checked in workflow code in the current workflow task (see
        # _TASK_CHECK_BYTES): by handlers and signals, keyed by the task's history length, which
        # replays the same; and by update validators, which never replay, kept apart.
        self._task_checks: tuple[object, int] = (-1, 0)
        self._task_validations: tuple[object, int] = (-1, 0)

    @workflow.run
    async def run(self, call: ToolCallInput) -> CallOutcome:
        """Drive the rounds to one :class:`CallOutcome`; cancellation is a clean CANCELLED."""
        if workflow.info().typed_search_attributes.get(TOOL_KEY) is None:
            workflow.upsert_search_attributes(
                [TOOL_KEY.value_set(call.tool), PHASE_KEY.value_set(Phase.RUNNING.value)]
            )
        try:
            outcome = await self._drive()
        except asyncio.CancelledError:
            outcome = self._finish(Phase.CANCELLED, message="the call was cancelled")
        await self._release_held(outcome)
        self._notify("finished")
        await self._notices.handed_over()
        await workflow.wait_condition(workflow.all_handlers_finished)
        return outcome

    async def _drive(self) -> CallOutcome:
        call = self._call
        if call.routed and NAME_PATTERN.fullmatch(call.tool) is None:
            # No worker can serve it, and it cannot even name a task queue: refuse it here.
            message = f"tool: unknown tool {json.dumps(call.tool)}"
            return self._finish(
                Phase.INVALID, output=Output.text_output(f"error: {message}"), message=message
            )
        round_input = CallToolInput(
            call_id=call.call_id,
            round=1,
            tool=call.tool,
            arguments=call.arguments,
            principal=call.principal,
        )
        while True:
            self._round = round_input.round
            result = await self._run_round(round_input)
            if isinstance(result, CallOutcome):
                return result
            match result:
                case RoundCompleted():
                    return self._finish(Phase.COMPLETED, output=result.output)
                case RoundInputRequested():
                    if workflow.cancellation_reason() is not None:
                        # The cancellation reached us while the round ran and the activity
                        # finished before it heard: cancellation wins over the question (it
                        # never replaces a completed result, which is the case above).
                        return self._finish(
                            Phase.CANCELLED,
                            message=f"the call was cancelled while round {self._round} ran;"
                            " the question the tool asked was not committed",
                        )
                    if self._contract_digest is None:
                        self._contract_digest = result.contract_digest
                    if result.resume_queue is not None:
                        self._held = (result.resume_queue, self._round)
                    refused = self._question_policy(result.policy)
                    if refused is not None:
                        return self._finish(
                            Phase.INVALID,
                            output=Output.text_output(f"error: {refused}"),
                            message=refused,
                        )
                    answer = await self._wait_for_answer(result.input_request)
                    if self._outcome is not None:  # withdrawn while it waited
                        return self._outcome
                    if answer is None:
                        expired = self._expired()
                        if isinstance(expired, str):
                            return self._finish(Phase.EXPIRED, message=expired)
                        answer = expired
                    # The next round re-enters the tool with the question and its answer, on
                    # the contract that asked (in the very process that asked, if it pinned).
                    self._pinned = result if result.resume_queue is not None else None
                    self._held = None  # the question it held is being answered
                    round_input = replace(
                        round_input,
                        round=self._round + 1,
                        input_request=result.input_request,
                        response=answer.response,
                        contract_digest=self._contract_digest,
                        report_running=call.running_shown_late,
                    )
                case RoundFailed():
                    phase = (
                        Phase.REJECTED
                        if result.failure_kind is FailureKind.REJECTED
                        else Phase.FAILED
                    )
                    return self._finish(
                        phase,
                        output=result.output,
                        failure_kind=result.failure_kind,
                        message=result.message,
                    )
                case RoundInvalid():
                    return self._finish(Phase.INVALID, output=result.output, message=result.message)
                case RoundErrored():
                    return self._finish(
                        Phase.ERRORED, message=result.message, evidence=result.evidence
                    )
                case RoundCancelled():
                    return self._finish(Phase.CANCELLED, message=result.message)
                case _:
                    assert_never(result)

    async def _release_held(self, outcome: CallOutcome) -> None:
        """Tell the process holding a pinned question's state that no answer will come.

        Best effort, within ``_RELEASE_WAIT``: a process that is gone took the state with it.
        Only calls whose tool pinned a question ever schedule it.
        """
        held, self._held = self._held, None
        if held is None:
            return
        queue, asked_in = held
        try:
            await workflow.execute_activity(
                RELEASE_ROUND_ACTIVITY,
                ReleaseInput(
                    call_id=self._call.call_id, round=asked_in, reason=outcome.phase.value.lower()
                ),
                result_type=bool,
                task_queue=queue,
                schedule_to_start_timeout=_RELEASE_WAIT,
                start_to_close_timeout=_RELEASE_WAIT,
                retry_policy=RetryPolicy(maximum_attempts=1),
                summary=f"release round {asked_in}: call {outcome.phase.value.lower()}",
            )
        except ActivityError as err:
            workflow.logger.info("round %d's holder was not released: %s", asked_in, err)

    async def _run_round(self, round_input: CallToolInput) -> RoundResult | CallOutcome:
        """One activity; a lost worker re-runs the round only for a tool declared retry-safe.

        A routed round is first offered on the workflow's own queue (eager dispatch); refused
        there (this worker does not serve it, a worker predating the offer, or no free slot in
        ``_HERE_WAIT``), nothing ran, no attempt is counted, and it goes to its routed queue.
        """
        call = self._call
        attempt = 0
        pinned = self._pinned if round_input.round > 1 else None
        # Gated so histories recorded before the offer existed replay their routed rounds: a
        # call whose input says so needs no patch marker (see ToolCallInput.eager_rounds).
        here = (
            pinned is None
            and call.routed
            and (call.eager_rounds or workflow.patched(EAGER_ROUNDS_PATCH))
        )
        while True:
            queue: str | None
            wait: timedelta | None
            if pinned is not None:
                # Only the process that asked holds what the answer resumes (its queue only).
                activity, queue = CALL_TOOL_ACTIVITY, pinned.resume_queue
                seconds = pinned.resume_within_seconds
                wait = timedelta(seconds=seconds) if seconds is not None else None
            elif here:
                activity, queue, wait = CALL_TOOL_HERE_ACTIVITY, None, _HERE_WAIT
            else:
                activity = CALL_TOOL_ACTIVITY
                queue, wait = self._queue_for(round_input)
            if call.routed:
                self._route = RoundRoute(
                    task_queue=queue if queue is not None else workflow.info().task_queue,
                    round=round_input.round,
                    contract_digest=round_input.contract_digest,
                    scheduled_at=workflow.now(),
                )
            try:
                result: RoundResult = await workflow.execute_activity(
                    activity,
                    round_input,
                    result_type=cast(type, RoundResult),
                    task_queue=queue,
                    schedule_to_start_timeout=wait,
                    start_to_close_timeout=timedelta(seconds=call.tool_timeout_seconds),
                    heartbeat_timeout=timedelta(seconds=call.heartbeat_timeout_seconds),
                    retry_policy=RetryPolicy(maximum_attempts=1),
                    cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
                    summary=f"{call.tool} round {round_input.round}",
                )
                self._tool_ran = True
                return result
            except ActivityError as err:
                if isinstance(err.cause, CancelledError):
                    raise asyncio.CancelledError() from err
                if here:
                    here = False
                    if _not_taken_here(err):
                        # The round waits for a worker on its own queue, maybe for long: the
                        # search attribute shows RUNNING now rather than when a round reports.
                        self._show_phase()
                        continue
                elif pinned is not None and _unserved(err):
                    key = pinned.idempotency_key
                    return self._finish(
                        Phase.ERRORED,
                        message=f"outcome unknown: round {round_input.round} of tool"
                        f" {call.tool!r} must run in the worker process that asked the question"
                        f" (queue {pinned.resume_queue}), which did not take it within"
                        f" {wait.total_seconds() if wait is not None else 0:g}s: that process is"
                        " gone, and what the answer resumes with it; nothing was run again"
                        + (
                            f"; idempotency key {key} (ask the system the tool called whether it"
                            " acted on it)"
                            if key is not None
                            else ""
                        ),
                    )
                elif _unserved(err):
                    message = f"no worker serves tool {call.tool!r}" + (
                        f" (none took round 1 within {wait.total_seconds():g}s)"
                        if wait is not None
                        else ""
                    )
                    return self._finish(
                        Phase.INVALID,
                        output=Output.text_output(f"error: {message}"),
                        message=message,
                    )
                attempt += 1
                retry_safe = _declared_retry_safe(err)
                if retry_safe and attempt < call.max_attempts_if_retry_safe:
                    workflow.logger.warning(
                        "round %d of %s lost its worker; re-running (tool is retry-safe)",
                        round_input.round,
                        call.call_id,
                    )
                    continue
                key = _reported_idempotency_key(err)
                return self._finish(
                    Phase.ERRORED,
                    message=(
                        f"outcome unknown: round {round_input.round} of tool {call.tool!r}"
                        f" did not report back ({describe(err)}); the tool is not marked"
                        " retry-safe, so it was not run again"
                        if not retry_safe
                        else f"outcome unknown: round {round_input.round} of tool"
                        f" {call.tool!r} failed {attempt} times ({describe(err)})"
                    )
                    + (
                        f"; idempotency key {key} (ask the system the tool called whether it"
                        " acted on it)"
                        if key is not None
                        else ""
                    ),
                )
            finally:
                self._route = None

    def _queue_for(self, round_input: CallToolInput) -> tuple[str | None, timedelta | None]:
        """The round's task queue and schedule-to-start timeout (None, None: the main queue)."""
        if not self._call.routed:
            return None, None
        main_queue = workflow.info().task_queue
        if round_input.contract_digest is not None:
            queue = contract_queue(main_queue, round_input.tool, round_input.contract_digest)
            return queue, None
        seconds = self._call.unserved_timeout_seconds
        return (
            tool_queue(main_queue, round_input.tool),
            timedelta(seconds=seconds) if seconds is not None else None,
        )

    def _question_policy(self, tool_policy: ApprovalPolicy | None) -> str | None:
        """Set the call's state for the question a round asked: the call as started (an
        escalation or delegation ends with its question), with the tool's policy when the call
        carries none. Returns why the tool's policy cannot decide it on this call (the call
        then ends INVALID, the question unasked), else ``None``."""
        started = self._started_call
        self._call = started
        if started.policy is not None or tool_policy is None:
            return None
        refused = tool_policy_refusal(started, tool_policy)
        if refused is not None:
            return refused
        self._call = replace(started, policy=tool_policy)
        self._policy_source = "tool"
        return None

    async def _wait_for_answer(self, input_request: bytes) -> AnswerRecord | None:
        call = self._call
        request = read_question(input_request)
        asked_at = workflow.now()
        timeout = (
            timedelta(seconds=call.answer_timeout_seconds)
            if call.answer_timeout_seconds is not None
            else None
        )
        pending = PendingInput(
            request_id=self._round_request_id(),
            prompt=request.prompt,
            response_schema=request.response_schema,
            asked_at=asked_at,
            deadline=asked_at + timeout if timeout is not None else None,
        )
        self._question = _Question(
            pending=pending,
            request=request,
            carried=encoded_size(call.arguments) + encoded_size(input_request),
        )
        self._answer = None
        self._ballot = Ballot.open(call.policy, pending.request_id)
        verdict = rule_decision(call, pending)
        self._rule_verdict = rule_verdict_text(call, verdict)
        decided = rule_answer(call, verdict)
        if decided is not None and verdict is not None and verdict.rule is not None:
            # A rule decides before anyone is asked: recorded as the answer, with its reason.
            return self._take(
                AnswerRecord(
                    request_id=pending.request_id,
                    round=self._round,
                    response=decided,
                    answered_by=f"{RULE_ANSWERER_PREFIX}{verdict.rule.name}",
                    answered_at=asked_at,
                    reason=verdict.reason,
                )
            )
        if call.assignee_attribute:
            # One upsert: the phase and who may answer (see ToolCallInput.assignee_attribute).
            self._set_phase(Phase.AWAITING_INPUT, shown=False)
            self._show_phase(assignees=answerers_now(call))
        else:
            self._set_phase(Phase.AWAITING_INPUT)
        self._show_waiting()
        steps = call.policy is not None and call.policy.has_deadline_steps
        if steps and not call.assignee_attribute:
            self._show_assignees(call.allowed_answerers)
        self._notify("awaiting_input")
        self._announce(pending, occasion=0)
        try:
            if timeout is not None and call.policy is not None and steps:
                await self._wait_with_steps(call.policy, asked_at + timeout)
            else:
                await workflow.wait_condition(self._answered, timeout=timeout)
        except TimeoutError:
            return None
        finally:
            # Unset once answered (nothing to write, so no event, when it was never set); with
            # assignee_attribute, together with the phase when that is next written.
            if not self._call.assignee_attribute:
                self._show_assignees(())
            self._clock = None
        return self._answer

    def _show_assignees(self, assignees: Sequence[str]) -> None:
        """Write who may answer now to the ScopeToolAssignee attribute: only calls whose policy
        has deadline steps, or a delegated question (a write is an event; those histories are
        new, so no replay of an older call meets it)."""
        names = list(assignees)
        if names == self._assignees:
            return
        self._assignees = names
        workflow.upsert_search_attributes(
            [ASSIGNEE_KEY.value_set(names) if names else ASSIGNEE_KEY.value_unset()]
        )

    def _answered(self) -> bool:
        return self._answer is not None or self._outcome is not None

    async def _wait_with_steps(self, policy: ApprovalPolicy, deadline: datetime) -> None:
        """Wait for the answer through the policy's reminders, its deadline and escalation.

        Only calls whose policy has reminders, ``escalate_to`` or ``max_extension`` come here
        (their input says so, so no patch marker is needed); each step is a timer in the call's
        history, so a replay or a restarted worker takes the same steps and sends nothing twice
        (each notice is a child workflow whose id names the question and its occasion). Which
        step a timer brings is :class:`DeadlineClock`'s, which the history reader runs too.

        Raises:
            TimeoutError: the last deadline passed unanswered.
        """
        clock = self._clock = DeadlineClock(policy, deadline)
        while True:
            deadline = clock.deadline
            now = workflow.now()
            step_at = clock.next_step(now)
            self._show_waiting()  # the next step's moment, in the Web UI's details
            try:
                await workflow.wait_condition(
                    lambda deadline=deadline: self._answered() or clock.deadline != deadline,  # type: ignore[misc]
                    timeout=max(step_at - now, timedelta(0)),
                )
            except TimeoutError:
                fired = clock.fire(workflow.now())
                if fired is None:
                    raise
                if fired.kind == "reminder":
                    assert fired.before_seconds is not None
                    self._remind(fired.before_seconds, fired.deadline)
                else:
                    self._escalate(policy, fired.deadline)
                continue
            if self._answered():
                return

    def _occasion(self, request_id: str) -> int:
        """The next notification occasion of the question (1 for its first after asking)."""
        return next_occasion(self._deadline_steps, request_id)

    def _remind(self, offset: float, deadline: datetime) -> None:
        """Send the waiting question again, once, and record it."""
        question = self._question
        if question is None:
            return
        pending = question.pending
        occasion = self._occasion(pending.request_id)
        self._deadline_steps.append(
            DeadlineStep(
                kind="reminder",
                request_id=pending.request_id,
                at=workflow.now(),
                occasion=occasion,
                assignees=tuple(self._call.allowed_answerers),
                deadline=deadline,
                before_seconds=offset,
            )
        )
        self._notify("reminder", occasion=occasion)
        self._announce(pending, occasion=occasion)

    def _escalate(self, policy: ApprovalPolicy, deadline: datetime) -> None:
        """The deadline passed unanswered: ``escalate_to`` may answer now, until ``deadline``."""
        question = self._question
        if question is None:
            return
        allowed = escalated_answerers(self._call, policy)
        self._call = replace(self._call, allowed_answerers=allowed)
        pending = replace(question.pending, deadline=deadline)
        self._question = replace(question, pending=pending)
        occasion = self._occasion(pending.request_id)
        self._deadline_steps.append(
            DeadlineStep(
                kind="escalation",
                request_id=pending.request_id,
                at=workflow.now(),
                occasion=occasion,
                assignees=policy.escalate_to,
                deadline=deadline,
            )
        )
        self._show_waiting()
        self._show_assignees(allowed or policy.escalate_to)
        self._notify("escalated", occasion=occasion)
        self._announce(pending, occasion=occasion, to=policy.escalate_to)

    def _announce(
        self, pending: PendingInput, *, occasion: int, to: tuple[str, ...] | None = None
    ) -> None:
        """Send a notification of the waiting question through the call's channels."""
        call = self._call
        if not call.channels:
            return
        self._notices.announce(
            AnnounceInput(
                call_id=call.call_id,
                tool=call.tool,
                request_id=pending.request_id,
                arguments=call.arguments,
                prompt=pending.prompt,
                response_schema=pending.response_schema,
                allowed_answerers=call.allowed_answerers if to is None else to,
                channels=call.channels,
                deadline=pending.deadline,
                occasion=occasion,
            ),
            round_number=self._round,
        )

    def _expired(self) -> AnswerRecord | str:
        """At the deadline: the policy's default answer (taken, recorded), else why EXPIRED."""
        expired = f"no answer to {self._round_request_id()} before the deadline"
        question = self._question
        if question is None:
            return expired
        default = expiry_answer(
            self._call,
            question.pending,
            question.request,
            at=workflow.now(),
            round_number=self._round,
        )
        if default is None:
            return expired
        if isinstance(default, str):
            return default
        return self._take(default)

    def _show_waiting(self) -> None:
        """The Web UI's details while the call waits: the question, who may answer it now, the
        votes so far and the next deadline step (details are no history event)."""
        if self._question is None:
            return
        clock = self._clock
        workflow.set_current_details(
            waiting_details(
                tool=self._call.tool,
                call_id=self._call.call_id,
                pending=self._question.pending,
                tally=self._ballot.tally().text() if self._ballot is not None else "",
                assignees=answerers_now(self._call),
                next_step=clock.upcoming() if clock is not None else None,
                escalate_to=clock.policy.escalate_to if clock is not None else (),
            )
        )

    @property
    def _pending(self) -> PendingInput | None:
        """The question waiting for an answer, as status shows it."""
        return self._question.pending if self._question is not None else None

    def _round_request_id(self) -> str:
        return f"{self._call.call_id}/r{self._round}"

    def _set_phase(self, phase: Phase, *, shown: bool = True) -> None:
        """Enter ``phase``; ``shown`` also writes it to the ScopeToolPhase attribute if it
        differs from what the attribute shows."""
        self._phase = phase
        if shown:
            self._show_phase()

    def _show_phase(self, *, assignees: Sequence[str] | None = None) -> None:
        """Write the phase to ScopeToolPhase if it differs from what the attribute shows.

        On a call with ``assignee_attribute``, ScopeToolAssignee goes in the same upsert (one
        history event): ``assignees`` while it waits, unset once it no longer shows waiting.
        """
        changes: list[SearchAttributeUpdate[Any]] = []
        if self._shown_phase is not self._phase:
            self._shown_phase = self._phase
            changes.append(PHASE_KEY.value_set(self._phase.value))
        if self._call.assignee_attribute and (changes or assignees is not None):
            waiting = self._shown_phase is Phase.AWAITING_INPUT
            names = list(assignees) if waiting and assignees is not None else []
            if waiting and assignees is None:
                names = self._assignees  # the phase shows waiting still: so do its assignees
            if names != self._assignees:
                self._assignees = names
                changes.append(
                    ASSIGNEE_KEY.value_set(names) if names else ASSIGNEE_KEY.value_unset()
                )
        if changes:
            workflow.upsert_search_attributes(changes)

    def _finish(
        self,
        phase: Phase,
        *,
        output: Output | None = None,
        failure_kind: FailureKind | None = None,
        message: str = "",
        evidence: Output | None = None,
    ) -> CallOutcome:
        self._question = None
        self._outcome = CallOutcome(
            phase=phase,
            output=output if output is not None else Output(),
            failure_kind=failure_kind,
            message=message,
            rounds=self._round,
            evidence=evidence,
        )
        self._set_phase(phase)
        workflow.set_current_details(finished_details(self._call.tool, phase.value, message))
        return self._outcome

    # --- notifications -------------------------------------------------------------------

    def _notify(
        self,
        event: Literal["awaiting_input", "finished", "reminder", "escalated", "delegated"],
        *,
        occasion: int = 0,
    ) -> None:
        """Send a webhook notice (see ``scope_tool.workflows._notices``); it never fails or delays the call."""
        url = self._call.notify_url
        if url is None:
            return
        pending = self._pending
        self._notices.send(
            NotifyInput(
                url=url,
                event=event,
                call_id=self._call.call_id,
                tool=self._call.tool,
                phase=self._phase.value,
                request_id=pending.request_id if pending is not None else None,
                prompt=pending.prompt.decode("utf-8", "replace") if pending is not None else None,
            ),
            round_number=self._round,
            metric_tool=self.metric_tool(),
            occasion=occasion,
        )

    def metric_tool(self) -> str:
        """The ``tool`` label of this call's metrics: its tool once a worker serving it ran a
        round, :data:`~scope_tool.wire.UNSERVED_TOOL` until then (a caller-chosen name must not
        make a metrics series of its own)."""
        return self._call.tool if self._tool_ran else UNSERVED_TOOL

    # --- answers ---------------------------------------------------------------------------

    def _answer_check(self, *, max_bytes: int = WORKFLOW_CHECK_BYTES) -> AnswerCheck:
        """The one answer decision over the call's state as it is now."""
        question = self._question
        return AnswerCheck(
            CallState(
                call=self._call,
                phase=self._phase,
                pending=self._pending,
                pending_request=question.request if question is not None else None,
                carried=question.carried if question is not None else None,
                answered=self._answers,
                voted=self._ballot.voters() if self._ballot is not None else frozenset(),
            ),
            max_bytes=max_bytes,
        )

    def _charged(
        self, spent: tuple[object, int], answer: AnswerInput, task: object
    ) -> tuple[int | None, int]:
        """The text this check may parse here (``None``: none, it goes to the activity) and
        the count of ``task`` once it is done (see ``_TASK_CHECK_BYTES``)."""
        used = spent[1] if spent[0] == task else 0
        if len(answer.response) > WORKFLOW_CHECK_BYTES:
            return WORKFLOW_CHECK_BYTES, used  # not parsed here in any case
        cost = max(len(answer.response), _CHECK_MIN_CHARGE)
        budget = self._call.task_check_bytes
        if cost > (budget if budget is not None else _TASK_CHECK_BYTES) - used:
            return None, used
        return WORKFLOW_CHECK_BYTES, used + cost

    def _bounded_check(self, answer: AnswerInput) -> tuple[AnswerCheck, bool]:
        """The check of a handler or signal, within this task's budget of workflow-code checks,
        and whether it was within that budget."""
        task = workflow.info().get_current_history_length()
        max_bytes, used = self._charged(self._task_checks, answer, task)
        if max_bytes is None:
            # Over budget: the check goes to the activity (gated, so that histories recorded
            # before the budget replay their checks in workflow code).
            if workflow.patched(BOUNDED_TASK_CHECKS_PATCH):
                return self._answer_check(max_bytes=-1), False
            return self._answer_check(), True
        self._task_checks = (task, used)
        return self._answer_check(max_bytes=max_bytes), True

    def _check(
        self,
        answer: AnswerInput,
        schema_verdict: tuple[str, CheckAnswerResult] | None = None,
        *,
        via_signal: bool,
    ) -> Accepted | Refused | Unchecked:
        """The handler's verdict (an update's, or a signal's, which may carry no token)."""
        check, in_budget = self._bounded_check(answer)
        if via_signal:
            return check.signal(answer, schema_verdict=schema_verdict)
        pending = self._pending
        # The validator's verdict stands in only within the task's budget: past it a replay,
        # which has no validator, sends the check to the activity, and so must the first run.
        if (
            in_budget
            and schema_verdict is None
            and pending is not None
            and (pending.request_id, answer.response) in self._validated
        ):
            schema_verdict = (pending.request_id, _VALIDATED)
        return check.accept(answer, schema_verdict=schema_verdict)

    async def _decide(self, answer: AnswerInput, *, via_signal: bool) -> Accepted | Refused:
        """The verdict, finishing an over-budget schema check in the ``check_answer`` activity.

        After each activity the answer is decided again against the state as it is then, so
        an answer that won meanwhile, a new round, or the end of the call is respected. One
        activity runs at a time (``ONE_SCHEMA_CHECK_PATCH``); the others wait their turn.
        """
        verdict = self._check(answer, via_signal=via_signal)
        while isinstance(verdict, Unchecked):
            if not workflow.patched(ONE_SCHEMA_CHECK_PATCH):
                verdict = await self._check_unchecked(verdict, answer, via_signal=via_signal)
                continue
            async with self._schema_check:
                # Decided again once its turn comes: an answer taken meanwhile, a new round or
                # the end of the call refuses this one without an activity.
                verdict = self._check(answer, via_signal=via_signal)
                if isinstance(verdict, Unchecked):
                    verdict = await self._check_unchecked(verdict, answer, via_signal=via_signal)
        return verdict

    async def _check_unchecked(
        self,
        unchecked: Unchecked,
        answer: AnswerInput,
        *,
        via_signal: bool,
    ) -> Accepted | Refused | Unchecked:
        """Run the schema check in the activity, then decide against the state as it is then."""
        checked = await self._check_in_activity(unchecked, answer)
        return self._check(
            answer, schema_verdict=(unchecked.request_id, checked), via_signal=via_signal
        )

    async def _check_in_activity(
        self, unchecked: Unchecked, answer: AnswerInput
    ) -> CheckAnswerResult:
        try:
            result: CheckAnswerResult = await workflow.execute_activity(
                CHECK_ANSWER_ACTIVITY,
                CheckAnswerInput(
                    response_schema=unchecked.response_schema, response=answer.response
                ),
                result_type=CheckAnswerResult,
                start_to_close_timeout=_CHECK_TIMEOUT,
                retry_policy=RetryPolicy(maximum_attempts=_CHECK_ATTEMPTS),
                summary=f"check answer to {unchecked.request_id}",
            )
            return result
        except ActivityError as err:
            problem = f"the answer could not be checked against the schema: {describe(err)}"
            return CheckAnswerResult(accepted=False, detail=problem, violation=problem)

    async def _accept(
        self, answer: AnswerInput, *, via_signal: bool = False
    ) -> AnswerReceipt | Refused:
        # A signal has no validator, so it may carry no token; an update's handler runs only
        # after its validator verified the token (and on replay the history is the proof).
        answer = self._staged.unstaged(answer)
        verdict = await self._decide(answer, via_signal=via_signal)
        if isinstance(verdict, Refused):
            return verdict
        if verdict.duplicate:
            return AnswerReceipt(
                request_id=verdict.request_id,
                round=self._answers[verdict.request_id].round,
                duplicate=True,
            )
        record = AnswerRecord(
            request_id=verdict.request_id,
            round=self._round,
            response=answer.response,
            answered_by=verdict.answered_by,
            answered_at=workflow.now(),
            verified=verdict.verified,
            channel=verdict.channel,
        )
        if self._ballot is not None:
            voted = self._vote(record)
            if isinstance(voted, AnswerReceipt):
                return voted
            record = voted
        if self._rule_verdict:
            record = replace(record, rule_verdict=self._rule_verdict)
        self._take(record)
        return AnswerReceipt(
            request_id=record.request_id,
            round=record.round,
            voters=record.voters,
            tally=self._ballot.tally().text() if self._ballot is not None else "",
        )

    def _take(self, record: AnswerRecord) -> AnswerRecord:
        """The question is answered by ``record``: keep it, and run the next round."""
        self._answers[record.request_id] = record
        self._answer = record
        self._question = None
        self._staged.clear()
        self._validated.clear()
        # Shown at once only for calls started before running_shown_late: for the others the
        # next round reports it once it has run a while (round_running), or its end shows the
        # phase after it, so a quick round costs no search-attribute write.
        self._set_phase(Phase.RUNNING, shown=not self._call.running_shown_late)
        workflow.set_current_details(running_details(self._call.tool, self._round + 1))
        return record

    def _vote(self, answer: AnswerRecord) -> AnswerRecord | AnswerReceipt:
        """Cast an accepted answer as a vote (see ``scope_tool.workflows._policy``): the
        receipt of a vote that leaves the question waiting, or the record that decides it."""
        ballot, question = self._ballot, self._question
        assert ballot is not None
        assert question is not None
        assert answer.answered_by is not None
        cast = ballot.cast(
            voter=answer.answered_by,
            response=answer.response,
            verified=answer.verified,
            at=answer.answered_at,
        )
        if ballot.request_id != question.pending.request_id:
            # An edit: the vote restarts on the new arguments, under a new request id.
            self._question = replace(
                question, pending=replace(question.pending, request_id=ballot.request_id)
            )
        decisive = cast.decisive
        if decisive is None:
            self._show_waiting()
            return AnswerReceipt(
                request_id=answer.request_id,
                round=answer.round,
                decided=False,
                voters=cast.tally.agreed,
                tally=cast.tally.text(),
            )
        return replace(
            answer,
            request_id=ballot.request_id,
            response=decisive.response,
            answered_by=decisive.voter,
            verified=decisive.verified,
            voters=(decisive.voter,) if cast.tally.denied else cast.tally.agreed,
        )

    @workflow.update(name=ANSWER)
    async def answer(self, answer: AnswerInput) -> AnswerReceipt:
        """Answer the pending question; refused answers fail the validator, not the call.

        An answer the validator could not afford to check against the schema is checked by
        an activity here; its refusal then fails the update (not the call).
        """
        result = await self._accept(answer)
        if isinstance(result, Refused):
            raise _rejection(result)
        return result

    @answer.validator
    def validate_answer(self, answer: AnswerInput) -> None:
        """Refuse a bad answer before it reaches history (see ``AnswerCheck``).

        An answer over the workflow's schema budget passes provisionally; the handler decides.
        """
        # The worker installs the identity secret from its environment, never from history
        # (trust model: scope_tool.wire.identity); absent, a token is refused not_verified.
        answer = self._staged.unstaged(answer)
        # Validators never replay, so they keep their own count (see _TASK_CHECK_BYTES); past
        # it an answer passes provisionally, and its handler decides within the task's budget.
        # A refused update adds nothing to history, so an activation is known by its history
        # length and its time together.
        task = (workflow.info().get_current_history_length(), workflow.now())
        max_bytes, used = self._charged(self._task_validations, answer, task)
        self._task_validations = (task, used)
        check = self._answer_check(max_bytes=-1 if max_bytes is None else max_bytes)
        verdict = check.validate(
            answer,
            identity_secret=installed_identity_secret(),
            now=workflow.now().timestamp(),
            worker=installed_worker_identity(),
        )
        if isinstance(verdict, Accepted) and not verdict.duplicate:
            self._validated.add((verdict.request_id, answer.response))
        if isinstance(verdict, Refused):
            raise _rejection(verdict)

    @workflow.signal(dynamic=True)
    async def on_signal(self, name: str, args: Sequence[RawValue]) -> None:
        """Every signal: ``answer`` and ``stage_answer`` with one payload; anything else dropped.

        One handler takes every signal raw, whatever its name and its number of payloads. The
        SDK calls a named handler with as many arguments as the signal carried, so ``(self,
        raw)`` raised ``TypeError`` for a signal with none or two, and that failed every
        workflow task of the call for good: any Temporal client, keys or not, could wedge a
        call. (A name without a handler would also be buffered by the SDK for the whole run.)
        """
        if name not in (ANSWER, STAGE_ANSWER, ROUND_RUNNING) or len(args) != 1:
            workflow.logger.warning(
                "dropped signal %r with %d payloads (scope_tool.ToolCall takes %r, %r or %r with"
                " one)",
                name[:100],
                len(args),
                ANSWER,
                STAGE_ANSWER,
                ROUND_RUNNING,
            )
            return
        if name == ANSWER:
            await self.answer_signal(args[0])
        elif name == STAGE_ANSWER:
            self.stage_answer(args[0])
        else:
            self.round_running(args[0])

    def round_running(self, raw: RawValue) -> None:
        """A round that has run a while says so: the search attribute shows RUNNING now.

        Only the current round of a running call counts; from anyone else (any Temporal client
        may signal) it changes nothing but what is true already.
        """
        try:
            round_number = workflow.payload_converter().from_payload(raw.payload, int)
        except Exception:  # any payload: dropped, never a failed workflow task
            return
        if round_number == self._round and self._phase is Phase.RUNNING:
            self._show_phase()

    async def answer_signal(self, raw: RawValue) -> None:
        """Fire-and-forget answer; a refused one is recorded in status and the call keeps waiting."""
        answer = self._signal_input(raw, AnswerInput)
        if answer is None:
            return
        result = await self._accept(answer, via_signal=True)
        if isinstance(result, Refused):
            self._record_refusal(answer, result)

    def stage_answer(self, raw: RawValue) -> None:
        """Keep an answer's text for the update that follows it (see ``scope_tool.wire._staging``)."""
        staged = self._signal_input(raw, StagedAnswer)
        if staged is not None:
            self._staged.add(staged.response)

    def _signal_input(self, raw: RawValue, kind: type[_SignalInput]) -> _SignalInput | None:
        """A signal's input, or ``None`` (dropped, and recorded when it did not decrypt).

        Signals take their payload raw so that one that does not convert is dropped here, where
        the call can record it, as the SDK would drop it (#25 item 5): any Temporal client may
        signal, and a payload sealed with other keys reaches this worker marked undecryptable
        (``scope_tool.config.codec.MarkUndecryptable``) rather than failing the workflow task.
        """
        try:
            return workflow.payload_converter().from_payload(raw.payload, kind)
        except PayloadDecryptionError as error:
            self._append_refusal(
                RefusedAnswer(
                    request_id=None,
                    reason=RefusalReason.UNDECRYPTABLE.value,
                    message=f"a signal was dropped: {error}"[:MAX_REFUSAL_TEXT],
                )
            )
        except Exception as error:  # what the SDK does with a signal input it cannot convert
            workflow.logger.warning("dropped a signal whose input does not convert: %s", error)
        return None

    def _record_refusal(self, answer: AnswerInput, refused: Refused) -> None:
        """Keep the newest refusals only, each capped, so status stays small (#17 item 2)."""
        self._append_refusal(
            RefusedAnswer(
                request_id=answer.request_id,
                reason=refused.reason.value,
                message=refused.message,
                answered_by=None
                if answer.answered_by is None
                else answer.answered_by[:MAX_REFUSAL_TEXT],
                detail=refused.detail,
            )
        )

    def _append_refusal(self, refused: RefusedAnswer) -> None:
        self._refused.append(refused)
        if len(self._refused) > _KEPT_REFUSALS:
            del self._refused[0]
            self._refused_dropped += 1

    def _actor(
        self, claimed: str | None, token: str | None, *, verify: bool, what: str
    ) -> str | tuple[RefusalReason, str] | None:
        """Who extends or delegates: the identity token's subject, verified with the worker's
        secret by the validator (``verify``) as an answer's is, and taken as verified by the
        handler (on replay the accepted update in history is the proof); without a token, the
        name claimed, which a call with ``require_verified`` refuses."""
        call_id = self._call.call_id
        if token is None:
            if self._call.require_verified:
                return (
                    RefusalReason.NOT_VERIFIED,
                    f"call {call_id!r} requires a verified identity: send the {what} with an"
                    " identity token (`scope-tool token issue`; --token or"
                    " SCOPE_TOOL_IDENTITY_TOKEN)",
                )
            return claimed
        name: str | None
        if verify:
            try:
                name = verify_token(
                    token,
                    secret=installed_identity_secret(),
                    now=workflow.now().timestamp(),
                    worker=installed_worker_identity(),
                ).name
            except IdentityError as error:
                return (
                    RefusalReason(error.reason),
                    f"call {call_id!r} refused the {what}'s identity: {error}",
                )
        else:
            claims = token_claims(token)
            name = claims[0] if claims is not None else None
        if claimed is not None and claimed != name:
            return (
                RefusalReason.NOT_VERIFIED,
                f"the {what} claims to be by {claimed!r} but its identity token is {name!r}'s",
            )
        return name

    @workflow.update(name=DELEGATE_QUESTION)
    def delegate_question(self, delegation: DelegateInput) -> str:
        """Hand the pending question from one assignee to others (recorded; they are notified,
        and the ScopeToolAssignee attribute follows)."""
        refused = self._delegation_refusal(delegation, verify=False)
        question = self._question
        if refused is not None or question is None:
            raise _delegation_rejection(refused)
        # Who delegates: the token's subject (the validator verified it), else the name given.
        by = self._actor(delegation.delegated_by, delegation.identity_token, verify=False, what="")
        delegated_by = by if isinstance(by, str) else delegation.delegated_by
        allowed = delegated_answerers(self._call, replace(delegation, delegated_by=delegated_by))
        self._call = replace(self._call, allowed_answerers=allowed)
        pending = question.pending
        occasion = self._occasion(pending.request_id)
        self._deadline_steps.append(
            DeadlineStep(
                kind="delegation",
                request_id=pending.request_id,
                at=workflow.now(),
                occasion=occasion,
                assignees=tuple(delegation.to),
                deadline=pending.deadline,
                by=delegated_by,
            )
        )
        self._show_assignees(allowed)
        self._show_waiting()
        self._notify("delegated", occasion=occasion)
        self._announce(pending, occasion=occasion, to=tuple(delegation.to))
        return pending.request_id

    @delegate_question.validator
    def validate_delegate_question(self, delegation: DelegateInput) -> None:
        """Refuse a delegation the call cannot take (see ``_delegation_refusal``)."""
        refused = self._delegation_refusal(delegation, verify=True)
        if refused is not None:
            raise _delegation_rejection(refused)

    def _delegation_refusal(
        self, delegation: DelegateInput, *, verify: bool
    ) -> tuple[RefusalReason, str] | None:
        """Why a delegation is refused, or ``None``: a question must be pending (the one
        named), on a call that names who may answer (not a vote), by one of them, to 1 to 32
        well-formed names."""
        call = self._call
        call_id = call.call_id
        to: object = delegation.to
        if (
            isinstance(to, str)
            or not isinstance(to, tuple | list)
            or not 1 <= len(to) <= 32
            or not all(
                isinstance(each, str) and each.strip() and len(each) <= 256 and each.isprintable()
                for each in to
            )
        ):
            return (
                RefusalReason.INVALID_JSON,
                f"a delegation names 1 to 32 people to hand the question to, got {to!r:.120}",
            )
        if self._phase.is_terminal:
            return (
                RefusalReason.FINISHED,
                f"call {call_id!r} has finished ({self._phase.value}); there is nothing to"
                " delegate",
            )
        pending = self._pending
        if pending is None or self._answered():
            return (RefusalReason.NOT_WAITING, f"call {call_id!r} is not waiting for input")
        if delegation.request_id is not None and delegation.request_id != pending.request_id:
            return (
                RefusalReason.STALE_REQUEST,
                f"request {delegation.request_id!r} is not the pending one; call {call_id!r} now"
                f" waits on {pending.request_id!r}",
            )
        if call.policy is not None and call.policy.is_quorum:
            return (
                RefusalReason.NOT_ALLOWED,
                f"call {call_id!r} is decided by a vote; its voters are the policy's",
            )
        by = self._actor(
            delegation.delegated_by, delegation.identity_token, verify=verify, what="delegation"
        )
        if isinstance(by, tuple):
            return by
        allowed = call.allowed_answerers
        if not allowed or by not in allowed:
            return (
                RefusalReason.NOT_ALLOWED,
                f"{by!r} is not an assignee of call {call_id!r}"
                + (f"; assignees: {', '.join(allowed)}" if allowed else " (anyone may answer)"),
            )
        return None

    @workflow.update(name=EXTEND_DEADLINE)
    def extend_deadline(self, extension: ExtendInput) -> ExtendReceipt:
        """Move the pending question's deadline later (recorded; reminders not sent yet move
        with it)."""
        refused = self._extension_refusal(extension, verify=False)
        question = self._question
        clock = self._clock
        if refused is not None or question is None or clock is None:
            raise _extension_rejection(refused)
        by = self._actor(extension.extended_by, extension.identity_token, verify=False, what="")
        extended_by = by if not isinstance(by, tuple) else extension.extended_by
        deadline = clock.extend(extension.seconds)
        pending = replace(question.pending, deadline=deadline)
        self._question = replace(question, pending=pending)
        self._deadline_steps.append(
            DeadlineStep(
                kind="extension",
                request_id=pending.request_id,
                at=workflow.now(),
                occasion=self._occasion(pending.request_id) - 1,
                assignees=tuple(self._call.allowed_answerers),
                deadline=deadline,
                by=extended_by,
            )
        )
        self._show_waiting()
        return ExtendReceipt(request_id=pending.request_id, deadline=deadline)

    @extend_deadline.validator
    def validate_extend_deadline(self, extension: ExtendInput) -> None:
        """Refuse an extension the call cannot take (see ``_extension_refusal``)."""
        refused = self._extension_refusal(extension, verify=True)
        if refused is not None:
            raise _extension_rejection(refused)

    def _extension_refusal(
        self, extension: ExtendInput, *, verify: bool
    ) -> tuple[RefusalReason, str] | None:
        """Why an extension is refused, or ``None``: the call's policy must allow extensions
        (``max_extension``, not yet used up), a question must be pending (the one named), and
        the person must be allowed to answer it."""
        call = self._call
        call_id = call.call_id
        seconds = extension.seconds
        if (
            isinstance(seconds, bool)
            or not isinstance(seconds, int | float)
            or not 0 < seconds < 10**9
        ):
            return (
                RefusalReason.INVALID_JSON,
                f"an extension must be a positive number of seconds, got {seconds!r}",
            )
        if self._phase.is_terminal:
            return (
                RefusalReason.FINISHED,
                f"call {call_id!r} has finished ({self._phase.value}); there is nothing to extend",
            )
        pending = self._pending
        clock = self._clock
        if pending is None or clock is None or self._answered():
            return (
                RefusalReason.NOT_WAITING,
                f"call {call_id!r} has no question with a deadline waiting",
            )
        if extension.request_id is not None and extension.request_id != pending.request_id:
            return (
                RefusalReason.STALE_REQUEST,
                f"request {extension.request_id!r} is not the pending one; call {call_id!r} now"
                f" waits on {pending.request_id!r}",
            )
        policy = call.policy
        limit = policy.max_extension if policy is not None else None
        if limit is None:
            return (
                RefusalReason.NOT_ALLOWED,
                f"call {call_id!r}'s policy allows no extension (max_extension)",
            )
        by = self._actor(
            extension.extended_by, extension.identity_token, verify=verify, what="extension"
        )
        if isinstance(by, tuple):
            return by
        allowed = call.allowed_answerers
        if allowed and by not in allowed:
            return (
                RefusalReason.NOT_ALLOWED,
                f"{by!r} may not extend call {call_id!r}; allowed: {', '.join(allowed)}",
            )
        if clock.extended + seconds > limit:
            return (
                RefusalReason.NOT_ALLOWED,
                f"call {call_id!r} may be extended by {limit:g} s in all; {clock.extended:g} s"
                f" are used, {seconds:g} s more is too much",
            )
        return None

    @workflow.update(name=WITHDRAW_QUESTION)
    async def withdraw_question(self, withdrawal: WithdrawInput) -> WithdrawReceipt:
        """Withdraw the pending question: the call ends WITHDRAWN (not a denial)."""
        pending = self._pending
        refused = withdrawal_refusal(
            self._call.call_id,
            self._phase,
            pending.request_id if pending is not None else None,
            withdrawal,
        )
        if refused is not None or pending is None:
            raise _withdrawal_rejection(refused)
        message = withdrawn_message(withdrawal, pending.request_id)
        self._finish(
            Phase.WITHDRAWN,
            output=Output.text_output(f"withdrawn: {withdrawal.reason}"),
            message=message,
        )
        return WithdrawReceipt(request_id=pending.request_id)

    @withdraw_question.validator
    def validate_withdraw_question(self, withdrawal: WithdrawInput) -> None:
        """Refuse a withdrawal with no reason, of no question, or of another question."""
        pending = self._pending
        refused = withdrawal_refusal(
            self._call.call_id,
            self._phase,
            pending.request_id if pending is not None else None,
            withdrawal,
        )
        if refused is not None:
            raise _withdrawal_rejection(refused)

    @workflow.update(name=REEVALUATE_RULES)
    def reevaluate_rules(self, request: ReevaluateInput) -> ReevaluateReceipt:
        """Apply an operator's rules to the pending approval question (recorded in history)."""
        pending = self._pending
        found = self._reevaluation(request)
        if isinstance(found[0], RefusalReason) or pending is None:
            raise _rule_rejection(found)
        text, record = found
        assert isinstance(text, str)
        self._rule_verdict = text
        if isinstance(record, AnswerRecord):
            self._take(record)
        else:
            self._show_waiting()
        return ReevaluateReceipt(
            request_id=pending.request_id, verdict=text, decided=record is not None
        )

    @reevaluate_rules.validator
    def validate_reevaluate_rules(self, request: ReevaluateInput) -> None:
        """Refuse a re-evaluation of no question, or of a question that is not an approval."""
        found = self._reevaluation(request)
        if isinstance(found[0], RefusalReason):
            raise _rule_rejection(found)

    def _reevaluation(
        self, request: ReevaluateInput
    ) -> tuple[str, AnswerRecord | None] | tuple[RefusalReason, str]:
        return reevaluation(
            self._call,
            self._phase,
            self._pending,
            request,
            at=workflow.now(),
            round_number=self._round,
        )

    @workflow.update(name=FIRST_STOP)
    async def first_stop(self) -> CallStatus:
        """Wait until the call stops (ended, or waiting for a person) and return its status.

        It only waits: it changes no state, so attaching it to a call (update-with-start) or
        sending it twice is harmless. The run waits for ``all_handlers_finished``, and every
        ending sets a terminal phase first, so a waiting ``first_stop`` always completes.
        """
        await workflow.wait_condition(lambda: self._phase is not Phase.RUNNING)
        return self.status()

    @first_stop.validator
    def validate_first_stop(self) -> None:
        """Refuse a ``first_stop`` sent for another request (see ``first_stop_update_id``)."""
        info = workflow.current_update_info()
        sent_for = update_id_digest(info.id) if info is not None else None
        if sent_for is not None and sent_for != request_digest(
            self._call.tool, self._call.arguments
        ):
            raise ApplicationError(
                f"call {self._call.call_id!r} was started for another request",
                self._call.tool,
                type="CallConflict",
                non_retryable=True,
            )

    @workflow.query(name=STATUS)
    def status(self) -> CallStatus:
        """A snapshot of the call (works on finished calls too)."""
        return CallStatus(
            call_id=self._call.call_id,
            tool=self._call.tool,
            phase=self._phase,
            round=self._round,
            pending=self._pending,
            answers=shown_answers(self._answers.values()),
            outcome=self._outcome,
            refused=tuple(self._refused),
            refused_dropped=self._refused_dropped,
            notify_errors=self._notices.errors(),
            allowed_answerers=tuple(self._call.allowed_answerers),
            principal=self._call.principal,
            require_verified=self._call.require_verified,
            route=self._route,
            policy=self._call.policy,
            policy_source=self._policy_source,
            votes=self._ballot.votes if self._ballot is not None else (),
            tally=self._ballot.tally().text() if self._ballot is not None else "",
            rule_verdict=self._rule_verdict,
            deadline_steps=tuple(self._deadline_steps),
        )


def _rejection(refused: Refused) -> ApplicationError:
    return ApplicationError(
        refused.message,
        refused.reason.value,
        refused.detail.to_json_dict(),
        type="AnswerRejected",
        non_retryable=True,
    )


def _rule_rejection(
    found: tuple[str, AnswerRecord | None] | tuple[RefusalReason, str],
) -> ApplicationError:
    reason, message = found
    if not isinstance(reason, RefusalReason) or not isinstance(message, str):
        reason, message = RefusalReason.NOT_WAITING, "the call is not waiting for input"
    return ApplicationError(message, reason.value, type="ReevaluateRefused", non_retryable=True)


def _delegation_rejection(refused: tuple[RefusalReason, str] | None) -> ApplicationError:
    reason, message = refused or (RefusalReason.NOT_WAITING, "no question is waiting")
    return ApplicationError(message, reason.value, type="DelegationRefused", non_retryable=True)


def _extension_rejection(refused: tuple[RefusalReason, str] | None) -> ApplicationError:
    reason, message = refused or (RefusalReason.NOT_WAITING, "no question is waiting")
    return ApplicationError(message, reason.value, type="ExtensionRefused", non_retryable=True)


def _withdrawal_rejection(refused: tuple[RefusalReason, str] | None) -> ApplicationError:
    reason, message = refused or (RefusalReason.NOT_WAITING, "the call is not waiting for input")
    return ApplicationError(message, reason.value, type="WithdrawalRefused", non_retryable=True)


def _not_taken_here(err: ActivityError) -> bool:
    """Whether a round offered on the main queue ran nothing, so it goes to its routed queue."""
    cause = err.cause
    if isinstance(cause, ApplicationError):
        return cause.type in _NOT_TAKEN_HERE
    return _unserved(err)


def _unserved(err: ActivityError) -> bool:
    """Whether round 1 timed out waiting for any worker to take it (nothing ran)."""
    cause = err.cause
    return isinstance(cause, ActivityTimeoutError) and cause.type is TimeoutType.SCHEDULE_TO_START


def _declared_retry_safe(err: ActivityError) -> bool:
    """Whether the lost round's last heartbeat said the tool is safe to run again (none: no)."""
    cause = err.cause
    if not isinstance(cause, ActivityTimeoutError):
        return False
    details = cause.last_heartbeat_details
    if not details or not isinstance(details[0], dict):
        return False
    return details[0].get("retry_safe") is True


def _reported_idempotency_key(err: ActivityError) -> str | None:
    """The idempotency key the lost round's tool reported before its effect, if any."""
    cause = err.cause
    if not isinstance(cause, ActivityTimeoutError):
        return None
    details = cause.last_heartbeat_details
    if not details or not isinstance(details[0], dict):
        return None
    key = details[0].get("idempotency_key")
    return key if isinstance(key, str) and key else None
