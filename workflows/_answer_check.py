"""The one decision whether an answer is accepted, shared by the update validator and the signal.

It is pure and deterministic (it runs inside the workflow): it reads the committed question and
the answers accepted so far and returns a verdict; it never changes state. The update validator
raises the refusal so a bad answer never reaches history; the signal records it and keeps
waiting. An exact repeat of an accepted answer (same request id, same JSON text) is accepted as
a duplicate, so a client that retries after a lost reply never starts a second round.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scope_tool import MAX_INPUT_BYTES, InputRequest
from scope_tool.errors import ToolError
from workflows._messages import AnswerInput
from workflows._status import AnswerRecord, PendingInput, Phase

__all__ = ["Accepted", "Refused", "check_answer"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Accepted:
    """The answer is taken (or is an exact repeat of one already taken)."""

    request_id: str
    duplicate: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Refused:
    """The answer is refused; ``reason`` is a stable code, ``message`` says what was wrong."""

    reason: str
    message: str


def check_answer(
    answer: AnswerInput,
    *,
    call_id: str,
    phase: Phase,
    pending: PendingInput | None,
    pending_request: InputRequest | None,
    answered: Mapping[str, AnswerRecord],
    allowed_answerers: Sequence[str],
) -> Accepted | Refused:
    """Decide one answer against the call's committed state (see the module docstring)."""
    request_id = answer.request_id
    if request_id is not None and request_id in answered:
        previous = answered[request_id]
        if previous.response == answer.response:
            return Accepted(request_id=request_id, duplicate=True)
        return Refused(
            reason="stale_request",
            message=f"request {request_id!r} was already answered"
            f" (by {previous.answered_by or 'an anonymous caller'}); this answer differs from"
            " the accepted one and was not applied",
        )
    if phase.is_terminal:
        return Refused(
            reason="finished",
            message=f"call {call_id!r} has finished ({phase.value}); it takes no more answers",
        )
    if request_id is not None and not request_id.startswith(f"{call_id}/"):
        return Refused(
            reason="stale_request",
            message=f"request {request_id!r} does not belong to call {call_id!r}",
        )
    if pending is None or pending_request is None:
        return Refused(
            reason="not_waiting",
            message=f"call {call_id!r} is not waiting for input (phase {phase.value})",
        )
    if request_id is not None and request_id != pending.request_id:
        return Refused(
            reason="stale_request",
            message=f"request {request_id!r} is not the pending one;"
            f" call {call_id!r} now waits on {pending.request_id!r}",
        )
    if allowed_answerers and answer.answered_by not in allowed_answerers:
        return Refused(
            reason="not_allowed",
            message=f"{answer.answered_by!r} may not answer call {call_id!r};"
            f" allowed: {', '.join(allowed_answerers)}",
        )
    if len(answer.response) > MAX_INPUT_BYTES:
        return Refused(
            reason="too_large",
            message=f"the answer is {len(answer.response)} bytes;"
            f" the limit is {MAX_INPUT_BYTES} bytes",
        )
    problem = _json_problem(answer.response)
    if problem is not None:
        return Refused(
            reason="invalid_json", message=f"the answer is not one I-JSON document: {problem}"
        )
    try:
        pending_request.continuation(answer.response)
    except (ToolError, ValueError) as exc:
        return Refused(
            reason="schema",
            message=f"the answer does not satisfy the response schema"
            f" {pending.response_schema.decode('utf-8', 'replace')}: {exc}",
        )
    return Accepted(request_id=pending.request_id)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        raise ValueError("duplicate object key")
    return found


_DECODER = json.JSONDecoder(object_pairs_hook=_unique_keys, parse_constant=_refuse_constant)


def _json_problem(response: bytes) -> str | None:
    """A first, cheap I-JSON check so malformed text is reported as such, not as a schema miss.

    ``InputRequest.continuation`` applies the full protocol rules afterwards.
    """
    try:
        text = response.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"invalid UTF-8 at byte {exc.start}"
    try:
        _DECODER.decode(text)
    except ValueError as exc:
        return str(exc)
    except RecursionError:
        # Deeper than Python's recursive scanner goes, yet maybe valid (the protocol allows
        # 10 000 levels): ``InputRequest.continuation`` decides, with its iterative parser.
        return None
    return None
