"""The one decision whether an answer is accepted: :class:`AnswerCheck` over the call's state.

The update validator, the update handler and the signal each call their method of it, and the
history reader calls the same one to show what the workflow decided.

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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from scope_tool import MAX_INPUT_BYTES, InputRequest
from scope_tool._ijson import IJSONError
from scope_tool._schema_check import CheckOutcome
from scope_tool.wire import STAGE_ANSWER, AnswerInput, CheckAnswerResult, ToolCallInput
from scope_tool.wire._status import AnswerRecord, PendingInput, Phase
from scope_tool.wire.errors import RefusalDetail, RefusalReason
from scope_tool.wire.identity import IdentityError, token_claims, token_subject, verify_token

__all__ = [
    "MAX_REFUSAL_TEXT",
    "ROUND_INPUT_LIMIT",
    "WORKFLOW_CHECK_BYTES",
    "WORKFLOW_CHECK_STEPS",
    "Accepted",
    "AnswerCheck",
    "CallState",
    "Refused",
    "Unchecked",
    "Verdict",
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
    channel: str | None = None
    """The verified token's issuer (``inbox``, ``cli``, ``email``, ``slack``); ``None`` without."""


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


@dataclass(frozen=True, slots=True, kw_only=True)
class CallState:
    """What an answer is decided against: the call's committed state at one moment.

    Attributes:
        call: The call's input: its id, who may answer (``allowed_answerers``, empty: anyone)
            and whether an answer needs an identity token (``require_verified``).
        phase: Its phase.
        pending: The pending question as status shows it (``None``: not waiting).
        pending_request: The same question as the tool made it, whose schema decides.
        carried: Encoded size of what the next round carries besides the answer (the
            arguments and the question); with it, an answer that would make that round's input
            too large for Temporal is refused as too large for this call.
        answered: The answers accepted so far, by request id.
        voted: Under a quorum policy, who has voted on the pending question's current
            arguments (they may not vote again: ``duplicate_voter``).
    """

    call: ToolCallInput
    phase: Phase
    pending: PendingInput | None
    pending_request: InputRequest | None
    carried: int | None = None
    answered: Mapping[str, AnswerRecord]
    voted: frozenset[str] = frozenset()


Verdict = Accepted | Refused | Unchecked
"""What the check says of one answer."""


