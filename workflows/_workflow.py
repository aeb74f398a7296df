"""``scope_tool.ToolCall``: one logical tool call as one Temporal workflow.

Each round is one activity (``scope_tool.call_tool``) whose result is a tagged union. When the
tool asks for input, the ``InputRequest`` is committed as workflow state under a request id
(``"{call_id}/r{round}"``) and the call waits for an answer (update or signal ``answer``), the
optional answer deadline (EXPIRED) or cancellation (CANCELLED). An accepted answer re-enters the
tool in the next round, through ``InputRequest.continuation`` and ``Contract.prepare`` inside
the activity.

The module is deterministic: no I/O, time from ``workflow.now()``, no global state. It runs
outside Temporal's sandbox (``sandboxed=False``; see ``workers.workflow_runner``): it is the only
workflow a worker runs, user code never runs in it, and replaying recorded histories in the test
suite is what guards its determinism. The imports stay marked passed-through so the module still
loads in a sandboxed runner.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Literal, cast

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    CancelledError,
)
from temporalio.exceptions import TimeoutError as ActivityTimeoutError

with workflow.unsafe.imports_passed_through():
    from typing import assert_never

    from scope_tool import FailureKind, InputRequest, Output
    from workflows._answer_check import Accepted, Refused, check_answer
    from workflows._notices import Notices
    from workflows._status import (
        AnswerRecord,
        CallOutcome,
        CallStatus,
        PendingInput,
        Phase,
        RefusedAnswer,
    )
    from workflows.identity import installed_identity_secret
    from workflows.wire import (
        ANSWER,
        CALL_TOOL_ACTIVITY,
        PHASE_KEY,
        STATUS,
        TOOL_KEY,
        WORKFLOW_NAME,
        AnswerInput,
        AnswerReceipt,
        CallToolInput,
        NotifyInput,
        RoundCancelled,
        RoundCompleted,
        RoundErrored,
        RoundFailed,
        RoundInputRequested,
        RoundInvalid,
        RoundResult,
        ToolCallInput,
    )

__all__ = ["ToolCallWorkflow"]


@workflow.defn(name=WORKFLOW_NAME, sandboxed=False)
class ToolCallWorkflow:
    """Runs the rounds of one call; see the module docstring for the life of a call."""

    @workflow.init
    def __init__(self, call: ToolCallInput) -> None:
        self._call = call
        self._phase = Phase.RUNNING
        self._round = 0
        self._pending: PendingInput | None = None
        self._pending_request: InputRequest | None = None
        self._answer: AnswerRecord | None = None
        self._answers: dict[str, AnswerRecord] = {}
        self._refused: list[RefusedAnswer] = []
        self._notices = Notices(call)
        self._outcome: CallOutcome | None = None
        self._contract_digest: str | None = None

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
        self._notify("finished")
        await self._notices.handed_over()
        await workflow.wait_condition(workflow.all_handlers_finished)
        return outcome

    async def _drive(self) -> CallOutcome:
        call = self._call
        input_request: bytes | None = None
        response: bytes | None = None
        while True:
            self._round += 1
            result = await self._run_round(
                CallToolInput(
                    call_id=call.call_id,
                    round=self._round,
                    tool=call.tool,
                    arguments=call.arguments,
                    input_request=input_request,
                    response=response,
                    contract_digest=self._contract_digest,
                    principal=call.principal,
                )
            )
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
                    answer = await self._wait_for_answer(result.input_request)
                    if answer is None:
                        return self._finish(
                            Phase.EXPIRED,
                            message=f"no answer to {self._round_request_id()} before the deadline",
                        )
                    input_request, response = result.input_request, answer.response
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

    async def _run_round(self, round_input: CallToolInput) -> RoundResult | CallOutcome:
        """One activity; a lost worker re-runs the round only for a tool declared retry-safe."""
        call = self._call
        attempt = 0
        while True:
            attempt += 1
            try:
                result: RoundResult = await workflow.execute_activity(
                    CALL_TOOL_ACTIVITY,
                    round_input,
                    result_type=cast(type, RoundResult),
                    start_to_close_timeout=timedelta(seconds=call.tool_timeout_seconds),
                    heartbeat_timeout=timedelta(seconds=call.heartbeat_timeout_seconds),
                    retry_policy=RetryPolicy(maximum_attempts=1),
                    cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
                    summary=f"{call.tool} round {round_input.round}",
                )
                return result
            except ActivityError as err:
                if isinstance(err.cause, CancelledError):
                    raise asyncio.CancelledError() from err
                retry_safe = _declared_retry_safe(err)
                if retry_safe and attempt < call.max_attempts_if_retry_safe:
                    workflow.logger.warning(
                        "round %d of %s lost its worker; re-running (tool is retry-safe)",
                        round_input.round,
                        call.call_id,
                    )
                    continue
                return self._finish(
                    Phase.ERRORED,
                    message=(
                        f"outcome unknown: round {round_input.round} of tool {call.tool!r}"
                        f" did not report back ({_describe(err)}); the tool is not marked"
                        " retry-safe, so it was not run again"
                        if not retry_safe
                        else f"outcome unknown: round {round_input.round} of tool"
                        f" {call.tool!r} failed {attempt} times ({_describe(err)})"
                    ),
                )

    async def _wait_for_answer(self, input_request: bytes) -> AnswerRecord | None:
        call = self._call
        request = InputRequest.from_json(input_request)
        asked_at = workflow.now()
        timeout = (
            timedelta(seconds=call.answer_timeout_seconds)
            if call.answer_timeout_seconds is not None
            else None
        )
        self._pending = PendingInput(
            request_id=self._round_request_id(),
            prompt=request.prompt,
            response_schema=request.response_schema,
            asked_at=asked_at,
            deadline=asked_at + timeout if timeout is not None else None,
        )
        self._pending_request = request
        self._answer = None
        self._set_phase(Phase.AWAITING_INPUT)
        workflow.set_current_details(
            f"**{call.tool}** waits for input on `{self._pending.request_id}`\n\n"
            f"```json\n{request.prompt.decode('utf-8', 'replace')}\n```"
        )
        self._notify("awaiting_input")
        try:
            await workflow.wait_condition(lambda: self._answer is not None, timeout=timeout)
        except TimeoutError:
            return None
        return self._answer

    def _round_request_id(self) -> str:
        return f"{self._call.call_id}/r{self._round}"

    def _set_phase(self, phase: Phase) -> None:
        if phase is not self._phase:
            self._phase = phase
            workflow.upsert_search_attributes([PHASE_KEY.value_set(phase.value)])

    def _finish(
        self,
        phase: Phase,
        *,
        output: Output | None = None,
        failure_kind: FailureKind | None = None,
        message: str = "",
        evidence: Output | None = None,
    ) -> CallOutcome:
        self._pending = None
        self._pending_request = None
        self._outcome = CallOutcome(
            phase=phase,
            output=output if output is not None else Output(),
            failure_kind=failure_kind,
            message=message,
            rounds=self._round,
            evidence=evidence,
        )
        self._set_phase(phase)
        workflow.set_current_details(
            f"**{self._call.tool}** {phase.value}" + (f": {message}" if message else "")
        )
        return self._outcome

    # --- notifications -------------------------------------------------------------------

    def _notify(self, event: str) -> None:
        """Send a webhook notice (see ``workflows._notices``); it never fails or delays the call."""
        url = self._call.notify_url
        if url is None:
            return
        pending = self._pending
        self._notices.send(
            NotifyInput(
                url=url,
                event="finished" if event == "finished" else "awaiting_input",
                call_id=self._call.call_id,
                tool=self._call.tool,
                phase=self._phase.value,
                request_id=pending.request_id if pending is not None else None,
                prompt=pending.prompt.decode("utf-8", "replace") if pending is not None else None,
            ),
            round_number=self._round,
        )

    # --- answers ---------------------------------------------------------------------------

    def _check(
        self, answer: AnswerInput, *, token_mode: Literal["verify", "validated", "refuse"]
    ) -> Accepted | Refused:
        return check_answer(
            answer,
            call_id=self._call.call_id,
            phase=self._phase,
            pending=self._pending,
            pending_request=self._pending_request,
            answered=self._answers,
            allowed_answerers=self._call.allowed_answerers,
            require_verified=self._call.require_verified,
            # Installed by the worker from its environment, never from history (trust model:
            # workflows.identity); absent, a token is refused not_verified.
            identity_secret=installed_identity_secret() if token_mode == "verify" else None,
            now=workflow.now().timestamp(),
            token_mode=token_mode,
        )

    def _accept(self, answer: AnswerInput, *, via_signal: bool = False) -> AnswerReceipt | Refused:
        verdict = self._check(answer, token_mode="refuse" if via_signal else "validated")
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
        )
        self._answers[record.request_id] = record
        self._answer = record
        self._pending = None
        self._pending_request = None
        self._set_phase(Phase.RUNNING)
        workflow.set_current_details(f"**{self._call.tool}** running round {self._round + 1}")
        return AnswerReceipt(request_id=record.request_id, round=record.round)

    @workflow.update(name=ANSWER)
    def answer(self, answer: AnswerInput) -> AnswerReceipt:
        """Answer the pending question; refused answers fail the validator, not the call."""
        result = self._accept(answer)
        if isinstance(result, Refused):
            raise _rejection(result)
        return result

    @answer.validator
    def validate_answer(self, answer: AnswerInput) -> None:
        """Refuse a bad answer before it reaches history (see ``check_answer``)."""
        verdict = self._check(answer, token_mode="verify")
        if isinstance(verdict, Refused):
            raise _rejection(verdict)

    @workflow.signal(name=ANSWER)
    def answer_signal(self, answer: AnswerInput) -> None:
        """Fire-and-forget answer; a refused one is recorded in status and the call keeps waiting."""
        result = self._accept(answer, via_signal=True)
        if isinstance(result, Refused):
            self._refused.append(
                RefusedAnswer(
                    request_id=answer.request_id,
                    reason=result.reason.value,
                    message=result.message,
                    answered_by=answer.answered_by,
                    detail=result.detail,
                )
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
            answers=tuple(self._answers.values()),
            outcome=self._outcome,
            refused=tuple(self._refused),
            notify_errors=self._notices.errors(),
            allowed_answerers=tuple(self._call.allowed_answerers),
            principal=self._call.principal,
            require_verified=self._call.require_verified,
        )


def _rejection(refused: Refused) -> ApplicationError:
    return ApplicationError(
        refused.message,
        refused.reason.value,
        refused.detail.to_json_dict(),
        type="AnswerRejected",
        non_retryable=True,
    )


def _declared_retry_safe(err: ActivityError) -> bool:
    """Whether the lost round's last heartbeat said the tool is safe to run again (none: no)."""
    cause = err.cause
    if not isinstance(cause, ActivityTimeoutError):
        return False
    details = cause.last_heartbeat_details
    if not details or not isinstance(details[0], dict):
        return False
    return details[0].get("retry_safe") is True


def _describe(err: BaseException) -> str:
    parts: list[str] = []
    current: BaseException | None = err
    while current is not None and len(parts) < 4:
        parts.append(f"{type(current).__name__}: {current}")
        current = current.__cause__
    return "; ".join(parts)
