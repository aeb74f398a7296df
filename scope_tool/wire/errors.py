"""Errors of the durable runtime's client facade, and the typed reason of a refused answer.

They derive from the protocol's one base, so ``except ToolError`` catches everything scope-tool
raises for a reason of its own::

    scope_tool.errors.ToolError
    └── ToolCallsError
        ├── AnswerRejectedError     an answer was refused; nothing changed in the call
        ├── WithdrawalRefusedError  a withdrawal was refused; nothing changed in the call
        ├── CallConflictError       a call id already names a call of another request
        ├── CallNotFoundError       no call with that id exists
        ├── EncryptionConfigError   SCOPE_TOOL_ENCRYPTION_KEYS(_FILE) is malformed
        ├── PayloadDecryptionError  a payload is encrypted with a key this process lacks
        ├── SettingsError           a connection setting (flag or SCOPE_TOOL_* variable) is wrong
        └── TelemetryConfigError    tracing asked for without OpenTelemetry installed

A refusal carries a :class:`RefusalReason` and a :class:`RefusalDetail`, so a terminal, a page
or a script renders it from fields rather than from the wording of a message.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from scope_tool.errors import ToolError
from scope_tool.wire._json_form import json_members

__all__ = [
    "ANSWER_REJECTION_REASONS",
    "AnswerRejectedError",
    "CallConflictError",
    "CallNotFoundError",
    "EncryptionConfigError",
    "PayloadDecryptionError",
    "RefusalDetail",
    "RefusalReason",
    "SettingsError",
    "TelemetryConfigError",
    "ToolCallsError",
    "WithdrawalRefusedError",
]


class RefusalReason(StrEnum):
    """Why an answer was refused; the value is the stable code scripts match on."""

    DUPLICATE_VOTER = "duplicate_voter"
    """The voter already voted on this question (a call with a quorum policy)."""
    FINISHED = "finished"
    """The call has ended; it takes no more answers."""
    INVALID_JSON = "invalid_json"
    """The answer is not one I-JSON document."""
    NOT_ALLOWED = "not_allowed"
    """``answered_by`` is not among the call's allowed answerers."""
    NOT_VERIFIED = "not_verified"
    """The call requires a verified identity and the answer's token is missing, forged or
    unverifiable (or names someone other than ``answered_by``)."""
    NOT_WAITING = "not_waiting"
    """The call is running, not waiting for input."""
    SCHEMA = "schema"
    """The answer does not satisfy the pending question's response schema."""
    STALE_REQUEST = "stale_request"
    """The request id names another question (answered, replaced, or of another call)."""
    TOKEN_EXPIRED = "token_expired"
    """The answer's identity token is genuine but past its expiry."""
    TOO_LARGE = "too_large"
    """The answer is longer than ``MAX_INPUT_BYTES``."""
    UNDECRYPTABLE = "undecryptable"
    """A signal's payload is sealed with keys the worker does not have (or is not a sealed
    payload at all); it was dropped and recorded, and the call kept waiting."""


