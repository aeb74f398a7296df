"""The public wire contract between the client, the workflow and the workers.

One input and one result type per workflow, activity, update and signal, with stable names.
The activity's result is a tagged union on ``kind``: a tool's outcome (even an error) crosses
the activity boundary as a value, never as an exception, so the workflow decides the phase with
one exhaustive ``match``. Fields added later must get defaults so recorded histories decode;
a field dropped later is ignored when an older history carries it (the converter skips unknown
members), which is how the unused ``retry_safe`` / ``contract_digest`` of round results went.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, Literal

from temporalio.common import SearchAttributeKey

from scope_tool import FailureKind, Output, Principal
from workflows._prompt import json_value

__all__ = [
    "ANSWER",
    "CALL_TOOL_ACTIVITY",
    "NOTIFY_ACTIVITY",
    "NOTIFY_WORKFLOW",
    "PHASE_KEY",
    "STATUS",
    "TOOL_KEY",
    "WORKFLOW_NAME",
    "AnswerInput",
    "AnswerReceipt",
    "CallToolInput",
    "NotifyDelivery",
    "NotifyInput",
    "RoundCancelled",
    "RoundCompleted",
    "RoundErrored",
    "RoundFailed",
    "RoundInputRequested",
    "RoundInvalid",
    "RoundResult",
    "ToolCallInput",
    "ToolStartedHeartbeat",
]

WORKFLOW_NAME: Final = "scope_tool.ToolCall"
CALL_TOOL_ACTIVITY: Final = "scope_tool.call_tool"
NOTIFY_ACTIVITY: Final = "scope_tool.notify"
NOTIFY_WORKFLOW: Final = "scope_tool.Notify"
ANSWER: Final = "answer"
STATUS: Final = "status"

TOOL_KEY: Final = SearchAttributeKey.for_keyword("ScopeToolName")
PHASE_KEY: Final = SearchAttributeKey.for_keyword("ScopeToolPhase")


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallInput:
    """The workflow's input: the untrusted request plus how this call is to be run."""

    call_id: str
    tool: str
    arguments: str | bytes = ""
    answer_timeout_seconds: float | None = None
    allowed_answerers: tuple[str, ...] = ()
    notify_url: str | None = None
    notify_initial_interval_seconds: float = 1.0
    heartbeat_timeout_seconds: float = 10.0
    tool_timeout_seconds: float = 24 * 3600.0
    max_attempts_if_retry_safe: int = 3
    # Who the agent acts for: given to the tool's Authorizer in every round (acting_for).
    principal: Principal | None = None
    # Answers must carry a valid identity token (workflows.identity); its subject answers.
    require_verified: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class AnswerInput:
    """An answer to the pending question (update ``answer`` and signal ``answer``).

    ``response`` is JSON text; ``request_id=None`` means "the question pending now".
    """

    response: bytes
    request_id: str | None = None
    answered_by: str | None = None
    # A signed identity token (workflows.identity); when present, its subject is who answers.
    identity_token: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AnswerReceipt:
    """What an accepted answer returns: which question it answered, in which round."""

    request_id: str
    round: int
    duplicate: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class CallToolInput:
    """One round of a call: the request and, from round 2 on, the committed question and answer."""

    call_id: str
    round: int
    tool: str
    arguments: str | bytes = ""
    input_request: bytes | None = None
    response: bytes | None = None
    contract_digest: str | None = None
    principal: Principal | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolStartedHeartbeat:
    """The details every heartbeat of a round carries.

    A retry-safe tool sends the first one before it runs; every round sends them periodically
    while its tool runs. If the worker is then lost, the heartbeat timeout carries the last of
    them back to the workflow, which re-runs the round only when they say ``retry_safe``.
    """

    retry_safe: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundCompleted:
    """The tool completed; ``output`` is model-visible."""

    kind: Literal["completed"] = "completed"
    output: Output = field(default_factory=Output)


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundInputRequested:
    """The tool asked for input; ``input_request`` is ``InputRequest.to_json()``, to be committed.

    ``contract_digest`` (``Contract.digest``) is recorded with the call's first question; later
    rounds refuse to resume under a tool whose definition changed since.
    """

    kind: Literal["input_requested"] = "input_requested"
    input_request: bytes
    contract_digest: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundFailed:
    """One definite unsuccessful outcome (``classify_failure``): FAILED or REJECTED."""

    kind: Literal["failure"] = "failure"
    failure_kind: FailureKind
    output: Output = field(default_factory=Output)
    message: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundInvalid:
    """The request was not admitted (unknown tool, ``Contract.prepare`` refused)."""

    kind: Literal["invalid"] = "invalid"
    message: str
    output: Output = field(default_factory=Output)


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundErrored:
    """An ordinary error: the outcome is not definite. ``evidence`` never reaches the model."""

    kind: Literal["error"] = "error"
    message: str
    evidence: Output | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundCancelled:
    """The call was cancelled while the tool ran; ``message`` says what the tool did after it."""

    kind: Literal["cancelled"] = "cancelled"
    message: str = ""


RoundResult = (
    RoundCompleted
    | RoundInputRequested
    | RoundFailed
    | RoundInvalid
    | RoundErrored
    | RoundCancelled
)
"""The activity's result: exactly one of these, told apart by ``kind``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class NotifyInput:
    """A webhook notification (POSTed as JSON to ``url``)."""

    url: str
    event: Literal["awaiting_input", "finished"]
    call_id: str
    tool: str
    phase: str
    request_id: str | None = None
    prompt: str | None = None

    def to_json_dict(self) -> dict[str, Any]:
        """The webhook's body: ``{event, call_id, tool, phase, request_id, prompt}``.

        Same conventions as the status values' ``to_json_dict`` (the prompt as a JSON value).
        """
        return {
            "event": self.event,
            "call_id": self.call_id,
            "tool": self.tool,
            "phase": self.phase,
            "request_id": self.request_id,
            "prompt": json_value(self.prompt.encode("utf-8")) if self.prompt is not None else None,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class NotifyDelivery:
    """The input of ``scope_tool.Notify``: one notice and its retry schedule.

    A call starts one such child workflow per notice and abandons it, so a slow or dead
    receiver never holds the call's outcome back.
    """

    notice: NotifyInput
    initial_interval_seconds: float = 1.0
    attempts: int = 5
