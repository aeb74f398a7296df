"""The one decision whether an answer is accepted, shared by the update validator and the signal.

It is pure and deterministic (it runs inside the workflow): it reads the committed question and
the answers accepted so far and returns a verdict; it never changes state. The update validator
raises the refusal so a bad answer never reaches history; the signal records it and keeps
waiting. An exact repeat of an accepted answer (same request id, same JSON text) is accepted as
a duplicate, so a client that retries after a lost reply never starts a second round.
An answer whose text was sent ahead by signal (``AnswerInput.response_digest``) is decided on
that text; the workflow puts it in before deciding, and one it could not find is refused.

The content check is bounded: an answer over :data:`WORKFLOW_CHECK_BYTES` (parsing and checking
1 MiB of decimals takes 0.25-0.5 s of CPU) or one the schema layer cannot decide within
:data:`WORKFLOW_CHECK_STEPS` is :class:`Unchecked`, and the workflow finishes the check in the
``scope_tool.check_answer`` activity, then decides again passing that verdict in, against the
state as it is *then* (another answer may have won meanwhile). Refusal texts are capped at
:data:`MAX_REFUSAL_TEXT` characters and never quote the whole schema.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from scope_tool import MAX_INPUT_BYTES, InputRequest
from scope_tool._ijson import IJSONError
from scope_tool._schema_check import CheckOutcome
from scope_tool.wire import STAGE_ANSWER, AnswerInput, CheckAnswerResult
from scope_tool.wire._status import AnswerRecord, PendingInput, Phase
from scope_tool.wire.errors import RefusalDetail, RefusalReason
from scope_tool.wire.identity import IdentityError, token_subject, verify_token

__all__ = [
    "MAX_REFUSAL_TEXT",
    "ROUND_INPUT_LIMIT",
    "WORKFLOW_CHECK_BYTES",
    "WORKFLOW_CHECK_STEPS",
    "Accepted",
    "Refused",
    "Unchecked",
    "check_answer",
    "encoded_size",
]

WORKFLOW_CHECK_STEPS: Final = 20_000
"""Schema keyword applications workflow code may spend on one answer (a few ms at most).