class AnswerCheck:
    """The one decision whether an answer is accepted, over a :class:`CallState`.

    Each entry point of an answer has its method, and they differ only in how an identity
    token is read: :meth:`validate` (the update validator) verifies it with the worker's
    secret at ``workflow.now()``, a pure function of its inputs; :meth:`accept` (the update
    handler, which runs only after the validator accepted, and on replay without it) takes its
    subject; :meth:`signal` (signals have no validator) refuses any token, so replaying a
    history never needs the secret (see :mod:`scope_tool.wire.identity`).

    ``schema_verdict`` is ``(request id, verdict)`` from the ``check_answer`` activity; it
    stands in for the content checks only while that request is still the pending one.
    ``max_steps`` and ``max_bytes`` bound the work (``None``: unbounded, for code outside a
    workflow, such as the history reader).
    """

    __slots__ = ("_max_bytes", "_max_steps", "_state")

    def __init__(
        self,
        state: CallState,
        *,
        max_steps: int | None = WORKFLOW_CHECK_STEPS,
        max_bytes: int | None = WORKFLOW_CHECK_BYTES,
    ) -> None:
        self._state = state
        self._max_steps = max_steps
        self._max_bytes = max_bytes

    @classmethod
    def unbounded(cls, state: CallState) -> AnswerCheck:
        """A check with no step or size budget, for code outside a workflow: it decides at
        once what the workflow may have decided in the ``check_answer`` activity."""
        return cls(state, max_steps=None, max_bytes=None)

    def validate(
        self,
        answer: AnswerInput,
        *,
        identity_secret: bytes | None,
        now: float,
        worker: str | None = None,
    ) -> Verdict:
        """The update validator's verdict: a token is verified with ``identity_secret``.

        ``worker`` names the worker checking, in the refusal when it has no secret.
        """

        def verified(token: str) -> tuple[str, str | None] | IdentityError | None:
            try:
                found = verify_token(token, secret=identity_secret, now=now, worker=worker)
                return found.name, found.issuer
            except IdentityError as exc:
                return exc

        return self._decide(answer, verified, None)

    def accept(
        self, answer: AnswerInput, *, schema_verdict: tuple[str, CheckAnswerResult] | None = None
    ) -> Verdict:
        """The update handler's verdict: its validator verified the token, so take its subject.

        On replay validators do not run, and the accepted update in history is the proof.
        """
        return self._decide(answer, token_claims, schema_verdict)

    def signal(
        self, answer: AnswerInput, *, schema_verdict: tuple[str, CheckAnswerResult] | None = None
    ) -> Verdict:
        """A signal's verdict: a signal has no validator, so it may carry no identity token."""
        return self._decide(answer, None, schema_verdict)

    def _refuse(
        self,
        reason: RefusalReason,
        message: str,
        *,
        problem: str | None = None,
        schema_path: str | None = None,
        allowed: tuple[str, ...] = (),
    ) -> Refused:
        pending = self._state.pending
        message = _capped(message)
        detail = RefusalDetail(
            problem=message if problem is None else _capped(problem),
            schema_path=schema_path,
            allowed_answerers=allowed,
            pending_request_id=pending.request_id if pending is not None else None,
            phase=self._state.phase.value,
        )
        return Refused(reason=reason, message=message, detail=detail)

    def _decide(
        self,
        answer: AnswerInput,
        read_token: Callable[[str], tuple[str, str | None] | IdentityError | None] | None,
        schema_verdict: tuple[str, CheckAnswerResult] | None,
    ) -> Verdict:
        state, refuse = self._state, self._refuse
        call_id, phase, request_id = state.call.call_id, state.phase, answer.request_id
        if request_id is not None and request_id in state.answered:
            previous = state.answered[request_id]
            if _same_text(previous.response, answer) and _same_voter(previous, answer):
                return Accepted(
                    request_id=request_id,
                    duplicate=True,
                    answered_by=previous.answered_by,
                    verified=previous.verified,
                    channel=previous.channel,
                )
            return refuse(
                RefusalReason.STALE_REQUEST,
                f"request {request_id!r} was already answered"
                f" (by {previous.answered_by or 'an anonymous caller'}); this answer differs"
                " from the accepted one and was not applied",
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
        pending, pending_request = state.pending, state.pending_request
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
        who = self._answerer(answer, read_token)
        if isinstance(who, Refused):
            return who
        answered_by, verified, channel = who
        vote_refused = self._voter(answered_by)
        if vote_refused is not None:
            return vote_refused
        too_large = self._too_large(answer)
        if too_large is not None:
            return too_large
        verdict = self._content(answer, pending, pending_request, schema_verdict)
        if not isinstance(verdict, CheckAnswerResult):
            return verdict
        if verdict.reason == "invalid_json":
            return _invalid_json(refuse, verdict)
        if not verdict.accepted:
            return refuse(
                RefusalReason.SCHEMA,
                f"the answer does not satisfy the response schema"
                f" {_shown(pending.response_schema)}: response: {verdict.detail}",
                problem=verdict.violation if verdict.violation is not None else verdict.detail,
                schema_path=verdict.path,
            )
        return Accepted(
            request_id=pending.request_id,
            answered_by=answered_by,
            verified=verified,
            channel=channel,
        )

    def _answerer(
        self,
        answer: AnswerInput,
        read_token: Callable[[str], tuple[str, str | None] | IdentityError | None] | None,
    ) -> tuple[str | None, bool, str | None] | Refused:
        """Who answered, whether that is verified and through which channel (the token's
        issuer), or why the answer's identity is refused."""
        call_id, token = self._state.call.call_id, answer.identity_token
        answered_by, verified, channel = answer.answered_by, False, None
        if token is not None and read_token is None:
            return self._refuse(
                RefusalReason.NOT_VERIFIED,
                f"call {call_id!r} takes identity tokens by update only (the answer path of"
                " ToolCallHandle.answer, the CLI and the inbox), not by signal",
            )
        if token is not None and read_token is not None:
            read = read_token(token)
            if isinstance(read, IdentityError):
                return self._refuse(
                    RefusalReason(read.reason),
                    f"call {call_id!r} refused the answer's identity: {read}",
                )
            name, channel = read if read is not None else (None, None)
            if answered_by is not None and answered_by != name:
                return self._refuse(
                    RefusalReason.NOT_VERIFIED,
                    f"the answer claims to be by {answered_by!r} but its identity token is"
                    f" {name!r}'s",
                )
            answered_by, verified = name, True
        elif self._state.call.require_verified:
            return self._refuse(
                RefusalReason.NOT_VERIFIED,
                f"call {call_id!r} requires a verified identity: answer with an identity token"
                " (the inbox adds one; an operator gets one from `scope-tool token issue`)",
            )
        allowed = self._state.call.allowed_answerers
        if allowed and answered_by not in allowed:
            return self._refuse(
                RefusalReason.NOT_ALLOWED,
                f"{answered_by!r} may not answer call {call_id!r}; allowed: {', '.join(allowed)}",
                allowed=tuple(allowed),
            )
        return answered_by, verified, channel

    def _voter(self, answered_by: str | None) -> Refused | None:
        """Under a quorum policy: the refusal of an unnamed, unlisted or repeated voter."""
        call = self._state.call
        policy = call.policy
        if policy is None or not policy.is_quorum:
            return None
        if answered_by is None:
            return self._refuse(
                RefusalReason.NOT_ALLOWED,
                f"call {call.call_id!r} decides by a vote of {policy.quorum}: say who votes"
                " (answered_by, or an identity token)",
                allowed=policy.eligible,
            )
        eligible = policy.eligible
        if eligible and answered_by not in eligible:
            return self._refuse(
                RefusalReason.NOT_ALLOWED,
                f"{answered_by!r} may not vote on call {call.call_id!r}; voters:"
                f" {', '.join(eligible)}",
                allowed=eligible,
            )
        if answered_by in self._state.voted:
            return self._refuse(
                RefusalReason.DUPLICATE_VOTER,
                f"{answered_by!r} has already voted on this question of call {call.call_id!r};"
                " each voter votes once",
            )
        return None

    def _too_large(self, answer: AnswerInput) -> Refused | None:
        """The size refusals: a text that never arrived, over the I-JSON limit, or the round's."""
        call_id = self._state.call.call_id
        if answer.response_digest is not None:
            return self._refuse(
                RefusalReason.INVALID_JSON,
                f"the answer's text (SHA-256 {answer.response_digest[:16]}...) did not reach call"
                f" {call_id!r} ahead of its update (signal {STAGE_ANSWER!r}); send the answer"
                " again",
            )
        if len(answer.response) > MAX_INPUT_BYTES:
            return self._refuse(
                RefusalReason.TOO_LARGE,
                f"the answer is {len(answer.response)} bytes; the limit is {MAX_INPUT_BYTES} bytes",
            )
        carried = self._state.carried
        if carried is not None:
            total = carried + encoded_size(answer.response)
            if total > ROUND_INPUT_LIMIT:
                return self._refuse(
                    RefusalReason.TOO_LARGE,
                    f"the answer is too large for this call: with the call's arguments and"
                    f" question ({carried} bytes encoded) the next round's input would be"
                    f" {total} bytes, over the {ROUND_INPUT_LIMIT}-byte limit of what a round can"
                    " carry (Temporal's 2 MiB payload limit); send a smaller answer",
                )
        return None

    def _content(
        self,
        answer: AnswerInput,
        pending: PendingInput,
        pending_request: InputRequest,
        schema_verdict: tuple[str, CheckAnswerResult] | None,
    ) -> CheckAnswerResult | Unchecked | Refused:
        """The I-JSON and schema verdict: the activity's, or one parse here within budget."""
        if schema_verdict is not None and schema_verdict[0] == pending.request_id:
            return schema_verdict[1]
        if self._max_bytes is not None and len(answer.response) > self._max_bytes:
            return Unchecked(request_id=pending.request_id, response_schema=pending.response_schema)
        try:
            # One parse: the I-JSON check and the values the schema check needs.
            checked = pending_request.check_response(answer.response, max_steps=self._max_steps)
        except IJSONError as exc:
            verdict = CheckAnswerResult(accepted=False, reason="invalid_json", detail=str(exc))
            return _invalid_json(self._refuse, verdict)
        if checked.outcome is CheckOutcome.OVER_BUDGET:
            return Unchecked(request_id=pending.request_id, response_schema=pending.response_schema)
        return CheckAnswerResult(
            accepted=checked.accepted,
            detail=checked.detail,
            path=checked.path,
            violation=checked.violation,
        )


def _same_text(accepted: bytes, answer: AnswerInput) -> bool:
    """Whether ``answer`` repeats the accepted text (by digest when its text was staged)."""
    if answer.response_digest is None:
        return accepted == answer.response
    return hashlib.sha256(accepted).hexdigest() == answer.response_digest


def _same_voter(previous: AnswerRecord, answer: AnswerInput) -> bool:
    """Whether ``answer`` may be a repeat of ``previous``: always for a single answer; for a
    vote, only by one of the voters who decided (another voter's vote is too late)."""
    if not previous.voters:
        return True
    claimed = answer.answered_by
    if answer.identity_token is not None:
        claimed = token_subject(answer.identity_token) or claimed
    return claimed in previous.voters


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