ANSWER_REJECTION_REASONS: Final = frozenset(reason.value for reason in RefusalReason)
"""Every value :attr:`AnswerRejectedError.reason` can take (the :class:`RefusalReason` values)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RefusalDetail:
    """The facts of a refusal, as fields (every one optional; which are set depends on the reason).

    Attributes:
        problem: what was wrong, without the call id or the reason code (the JSON syntax
            error, the schema violation's message, "request ... was already answered").
        schema_path: for ``schema``, the JSON pointer of the offending value ("" is the root).
        allowed_answerers: for ``not_allowed``, who may answer.
        pending_request_id: the question the call waits on now, when it waits.
        suggestion: for ``invalid_json`` of a plain word, the quoted form that would be JSON.
        phase: the call's phase when it refused (a :class:`~scope_tool.client.Phase` value), when known.
    """

    problem: str = ""
    schema_path: str | None = None
    allowed_answerers: tuple[str, ...] = ()
    pending_request_id: str | None = None
    suggestion: str | None = None
    phase: str | None = None

    def to_json_dict(self) -> dict[str, Any]:
        """The detail as plain JSON (the shape of ``detail`` in the CLI, inbox and API)."""
        return json_members(self)

    @classmethod
    def from_json(cls, value: Any) -> RefusalDetail:
        """Read :meth:`to_json_dict`'s shape back (unknown members are ignored)."""
        if not isinstance(value, dict):
            return cls()
        path = value.get("schema_path")
        pending = value.get("pending_request_id")
        suggestion = value.get("suggestion")
        phase = value.get("phase")
        return cls(
            problem=str(value.get("problem") or ""),
            schema_path=path if isinstance(path, str) else None,
            allowed_answerers=tuple(str(each) for each in value.get("allowed_answerers") or ()),
            pending_request_id=pending if isinstance(pending, str) else None,
            suggestion=suggestion if isinstance(suggestion, str) else None,
            phase=phase if isinstance(phase, str) else None,
        )


class ToolCallsError(ToolError):
    """Base of the errors raised by :class:`scope_tool.client.ToolCalls` and its handles."""


class AnswerRejectedError(ToolCallsError, ValueError):
    """The call refused an answer; the call's state is unchanged.

    Attributes:
        reason: a :class:`RefusalReason` (a ``str``, so ``reason == "schema"`` holds).
        detail: the refusal's facts as fields (:class:`RefusalDetail`).
        message: what was wrong, in words, without the call id and reason prefix.
        call_id: the call that refused it.
    """

    def __init__(
        self,
        message: str,
        *,
        reason: RefusalReason | str,
        call_id: str,
        detail: RefusalDetail | None = None,
    ) -> None:
        reason = RefusalReason(reason)
        super().__init__(f"answer to call {call_id!r} rejected ({reason}): {message}")
        self.reason = reason
        self.message = message
        self.detail = detail if detail is not None else RefusalDetail(problem=message)
        self.call_id = call_id


class WithdrawalRefusedError(ToolCallsError, ValueError):
    """The call refused to withdraw its question; the call's state is unchanged.

    Attributes:
        reason: a :class:`RefusalReason`: ``not_waiting`` (no question pending), ``finished``,
            ``stale_request`` (another question is pending now) or ``invalid_json`` (no reason
            given, or one over 1000 characters).
        message: what was wrong, in words.
        call_id: the call that refused it.
    """

    def __init__(self, message: str, *, reason: RefusalReason | str, call_id: str) -> None:
        reason = RefusalReason(reason)
        super().__init__(f"withdrawal from call {call_id!r} refused ({reason}): {message}")
        self.reason = reason
        self.message = message
        self.call_id = call_id


class CallConflictError(ToolCallsError, ValueError):
    """A call with this id exists for another tool, arguments or principal; nothing was started.

    A call id names one logical call: starting it again with the same request attaches to it,
    with a different one is this error (a new call needs a new id).
    """

    def __init__(
        self, call_id: str, *, existing_tool: str, same_tool: bool, other_principal: bool = False
    ) -> None:
        what = "other arguments" if same_tool else f"tool {existing_tool!r}"
        if other_principal:
            what = "the same request acting for another principal"
        super().__init__(
            f"call {call_id!r} already exists with {what}; it was not started again"
            " (a new call needs a new id)"
        )
        self.call_id = call_id
        self.existing_tool = existing_tool


class CallNotFoundError(ToolCallsError, LookupError):
    """No call with this id exists in the namespace."""

    def __init__(self, call_id: str) -> None:
        super().__init__(f"no tool call with id {call_id!r}")
        self.call_id = call_id


class SettingsError(ToolCallsError, ValueError):
    """A connection setting has a value it cannot take; the message names the setting."""


class EncryptionConfigError(ToolCallsError, ValueError):
    """The encryption keys setting is malformed (the message names the entry, never the key)."""


class PayloadDecryptionError(ToolCallsError):
    """A payload cannot be decrypted here: its key id is unknown, or the data is not authentic.

    Attributes:
        key_id: the key id the payload names ("" when it names none).
    """

    def __init__(self, message: str, *, key_id: str) -> None:
        super().__init__(message)
        self.key_id = key_id


class TelemetryConfigError(ToolCallsError, ValueError):
    """``SCOPE_TOOL_TRACING`` is on but the ``[otel]`` extra is not installed."""