The schema layer counts steps deterministically, so a replay reaches the same verdict; a
1 MiB array of decimals against an ``anyOf`` schema needs ~1 000 000 and goes to the activity.
"""

WORKFLOW_CHECK_BYTES: Final = 64 * 1024
"""Largest answer whose I-JSON and schema checks run in workflow code (parsed in ~50 ms)."""

ROUND_INPUT_LIMIT: Final = 2 * 1024 * 1024 - 64 * 1024
"""Largest encoded next-round input an answer may make (Temporal's 2 MiB payload limit, less
room for the envelope): past it the round could never start (#17 item 4)."""

MAX_REFUSAL_TEXT: Final = 1000
"""Longest refusal message or problem kept (characters); longer ones end in "..."."""


_SHOWN_SCHEMA: Final = 300


def _shown(schema: bytes) -> str:
    """A short schema in full; a long one as its start and its size (never the whole of it)."""
    text = schema.decode("utf-8", "replace")
    if len(text) <= _SHOWN_SCHEMA:
        return text
    return f"{text[:_SHOWN_SCHEMA]}... ({len(schema)} bytes)"


def _capped(text: str) -> str:
    return text if len(text) <= MAX_REFUSAL_TEXT else text[: MAX_REFUSAL_TEXT - 3] + "..."


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
class Unchecked:
    """Every check passed except the schema's, which ran over the workflow's budget.

    ``request_id`` is the pending request the answer would answer; ``response_schema`` what
    the ``scope_tool.check_answer`` activity must check it against.
    """

    request_id: str
    response_schema: bytes


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
    schema_verdict: tuple[str, CheckAnswerResult] | None = None,
    max_steps: int | None = WORKFLOW_CHECK_STEPS,
    max_bytes: int | None = WORKFLOW_CHECK_BYTES,
    carried: int | None = None,
    require_verified: bool = False,
    identity_secret: bytes | None = None,
    now: float = 0.0,
    token_mode: Literal["verify", "validated", "refuse"] = "verify",
) -> Accepted | Refused | Unchecked:
    """Decide one answer against the call's committed state (see the module docstring).

    ``schema_verdict`` is ``(request id, verdict)`` from the activity; it stands in for the
    content checks only while that request is still the pending one. ``max_steps`` and
    ``max_bytes`` bound the work (``None``: unbounded, for code outside a workflow).
    ``carried`` is the encoded size of what the next round carries besides the answer (the
    arguments and the question); with it, an answer that would make that round's input too
    large for Temporal is refused as too large for this call.

    An identity token, when given (and required when ``require_verified``), is checked as
    ``token_mode`` says: ``"verify"`` (the update validator) verifies it with
    ``identity_secret`` at ``now`` (``workflow.now()``), a pure function of its inputs;
    ``"validated"`` (the update handler, which runs only after the validator accepted, and on
    replay without it) takes its subject; ``"refuse"`` (signals, which have no validator) refuses
    any token, so replaying a history never needs the secret (see :mod:`scope_tool.wire.identity`).
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
        message = _capped(message)
        detail = RefusalDetail(
            problem=message if problem is None else _capped(problem),
            schema_path=schema_path,
            allowed_answerers=allowed,
            pending_request_id=waiting_on,
            phase=phase.value,
        )
        return Refused(reason=reason, message=message, detail=detail)

    if request_id is not None and request_id in answered:
        previous = answered[request_id]
        if _same_text(previous.response, answer):
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
    if answer.response_digest is not None:
        return refuse(
            RefusalReason.INVALID_JSON,
            f"the answer's text (SHA-256 {answer.response_digest[:16]}...) did not reach call"
            f" {call_id!r} ahead of its update (signal {STAGE_ANSWER!r}); send the answer again",
        )
    if len(answer.response) > MAX_INPUT_BYTES:
        return refuse(
            RefusalReason.TOO_LARGE,
            f"the answer is {len(answer.response)} bytes; the limit is {MAX_INPUT_BYTES} bytes",
        )
    if carried is not None:
        total = carried + encoded_size(answer.response)
        if total > ROUND_INPUT_LIMIT:
            return refuse(
                RefusalReason.TOO_LARGE,
                f"the answer is too large for this call: with the call's arguments and question"
                f" ({carried} bytes encoded) the next round's input would be {total} bytes,"
                f" over the {ROUND_INPUT_LIMIT}-byte limit of what a round can carry"
                " (Temporal's 2 MiB payload limit); send a smaller answer",
            )
    if schema_verdict is not None and schema_verdict[0] == pending.request_id:
        verdict = schema_verdict[1]
    elif max_bytes is not None and len(answer.response) > max_bytes:
        return Unchecked(request_id=pending.request_id, response_schema=pending.response_schema)
    else:
        try:
            # One parse: the I-JSON check and the values the schema check needs.
            checked = pending_request.check_response(answer.response, max_steps=max_steps)
        except IJSONError as exc:
            verdict = CheckAnswerResult(accepted=False, reason="invalid_json", detail=str(exc))
            return _invalid_json(refuse, verdict)
        if checked.outcome is CheckOutcome.OVER_BUDGET:
            return Unchecked(request_id=pending.request_id, response_schema=pending.response_schema)
        verdict = CheckAnswerResult(
            accepted=checked.accepted,
            detail=checked.detail,
            path=checked.path,
            violation=checked.violation,
        )
    if verdict.reason == "invalid_json":
        return _invalid_json(refuse, verdict)
    if not verdict.accepted:
        return refuse(
            RefusalReason.SCHEMA,
            f"the answer does not satisfy the response schema {_shown(pending.response_schema)}:"
            f" response: {verdict.detail}",
            problem=verdict.violation if verdict.violation is not None else verdict.detail,
            schema_path=verdict.path,
        )
    return Accepted(request_id=pending.request_id, answered_by=answered_by, verified=verified)


def _same_text(accepted: bytes, answer: AnswerInput) -> bool:
    """Whether ``answer`` repeats the accepted text (by digest when its text was staged)."""
    if answer.response_digest is None:
        return accepted == answer.response
    return hashlib.sha256(accepted).hexdigest() == answer.response_digest


def _invalid_json(refuse: Callable[..., Refused], verdict: CheckAnswerResult) -> Refused:
    return refuse(
        RefusalReason.INVALID_JSON,
        f"the answer is not one I-JSON document: {verdict.detail}",
        problem=verdict.detail,
    )


def encoded_size(text: str | bytes) -> int:
    """Bytes ``text`` (UTF-8 JSON) takes in a payload: a JSON string, as the converter sends it."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return len(json.dumps(text))
