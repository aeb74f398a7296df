"""One call seen from a client: follow it, answer it (the one answer path), cancel it.

:meth:`ToolCallHandle.answer` is the path every answer takes (CLI, inbox, MCP, client apps):
it pins the pending question, sends the answer as an update with an id (so a retry is never
applied twice), waits out Temporal's in-flight update limit, and returns the workflow's one
verdict or raises it as :class:`~scope_tool.wire.errors.AnswerRejectedError` (reason and detail).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta
from typing import Any, TypedDict, Unpack

from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowQueryFailedError,
    WorkflowQueryRejectedError,
    WorkflowUpdateFailedError,
)
from temporalio.common import QueryRejectCondition
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from scope_tool import MAX_INPUT_BYTES, Rule, wire
from scope_tool._read_only import ReadOnly
from scope_tool._text import control_character
from scope_tool.client._answer_text import (
    MAX_NAME_BYTES,
    AnswerText,
    encode_answer,
    is_short_text,
)
from scope_tool.client._busy import retry_while_busy, task_failing
from scope_tool.client._closed import closed_outcome, closed_phase
from scope_tool.client._keywords import refuse_unknown_keywords
from scope_tool.client._routing import round_progress, worker_wait
from scope_tool.client.history import CallHistory, fetch_call_history
from scope_tool.wire._staging import text_digest
from scope_tool.wire._status import CallOutcome, CallStatus
from scope_tool.wire.errors import (
    ANSWER_REJECTION_REASONS,
    AnswerRejectedError,
    CallNotFoundError,
    RefusalDetail,
    RefusalReason,
    ToolCallsError,
    WithdrawalRefusedError,
)
from scope_tool.wire.identity import token_subject
from scope_tool.workflows._answer_check import ROUND_INPUT_LIMIT, encoded_size

__all__ = ["ToolCallHandle"]


class AnswerSender(TypedDict, total=False):
    """Which question an answer is for and who sends it: the keywords of
    :meth:`ToolCallHandle.answer` besides the response (described there), which
    :meth:`ToolCallHandle.signal_answer` takes too."""

    request_id: str | None
    answered_by: str | None
    identity_token: str | None


class ToolCallHandle:
    """One call: follow it, answer it, cancel it."""

    call_id: ReadOnly[str] = ReadOnly("The call's id (its workflow id).")
    attached: ReadOnly[bool] = ReadOnly(
        "True when :meth:`ToolCalls.start` found this call already started (same request)."
    )
    workflow_handle: ReadOnly[WorkflowHandle[Any, CallOutcome]] = ReadOnly(
        "The underlying Temporal handle (history, describe...)."
    )

    def __init__(
        self,
        handle: WorkflowHandle[Any, CallOutcome],
        *,
        attached: bool = False,
        client: Client | None = None,
    ) -> None:
        self._workflow_handle = handle
        self._call_id = handle.id  # a call's id is its workflow's
        self._attached = attached
        self._client = client
        # The question pending in the last status read, so answer() pins it without a read.
        self._pending_seen: str | None = None

    async def status(self, *, wait_for_worker: timedelta = timedelta(seconds=10)) -> CallStatus:
        """The call's current snapshot (query ``status``).

        When the round in flight has been scheduled for a few seconds and no worker took it,
        ``waiting_for_worker`` says which worker the call waits for (tool, contract, queue).

        A query is answered by a worker. For a finished call with no worker polling, the
        snapshot is rebuilt from the recorded outcome after ``wait_for_worker`` (phase,
        rounds and outcome; answers then come back empty).

        Raises:
            CallNotFoundError: no such call.
            ToolCallsError: the call still runs and no worker answered within
                ``wait_for_worker``.
        """
        try:
            status: CallStatus = await self._workflow_handle.query(
                wire.STATUS,
                result_type=CallStatus,
                rpc_timeout=wait_for_worker,
                # A terminated or timed-out call would replay its last state (a question still
                # pending): refused here, its status is built from how it closed.
                reject_condition=QueryRejectCondition.NOT_COMPLETED_CLEANLY,
            )
            self._pending_seen = status.pending.request_id if status.pending else None
            if self._client is None:
                return status
            waiting = await worker_wait(self._client, self._workflow_handle, status)
            if waiting:
                return replace(status, waiting_for_worker=waiting)
            progress = await round_progress(self._client, self._workflow_handle, status)
            return replace(status, progress=progress) if progress else status
        except WorkflowQueryRejectedError as err:
            self._pending_seen = None
            return await self._closed_status(err, wait_for_worker)
        except RPCError as err:
            if err.status == RPCStatusCode.NOT_FOUND or task_failing(err):
                raise self._translate(err) from err
            unanswered = err
        except WorkflowQueryFailedError as err:
            raise ToolCallsError(f"status of call {self._call_id!r} failed: {err}") from err
        description = await self._workflow_handle.describe()
        if description.status in (None, WorkflowExecutionStatus.RUNNING):
            raise ToolCallsError(
                f"status of call {self._call_id!r} needs a worker on task queue"
                f" {description.task_queue!r} and none answered: {unanswered.message}"
            ) from unanswered
        outcome = await self.result()
        return CallStatus(
            call_id=self._call_id,
            tool=description.typed_search_attributes.get(wire.TOOL_KEY) or "",
            phase=outcome.phase,
            round=outcome.rounds,
            outcome=outcome,
        )

    async def _closed_status(
        self, rejected: WorkflowQueryRejectedError, wait_for_worker: timedelta
    ) -> CallStatus:
        """The snapshot of a call closed without an outcome: terminal, nothing pending."""
        execution = rejected.status
        if execution is None:
            execution = (
                await self._workflow_handle.describe()
            ).status or WorkflowExecutionStatus.TERMINATED
        try:  # the answers and round it had, replayed by a worker (none polling: left empty)
            replayed: CallStatus | None = await self._workflow_handle.query(
                wire.STATUS, result_type=CallStatus, rpc_timeout=wait_for_worker
            )
        except (RPCError, WorkflowQueryFailedError):
            replayed = None
        outcome = await closed_outcome(
            self._workflow_handle, execution, rounds=replayed.round if replayed else 0
        )
        if replayed is not None:  # closed: nothing pending or in flight; refusals stay on record
            return replace(
                replayed,
                phase=outcome.phase,
                outcome=outcome,
                pending=None,
                route=None,
                waiting_for_worker=None,
            )
        description = await self._workflow_handle.describe()
        return CallStatus(
            call_id=self._call_id,
            tool=description.typed_search_attributes.get(wire.TOOL_KEY) or "",
            phase=outcome.phase,
            round=0,
            outcome=outcome,
        )

    async def answer(
        self,
        response: Any,
        *,
        request_id: str | None = None,
        answered_by: str | None = None,
        identity_token: str | None = None,
    ) -> wire.AnswerReceipt:
        """Answer the pending question and return once the call has accepted it.

        This is the one answer path: the CLI, the inbox and the API call it and render its
        verdict. Without ``request_id`` the handle pins the question pending now (from the
        status it last read, else by reading it), so every answer is bound to one question and
        carries an update id: a retried answer is accepted as a duplicate, never applied to
        the next question.

        Args:
            response: a JSON-compatible value (``True``, ``{"ok": 1}``), or ``bytes`` / ``str``
                holding JSON text (so the string answer "yes" is ``'"yes"'``); an
                :class:`AnswerText` from :func:`encode_answer` is sent without checking again.
            request_id: the question answered; ``None`` means the one pending now.
            answered_by: who answers (checked against the call's ``allowed_answerers``).
            identity_token: a signed token (:mod:`scope_tool.wire.identity`) the workflow verifies;
                its subject, not ``answered_by``, is then who answered (``answered_by``
                defaults to it). Required by calls started with ``require_verified``.

        Raises:
            AnswerRejectedError: refused (``.reason`` says why, ``.detail`` the facts); the
                call is unchanged.
            CallNotFoundError: no such call.
        """
        raw = (
            response
            if isinstance(response, AnswerText)
            else encode_answer(response, call_id=self._call_id)
        )
        if len(raw) > MAX_INPUT_BYTES:
            # Refused here, not in the workflow: an update rejection echoes its input, and one
            # past Temporal's 2 MB payload limit would fail the call's workflow task instead.
            raise AnswerRejectedError(
                f"the answer is {len(raw)} bytes; the limit is {MAX_INPUT_BYTES} bytes",
                reason=RefusalReason.TOO_LARGE,
                call_id=self._call_id,
            )
        if encoded_size(raw) > ROUND_INPUT_LIMIT:
            # Escapes can double an answer on the wire; past Temporal's payload limit the
            # update's refusal (which echoes it) would fail the call's workflow task.
            raise AnswerRejectedError(
                f"the answer is too large for this call: {encoded_size(raw)} bytes once encoded"
                f" as a JSON string, over the {ROUND_INPUT_LIMIT}-byte limit of what a round"
                " can carry (Temporal's 2 MiB payload limit)",
                reason=RefusalReason.TOO_LARGE,
                call_id=self._call_id,
            )
        if request_id is not None and not is_short_text(request_id):
            raise AnswerRejectedError(
                f"request id {request_id[:80]!r} is not a request id (UTF-8 text of at most"
                f" {MAX_NAME_BYTES} bytes), so it names no question of this call",
                reason=RefusalReason.STALE_REQUEST,
                call_id=self._call_id,
            )
        if answered_by is not None and not is_short_text(answered_by):
            raise ValueError(
                f"answered_by must be UTF-8 text of at most {MAX_NAME_BYTES} bytes,"
                f" got {answered_by[:80]!r}"
            )
        if answered_by is not None and (char := control_character(answered_by)) is not None:
            # A name is shown on one line (status, history, the Web UI): a newline would forge
            # a line and ESC rewrite one.
            raise ValueError(
                f"answered_by must not contain control characters; {answered_by[:80]!r}"
                f" has {char!r}"
            )
        if identity_token is not None:
            if not isinstance(identity_token, str) or not is_short_text(identity_token):
                raise AnswerRejectedError(
                    f"the identity token is not a token (text of at most {MAX_NAME_BYTES} bytes)",
                    reason=RefusalReason.NOT_VERIFIED,
                    call_id=self._call_id,
                )
            if answered_by is None:
                answered_by = token_subject(identity_token)
        identity = (answered_by, identity_token)
        if request_id is not None:
            return await self._send_answer(raw, request_id, identity)
        remembered = self._pending_seen
        if remembered is None:
            return await self._send_answer(raw, await self._pending_now(), identity)
        try:
            return await self._send_answer(raw, remembered, identity)
        except AnswerRejectedError as refusal:
            if refusal.reason is not RefusalReason.STALE_REQUEST:
                raise
        # The question remembered from the last status was answered or replaced meanwhile:
        # "the one pending now" is another one, so read it and answer that.
        return await self._send_answer(raw, await self._pending_now(), identity)

    async def _pending_now(self) -> str | None:
        """The pending request id; ``None`` (the workflow then decides) when not readable.

        A finished call is refused from the snapshot just read, with the words and detail the
        workflow gives (an update to a closed workflow would only say "already completed").
        """
        try:
            status = await self.status()
        except CallNotFoundError:
            raise
        except ToolCallsError:
            return None
        if status.phase.is_terminal:
            raise AnswerRejectedError(
                f"call {self._call_id!r} has finished ({status.phase.value});"
                " it takes no more answers",
                reason=RefusalReason.FINISHED,
                call_id=self._call_id,
                detail=RefusalDetail(
                    problem="the call has finished; it takes no more answers",
                    phase=status.phase.value,
                ),
            )
        return status.pending.request_id if status.pending is not None else None

    async def _send_answer(
        self, raw: bytes, request_id: str | None, identity: tuple[str | None, str | None]
    ) -> wire.AnswerReceipt:
        answered_by, identity_token = identity
        digest = text_digest(raw)
        # Who answers is part of the id: under a quorum policy two voters' identical answers
        # are two votes (the same voter's retry is still the same update).
        voter = text_digest(f"{answered_by or ''}\0{identity_token or ''}".encode())
        update_id = (
            None if request_id is None else f"answer:{request_id}:{digest[:32]}:{voter[:16]}"
        )
        answer = wire.AnswerInput(
            response=raw,
            request_id=request_id,
            answered_by=answered_by,
            identity_token=identity_token,
        )
        if len(raw) > wire.STAGE_ABOVE_BYTES:
            # The text goes ahead by signal and the update names it: an update's input is
            # echoed in the reply of the workflow task that takes it (see scope_tool.wire._staging).
            await self._stage(raw)
            answer = replace(answer, response=b"", response_digest=digest)

        async def send() -> wire.AnswerReceipt:
            receipt: wire.AnswerReceipt = await self._workflow_handle.execute_update(
                wire.ANSWER, answer, id=update_id, result_type=wire.AnswerReceipt
            )
            return receipt

        try:
            # Many answers at once meet Temporal's in-flight update limit; they wait their turn
            # and then get their own verdict (most often "that question was answered").
            receipt = await retry_while_busy(send)
        except WorkflowUpdateFailedError as err:
            cause = err.cause
            if isinstance(cause, ApplicationError) and cause.type == "AnswerRejected":
                raise _refusal(cause, call_id=self._call_id) from None
            raise ToolCallsError(f"answer to call {self._call_id!r} failed: {cause}") from err
        except RPCError as err:
            raise self._translate(err, answering=True) from err
        self._pending_seen = None
        return receipt

    async def _stage(self, raw: bytes) -> None:
        try:
            await self._workflow_handle.signal(wire.STAGE_ANSWER, wire.StagedAnswer(response=raw))
        except RPCError as err:
            raise self._translate(err, answering=True) from err

    async def signal_answer(self, response: Any, **sender: Unpack[AnswerSender]) -> None:
        """Send an answer without waiting for its verdict (signal ``answer``).

        It takes the keywords of :meth:`answer` (``request_id``, ``answered_by``,
        ``identity_token``), but an identity token goes by update only: by signal it is
        refused. A refused signal is recorded in ``status().refused`` and the call keeps
        waiting.
        """
        refuse_unknown_keywords(sender, AnswerSender.__optional_keys__, "answer keywords")
        request_id = sender.get("request_id")
        answered_by = sender.get("answered_by")
        identity_token = sender.get("identity_token")
        # JSON text as bytes goes as it is: the workflow checks it and records a refusal.
        raw = (
            bytes(response)
            if isinstance(response, bytes | bytearray | memoryview)
            else encode_answer(response, call_id=self._call_id)
        )
        try:
            if identity_token is not None and answered_by is None:
                answered_by = token_subject(identity_token)
            await self._workflow_handle.signal(
                wire.ANSWER,
                wire.AnswerInput(
                    response=raw,
                    request_id=request_id,
                    answered_by=answered_by,
                    identity_token=identity_token,
                ),
            )
        except RPCError as err:
            raise self._translate(err) from err

    async def history(self) -> CallHistory:
        """The call's audit trail, read from its event history (works with no worker running)."""
        return await fetch_call_history(self._workflow_handle, call_id=self._call_id)

    async def result(self) -> CallOutcome:
        """Wait for the call to end and return its outcome (every phase is a normal result)."""
        try:
            return await self._workflow_handle.result()
        except RPCError as err:
            raise self._translate(err) from err
        except WorkflowFailureError as err:
            latest = await self._workflow_handle.describe()  # the call's latest run
            execution = latest.status
            if closed_phase(execution) is not None and execution is not None:
                # Terminated, timed out: an outcome all the same, saying what closed it.
                return await closed_outcome(self._workflow_handle, execution)
            if latest.run_id != self._workflow_handle.result_run_id and execution in (
                WorkflowExecutionStatus.RUNNING,
                WorkflowExecutionStatus.COMPLETED,
            ):
                # An operator reset the call: its run was replaced; follow the new one.
                # The handle's own client: WorkflowHandle has no public accessor for it.
                client = self._workflow_handle._client
                follow = client.get_workflow_handle(self._call_id, result_type=CallOutcome)
                return await ToolCallHandle(follow).result()
            raise ToolCallsError(
                f"call {self._call_id!r} ended without an outcome: {err.cause}"
            ) from err

    async def delegate(
        self,
        to: Sequence[str],
        *,
        delegated_by: str | None = None,
        request_id: str | None = None,
        identity_token: str | None = None,
    ) -> str:
        """Hand the pending question from ``delegated_by`` (one of the call's named answerers
        now) to ``to``: they may answer instead of ``delegated_by`` (recorded in status and
        history, notified, and the ``ScopeToolAssignee`` attribute follows). Returns the
        question's request id.

        With ``identity_token`` (``scope-tool token issue``), the workflow verifies it as it
        verifies an answer's, and its subject delegates (``delegated_by`` may be left out; if
        given, it must be the subject). A call started with ``require_verified`` takes no
        delegation without one.

        Raises:
            ToolCallsError: refused (not an assignee, a call anyone may answer or decided by a
                vote, no question waiting, ``request_id`` not the pending one, the call
                finished; ``not_verified`` or ``token_expired`` for a missing, forged or
                expired token); nothing changed. The message says which.
            ValueError: ``to`` is not 1 to 32 names, or neither ``delegated_by`` nor
                ``identity_token`` says who delegates (nothing was sent).
        """
        names = tuple(to) if not isinstance(to, str) else ()
        if not 1 <= len(names) <= 32 or not all(isinstance(n, str) and n.strip() for n in names):
            raise ValueError(f"to must name 1 to 32 people, got {to!r:.120}")
        if delegated_by is None and identity_token is not None:
            delegated_by = token_subject(identity_token)
        if delegated_by is None:
            raise ValueError("say who delegates: delegated_by, or an identity_token")
        delegation = wire.DelegateInput(
            to=names,
            delegated_by=delegated_by,
            request_id=request_id,
            identity_token=identity_token,
        )

        result: str = await self._deadline_update(
            wire.DELEGATE_QUESTION, delegation, str, refused="DelegationRefused", what="delegation"
        )
        return result

    async def extend(
        self,
        by: timedelta,
        *,
        extended_by: str | None = None,
        request_id: str | None = None,
        identity_token: str | None = None,
    ) -> wire.ExtendReceipt:
        """Move the pending question's deadline ``by`` later (recorded in status and history).

        The call's policy must allow it (``ApprovalPolicy.max_extension``, the total), and
        ``extended_by`` must be allowed to answer the question (when the call names who may).
        Reminders not sent yet move with the deadline. With ``identity_token`` the workflow
        verifies it as it verifies an answer's, and its subject extends (``extended_by``, if
        given, must be the subject); a call started with ``require_verified`` takes no
        extension without one.

        Raises:
            ToolCallsError: refused (no extension allowed or left, not allowed, no question
                waiting, ``request_id`` not the pending one, the call finished;
                ``not_verified`` or ``token_expired`` for a missing, forged or expired token);
                nothing changed. The message says which.
            ValueError: ``by`` is not a positive duration (nothing was sent).
        """
        if not isinstance(by, timedelta) or by <= timedelta(0):
            raise ValueError(f"by must be a positive timedelta, got {by!r}")
        extension = wire.ExtendInput(
            seconds=by.total_seconds(),
            extended_by=extended_by,
            request_id=request_id,
            identity_token=identity_token,
        )

        receipt: wire.ExtendReceipt = await self._deadline_update(
            wire.EXTEND_DEADLINE,
            extension,
            wire.ExtendReceipt,
            refused="ExtensionRefused",
            what="extension",
        )
        return receipt

    async def _deadline_update(
        self, update: str, argument: object, result_type: type, *, refused: str, what: str
    ) -> Any:
        """Send an extend/delegate update; a refusal becomes ``ToolCallsError`` naming why."""

        async def send() -> Any:
            return await self._workflow_handle.execute_update(
                update, argument, result_type=result_type
            )

        try:
            return await retry_while_busy(send)
        except WorkflowUpdateFailedError as err:
            cause = err.cause
            if isinstance(cause, ApplicationError) and cause.type == refused:
                details = cause.details
                reason = str(details[0]) if details else RefusalReason.NOT_WAITING.value
                raise ToolCallsError(
                    f"{what} of call {self._call_id!r} refused ({reason}): {cause.message}"
                ) from None
            raise ToolCallsError(f"{what} of call {self._call_id!r} failed: {cause}") from err
        except RPCError as err:
            raise self._translate(err, answering=True) from err

    async def withdraw(
        self, reason: str, *, withdrawn_by: str | None = None, request_id: str | None = None
    ) -> wire.WithdrawReceipt:
        """Withdraw the pending question: the call ends WITHDRAWN, which is not a denial.

        The caller (the agent) or an operator withdraws a question nobody should answer any
        more; ``reason`` is shown on every surface and to the model (the outcome's output is
        ``withdrawn: REASON``), and later answers are refused ``finished``.

        Args:
            reason: why, in words (1 to 1000 characters).
            withdrawn_by: who withdraws, recorded in the outcome's message.
            request_id: the question withdrawn; ``None`` means the one pending now. With it, a
                question answered or replaced meanwhile is refused ``stale_request``.

        Raises:
            WithdrawalRefusedError: no question is pending, the call has finished, or
                ``request_id`` is not the pending one; nothing changed.
            ValueError: ``reason`` or ``withdrawn_by`` is malformed (nothing was sent).
        """
        if not isinstance(reason, str) or not reason.strip() or len(reason) > 1000:
            raise ValueError(f"reason must be text of 1 to 1000 characters, got {reason!r:.80}")
        if withdrawn_by is not None and (
            not is_short_text(withdrawn_by) or control_character(withdrawn_by) is not None
        ):
            raise ValueError(
                f"withdrawn_by must be a short name without control characters,"
                f" got {withdrawn_by!r:.80}"
            )
        withdrawal = wire.WithdrawInput(
            reason=reason, withdrawn_by=withdrawn_by, request_id=request_id
        )

        async def send() -> wire.WithdrawReceipt:
            receipt: wire.WithdrawReceipt = await self._workflow_handle.execute_update(
                wire.WITHDRAW_QUESTION, withdrawal, result_type=wire.WithdrawReceipt
            )
            return receipt

        try:
            return await retry_while_busy(send)
        except WorkflowUpdateFailedError as err:
            cause = err.cause
            if isinstance(cause, ApplicationError) and cause.type == "WithdrawalRefused":
                details = cause.details
                raise WithdrawalRefusedError(
                    cause.message,
                    reason=str(details[0]) if details else RefusalReason.NOT_WAITING.value,
                    call_id=self._call_id,
                ) from None
            raise ToolCallsError(f"withdrawal from call {self._call_id!r} failed: {cause}") from err
        except RPCError as err:
            translated = self._translate(err, answering=True)
            if isinstance(translated, AnswerRejectedError):
                raise WithdrawalRefusedError(
                    "the call has finished; there is nothing to withdraw",
                    reason=RefusalReason.FINISHED,
                    call_id=self._call_id,
                ) from err
            raise translated from err

    async def reevaluate(
        self, rules: Sequence[Rule], *, by: str | None = None
    ) -> wire.ReevaluateReceipt:
        """Apply ``rules`` to the call's pending approval question (an operator's command).

        The call's own rules were fixed when it started, so a rule change never releases a
        waiting call by itself; this does, on purpose, and is recorded in the call's history
        with ``by``. A rule that allows or denies decides the question (``decided``); ``ask``
        or no match leaves it waiting, with the new verdict in ``status().rule_verdict``.

        Raises:
            ToolCallsError: the call is not waiting on an approval question, or has finished
                (nothing changed).
        """
        request = wire.ReevaluateInput(rules=tuple(rules), by=by)

        async def send() -> wire.ReevaluateReceipt:
            receipt: wire.ReevaluateReceipt = await self._workflow_handle.execute_update(
                wire.REEVALUATE_RULES, request, result_type=wire.ReevaluateReceipt
            )
            return receipt

        try:
            return await retry_while_busy(send)
        except WorkflowUpdateFailedError as err:
            cause = err.cause
            if isinstance(cause, ApplicationError) and cause.type == "ReevaluateRefused":
                details = cause.details
                reason = str(details[0]) if details else RefusalReason.NOT_WAITING.value
                raise ToolCallsError(
                    f"re-evaluation of call {self._call_id!r} refused ({reason}): {cause.message}"
                ) from None
            raise ToolCallsError(
                f"re-evaluation of call {self._call_id!r} failed: {cause}"
            ) from err
        except RPCError as err:
            translated = self._translate(err, answering=True)
            if isinstance(translated, AnswerRejectedError):
                raise ToolCallsError(
                    f"re-evaluation of call {self._call_id!r} refused (finished): the call has"
                    " finished"
                ) from err
            raise translated from err

    async def cancel(self) -> None:
        """Ask the call to stop; it ends CANCELLED (a running tool is cancelled first)."""
        try:
            await self._workflow_handle.cancel()
        except RPCError as err:
            raise self._translate(err) from err

    def _translate(self, err: RPCError, *, answering: bool = False) -> Exception:
        finished = (
            "already completed" in err.message
            or "closed" in err.message
            or "aborted by closing workflow" in err.message  # an answer that lost the race
            or "workflow is closing" in err.message  # RESOURCE_EXHAUSTED while it finishes
        )
        if err.status == RPCStatusCode.NOT_FOUND and not finished:
            return CallNotFoundError(self._call_id)
        if answering and finished:
            return AnswerRejectedError(
                "the call has finished; it takes no more answers",
                reason=RefusalReason.FINISHED,
                call_id=self._call_id,
            )
        if task_failing(err):
            return ToolCallsError(
                f"call {self._call_id!r} cannot be read or answered now: its workflow task keeps"
                " failing on the workers; the worker's log or the call's page in the Temporal"
                " Web UI says why, and the call resumes once a worker completes the task"
                f" (Temporal: {err.message})"
            )
        return ToolCallsError(f"call {self._call_id!r}: {err.message}")


def _refusal(cause: ApplicationError, *, call_id: str) -> ToolCallsError:
    """The workflow's refusal (message, reason, detail) as the facade's typed error."""
    details = cause.details
    reason = str(details[0]) if details else RefusalReason.NOT_WAITING.value
    if reason not in ANSWER_REJECTION_REASONS:
        # A workflow newer than this client: keep its words.
        return ToolCallsError(f"answer to call {call_id!r} refused ({reason}): {cause.message}")
    detail = RefusalDetail.from_json(details[1]) if len(details) > 1 else None
    return AnswerRejectedError(cause.message, reason=reason, call_id=call_id, detail=detail)
