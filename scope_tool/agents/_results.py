"""What a model should see of a durable call: :func:`model_result`.

One mapping, so every adapter tells the model the same thing:

* COMPLETED: the tool's output.
* FAILED, REJECTED, INVALID: the tool's model-visible output (a denial's reason, a refusal's
  message), flagged as an error.
* EXPIRED, CANCELLED: one short sentence.
* ERRORED: one generic sentence. The diagnostic message and the evidence a failing tool left
  are for operators; they never reach the model.
* A call waiting for a person: a "waiting for approval" (or "for input") message with its call
  id, so the agent can say what it waits on and a later turn can pick the result up.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from scope_tool import APPROVAL_PROMPT_KIND, MediaBlock, Output
from scope_tool.client import CallOutcome, CallStatus, Phase

__all__ = ["ModelResult", "model_result"]

_EMPTY: dict[Phase, str] = {
    Phase.COMPLETED: "The tool completed without output.",
    Phase.FAILED: "The tool call failed.",
    Phase.REJECTED: "The tool call was rejected.",
    Phase.INVALID: "The tool call was refused: its arguments were not valid.",
}
_SENTENCES: dict[Phase, str] = {
    Phase.EXPIRED: "The tool call expired: nobody answered its question before the deadline.",
    Phase.CANCELLED: "The tool call was cancelled before it finished.",
    Phase.WITHDRAWN: "The tool call's question was withdrawn before anyone answered it.",
    Phase.ERRORED: "The tool call ended with an internal error; its outcome is unknown.",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelResult:
    """The model-facing view of one call.

    Attributes:
        text: What to put in the provider's tool-result message.
        is_error: Whether to flag the result as an error (Anthropic ``is_error``).
        phase: The call's phase when it was read.
        call_id: The durable call's id, when known (always for a status).
        request_id: The pending question's id while the call waits for a person.
    """

    text: str
    is_error: bool
    phase: Phase
    call_id: str | None = None
    request_id: str | None = None

    @property
    def waiting(self) -> bool:
        """True while the call waits for a person."""
        return self.phase is Phase.AWAITING_INPUT

    @property
    def ended(self) -> bool:
        """True once the call has ended (its text will not change again)."""
        return self.phase.is_terminal

    def openai_message(self, tool_call_id: str) -> dict[str, Any]:
        """The Chat Completions ``tool`` message answering the model's call ``tool_call_id``."""
        return {"role": "tool", "tool_call_id": tool_call_id, "content": self.text}

    def anthropic_block(self, tool_use_id: str) -> dict[str, Any]:
        """The Anthropic ``tool_result`` content block for the model's ``tool_use_id``."""
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": tool_use_id,
            "content": self.text,
        }
        if self.is_error:
            block["is_error"] = True
        return block


def model_result(call: CallOutcome | CallStatus, *, call_id: str | None = None) -> ModelResult:
    """Map a call's outcome, or its current status, to what a model should see.

    Args:
        call: A finished call's :class:`~scope_tool.client.CallOutcome`, or a
            :class:`~scope_tool.client.CallStatus` (ended, waiting for a person, or still running).
        call_id: The call's id, for an outcome (a status carries its own).

    Raises:
        TypeError: ``call`` is neither.
    """
    if isinstance(call, CallStatus):
        if call.outcome is not None:
            return model_result(call.outcome, call_id=call.call_id)
        pending = call.pending
        if pending is not None:
            what = "approval" if _is_approval(pending.prompt) else "input"
            return ModelResult(
                text=f"The call of {call.tool} is waiting for {what} from a person"
                f" (call id {call.call_id}); its result will come once they answer.",
                is_error=False,
                phase=Phase.AWAITING_INPUT,
                call_id=call.call_id,
                request_id=pending.request_id,
            )
        return ModelResult(
            text=f"The call of {call.tool} is still running (call id {call.call_id}).",
            is_error=False,
            phase=call.phase,
            call_id=call.call_id,
        )
    if not isinstance(call, CallOutcome):
        raise TypeError(f"expected a CallOutcome or CallStatus, got {type(call).__name__}")
    phase = call.phase
    if phase in _SENTENCES:
        return ModelResult(text=_SENTENCES[phase], is_error=True, phase=phase, call_id=call_id)
    text = _output_text(call.output) or _EMPTY.get(phase, "")
    return ModelResult(
        text=text, is_error=phase is not Phase.COMPLETED, phase=phase, call_id=call_id
    )


def _output_text(output: Output) -> str:
    """The output as text; a media block (which a text channel cannot carry) is named."""
    text = output.text()
    if text is not None:
        return text
    parts: list[str] = []
    for block in output.content:
        if isinstance(block, MediaBlock):
            where = f" at {block.uri}" if block.uri else ""
            parts.append(f"[{block.mime_type} attachment{where}]")
        else:
            parts.append(block.text)
    return "".join(parts)


def _is_approval(prompt: bytes) -> bool:
    try:
        value = json.loads(prompt)
    except ValueError:
        return False
    return isinstance(value, dict) and value.get("kind") == APPROVAL_PROMPT_KIND
