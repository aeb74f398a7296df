"""Errors of the durable runtime's client facade.

They derive from the protocol's one base, so ``except ToolError`` catches everything scope-tool
raises for a reason of its own::

    scope_tool.errors.ToolError
    └── ToolCallsError
        ├── AnswerRejectedError     an answer was refused; nothing changed in the call
        ├── CallNotFoundError       no call with that id exists
        ├── EncryptionConfigError   SCOPE_TOOL_ENCRYPTION_KEYS(_FILE) is malformed
        ├── PayloadDecryptionError  a payload is encrypted with a key this process lacks
        └── TelemetryConfigError    tracing asked for without OpenTelemetry installed
"""

from __future__ import annotations

from typing import Final

from scope_tool.errors import ToolError

__all__ = [
    "ANSWER_REJECTION_REASONS",
    "AnswerRejectedError",
    "CallNotFoundError",
    "EncryptionConfigError",
    "PayloadDecryptionError",
    "TelemetryConfigError",
    "ToolCallsError",
]

ANSWER_REJECTION_REASONS: Final = frozenset(
    {
        "finished",
        "invalid_json",
        "not_allowed",
        "not_waiting",
        "schema",
        "stale_request",
        "too_large",
    }
)
"""Every value :attr:`AnswerRejectedError.reason` can take."""


class ToolCallsError(ToolError):
    """Base of the errors raised by :class:`workflows.ToolCalls` and its handles."""


class AnswerRejectedError(ToolCallsError, ValueError):
    """The call refused an answer; the call's state is unchanged.

    Attributes:
        reason: one of :data:`ANSWER_REJECTION_REASONS` (``"schema"``, ``"stale_request"``...).
        call_id: the call that refused it.
    """

    def __init__(self, message: str, *, reason: str, call_id: str) -> None:
        super().__init__(f"answer to call {call_id!r} rejected ({reason}): {message}")
        self.reason = reason
        self.call_id = call_id


class CallNotFoundError(ToolCallsError, LookupError):
    """No call with this id exists in the namespace."""

    def __init__(self, call_id: str) -> None:
        super().__init__(f"no tool call with id {call_id!r}")
        self.call_id = call_id


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
