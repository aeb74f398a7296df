"""The one decision whether an answer is accepted, shared by the update validator and the signal.

It is pure and deterministic (it runs inside the workflow): it reads the committed question and
the answers accepted so far and returns a verdict; it never changes state. The update validator
raises the refusal so a bad answer never reaches history; the signal records it and keeps
waiting. An exact repeat of an accepted answer (same request id, same JSON text) is accepted as
a duplicate, so a client that retries after a lost reply never starts a second round.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from scope_tool import MAX_INPUT_BYTES, InputRequest, check_ijson
from scope_tool._schema import SchemaValidationError
from scope_tool.errors import ToolError
from workflows._status import AnswerRecord, PendingInput, Phase
from workflows.errors import RefusalDetail, RefusalReason
from workflows.identity import IdentityError, token_subject, verify_token
from workflows.wire import AnswerInput

__all__ = ["Accepted", "Refused", "check_answer"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Accepted:
    """The answer is taken (or is an exact repeat of one already taken).

    ``answered_by`` is who answered: the verified token subject when a token came with it
    (then ``verified``), else the claimed name.
    """

    request_id: str
    duplicate: bool = False
    answered_by: str | None = None
    verified: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Refused:
    """The answer is refused: a typed reason, what was wrong in words, and the facts as fields."""

    reason: RefusalReason
    message: str
    detail: RefusalDetail


def check_answer(
    answer: AnswerInput,
    *,
    call_id: str,
    phase: Phase,
    pending: PendingInput | None,
    pending_request: InputRequest | None,
    answered: Mapping[str, AnswerRecord],
    allowed_answerers: Sequence[str],
    require_verified: bool = False,
    identity_secret: bytes | None = None,
    now: float = 0.0,
    token_mode: Literal["verify", "validated", "refuse"] = "verify",
) -> Accepted | Refused:
    """Decide one answer against the call's committed state (see the module docstring).

    An identity token, when given (and required when ``require_verified``), is checked as
    ``token_mode`` says: ``"verify"`` (the update validator) verifies it with
    ``identity_secret`` at ``now`` (``workflow.now()``), a pure function of its inputs;
    ``"validated"`` (the update handler, which runs only after the validator accepted, and on
    replay without it) takes its subject; ``"refuse"`` (signals, which have no validator) refuses
    any token, so replaying a history never needs the secret (see :mod:`workflows.identity`).
    """
    request_id = answer.request_id
    waiting_on = pending.request_id if pending is not None else None

    def refuse(
        reason: RefusalReason,
        message: str,
        *,
        problem: str | None = None,
        schema_path: str | None = None,
        allowed: tuple[str, ...] = (),
    ) -> Refused:
        detail = RefusalDetail(
            problem=message if problem is None else problem,
            schema_path=schema_path,
            allowed_answerers=allowed,
            pending_request_id=waiting_on,
            phase=phase.value,
        )
        return Refused(reason=reason, message=message, detail=detail)

    if request_id is not None and request_id in answered:
        previous = answered[request_id]
        if previous.response == answer.response:
            return Accepted(
                request_id=request_id,
                duplicate=True,
                answered_by=previous.answered_by,
                verified=previous.verified,
            )
        return refuse(
            RefusalReason.STALE_REQUEST,
            f"request {request_id!r} was already answered"
            f" (by {previous.answered_by or 'an anonymous caller'}); this answer differs from"
            " the accepted one and was not applied",
        )
    if phase.is_terminal:
        return refuse(
            RefusalReason.FINISHED,
            f"call {call_id!r} has finished ({phase.value}); it takes no more answers",
        )
    if request_id is not None and not request_id.startswith(f"{call_id}/"):
        return refuse(
            RefusalReason.STALE_REQUEST,
            f"request {request_id!r} does not belong to call {call_id!r}",
        )
    if pending is None or pending_request is None:
        return refuse(
            RefusalReason.NOT_WAITING,
            f"call {call_id!r} is not waiting for input (phase {phase.value})",
        )
    if request_id is not None and request_id != pending.request_id:
        return refuse(
            RefusalReason.STALE_REQUEST,
            f"request {request_id!r} is not the pending one;"
            f" call {call_id!r} now waits on {pending.request_id!r}",
        )
    answered_by, verified = answer.answered_by, False
    token = answer.identity_token
    if token is not None and token_mode == "refuse":
        return refuse(
            RefusalReason.NOT_VERIFIED,
            f"call {call_id!r} takes identity tokens by update only (the answer path of"
            " ToolCallHandle.answer, the CLI and the inbox), not by signal",
        )
    if token is not None:
        if token_mode == "validated":
            # The update validator verified this token in this same activation; on replay
            # validators do not run, and the accepted update in history is the proof.
            name = token_subject(token)
        else:
            try:
                name = verify_token(token, secret=identity_secret, now=now).name
            except IdentityError as exc:
                reason = RefusalReason(exc.reason)
                return refuse(reason, f"call {call_id!r} refused the answer's identity: {exc}")
        if answered_by is not None and answered_by != name:
            return refuse(
                RefusalReason.NOT_VERIFIED,
                f"the answer claims to be by {answered_by!r} but its identity token is {name!r}'s",
            )
        answered_by, verified = name, True
    elif require_verified:
        return refuse(
            RefusalReason.NOT_VERIFIED,
            f"call {call_id!r} requires a verified identity: answer with an identity token"
            " (the inbox adds one; an operator gets one from `scope-tool token issue`)",
        )
    if allowed_answerers and answered_by not in allowed_answerers:
        return refuse(
            RefusalReason.NOT_ALLOWED,
            f"{answered_by!r} may not answer call {call_id!r};"
            f" allowed: {', '.join(allowed_answerers)}",
            allowed=tuple(allowed_answerers),
        )
    if len(answer.response) > MAX_INPUT_BYTES:
        return refuse(
            RefusalReason.TOO_LARGE,
            f"the answer is {len(answer.response)} bytes; the limit is {MAX_INPUT_BYTES} bytes",
        )
    try:
        check_ijson(answer.response)
    except ValueError as exc:
        return refuse(
            RefusalReason.INVALID_JSON,
            f"the answer is not one I-JSON document: {exc}",
            problem=str(exc),
        )
    try:
        pending_request.continuation(answer.response)
    except (ToolError, ValueError) as exc:
        cause = exc.__cause__
        shown = pending.response_schema.decode("utf-8", "replace")
        message = f"the answer does not satisfy the response schema {shown}: {exc}"
        if isinstance(cause, SchemaValidationError) and cause.path is not None:
            return refuse(
                RefusalReason.SCHEMA,
                message,
                problem=cause.violation or str(exc),
                schema_path=cause.path,
            )
        return refuse(RefusalReason.SCHEMA, message, problem=str(exc))
    return Accepted(request_id=pending.request_id, answered_by=answered_by, verified=verified)
