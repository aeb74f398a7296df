"""Whole model turns: start a turn's tool calls together, return when each has stopped.

A model turn emits several tool calls at once. :func:`run_turn` starts them concurrently as
durable calls whose ids come from the turn id and the model's tool-call id
(:func:`call_id_for`), so a retried turn (the agent crashed, the request was resent) attaches
to the calls it already started and never runs a tool twice. It returns one :class:`Turn` once
every call has *stopped*: ended, or waiting for a person.

The first stop of one call is :meth:`scope_tool.client.ToolCalls.start_and_wait` (the one way
to start a call and wait for it to stop): one update-with-start round trip of the workflow's
``first_stop`` update, falling back to a start and the polled ``status`` query where the server
lacks update-with-start.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Final, Unpack

from scope_tool import Registry, Request
from scope_tool.agents._results import ModelResult, model_result
from scope_tool.agents.errors import TurnError
from scope_tool.client import CallOptions, CallStatus, Phase, ToolCallHandle, ToolCalls
from scope_tool.client._first_stop import wait_for_stop as _poll_until_stopped

__all__ = ["ModelToolCall", "Turn", "TurnCall", "call_id_for", "run_turn", "wait_for_stop"]

_MAX_ID_BYTES: Final = 1000
_SEPARATOR: Final = ":"


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelToolCall:
    """One tool call as a model emitted it.

    Attributes:
        tool_call_id: The provider's id for the call (OpenAI ``call_...``, Anthropic
            ``toolu_...``); unique within the turn.
        name: The tool's name.
        arguments: The arguments as the model sent them: JSON text, or an already decoded
            mapping (encoded again as compact JSON).
    """

    tool_call_id: str
    name: str
    arguments: str | bytes | Mapping[str, Any] = ""

    def request(self) -> Request:
        """The untrusted :class:`~scope_tool.Request` this call proposes."""
        arguments = self.arguments
        if isinstance(arguments, Mapping):
            try:
                arguments = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
            except (TypeError, ValueError) as exc:
                raise TurnError(
                    f"tool call {self.tool_call_id!r}: arguments are not JSON-compatible: {exc}"
                ) from None
        return Request(name=self.name, arguments=arguments)


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnCall:
    """One call of a turn, where it stopped.

    Attributes:
        tool_call_id: The model's id for the call.
        name: The tool's name.
        call_id: The durable call's id (:func:`call_id_for`).
        status: The call's status at its stop.
    """

    tool_call_id: str
    name: str
    call_id: str
    status: CallStatus

    @property
    def ended(self) -> bool:
        """The call has ended; :attr:`result` is final."""
        return self.status.phase.is_terminal

    @property
    def waiting(self) -> bool:
        """The call waits for a person (``status.pending`` says for what)."""
        return self.status.phase is Phase.AWAITING_INPUT

    @property
    def result(self) -> ModelResult:
        """What the model should see now (:func:`~scope_tool.agents.model_result`)."""
        return model_result(self.status)


@dataclass(frozen=True, slots=True, kw_only=True)
class Turn:
    """A turn's calls, in the order the model emitted them, each ended or waiting.

    A call may also still be running when :func:`run_turn` was given a ``max_wait``.
    """

    turn_id: str
    calls: tuple[TurnCall, ...]

    @property
    def ended(self) -> tuple[TurnCall, ...]:
        """The calls that have ended."""
        return tuple(call for call in self.calls if call.ended)

    @property
    def waiting(self) -> tuple[TurnCall, ...]:
        """The calls waiting for a person."""
        return tuple(call for call in self.calls if call.waiting)

    @property
    def running(self) -> tuple[TurnCall, ...]:
        """The calls still running (only after a ``max_wait``)."""
        return tuple(call for call in self.calls if not call.ended and not call.waiting)

    @property
    def complete(self) -> bool:
        """Every call has ended: the model can be given every result now."""
        return all(call.ended for call in self.calls)

    def results(self) -> dict[str, ModelResult]:
        """What the model should see, keyed by its tool-call id."""
        return {call.tool_call_id: call.result for call in self.calls}


def call_id_for(turn_id: str, tool_call_id: str) -> str:
    """The durable call id for a model's tool call in a turn: ``"{turn_id}:{tool_call_id}"``.

    The same turn and tool-call id always give the same call id, which is what makes a
    retried turn attach instead of running again.

    Raises:
        TurnError: either id is blank, or the call id would exceed 1000 UTF-8 bytes.
    """
    for what, value in (("turn id", turn_id), ("tool call id", tool_call_id)):
        if not isinstance(value, str) or not value.strip():
            raise TurnError(f"{what} must be a non-empty string, got {value!r}")
    call_id = f"{turn_id}{_SEPARATOR}{tool_call_id}"
    try:
        size = len(call_id.encode("utf-8"))
    except UnicodeEncodeError:
        raise TurnError(f"call id {call_id[:80]!r} is not valid UTF-8 text") from None
    if size > _MAX_ID_BYTES:
        raise TurnError(f"call id {call_id[:80]!r}... is {size} bytes; the limit is 1000")
    return call_id


async def wait_for_stop(handle: ToolCallHandle, *, max_wait: timedelta | None = None) -> CallStatus:
    """Poll ``status`` until the call stops (ended or waiting), or ``max_wait`` passes.

    For a call already started elsewhere; :meth:`scope_tool.client.ToolCalls.start_and_wait`
    needs no polling.
    """
    return await _poll_until_stopped(handle, max_wait=max_wait)


async def run_turn(
    calls: ToolCalls,
    turn_id: str,
    tool_calls: Sequence[ModelToolCall],
    *,
    registry: Registry,
    max_wait: timedelta | None = None,
    **options: Unpack[CallOptions],
) -> Turn:
    """Start a model turn's tool calls together and return when each has stopped.

    Args:
        calls: The durable runtime's facade.
        turn_id: Identifies the model turn (e.g. the agent run id plus the turn number); with
            each tool-call id it makes the call id (:func:`call_id_for`).
        tool_calls: The turn's calls, as the model emitted them.
        registry: The tools the model was offered: a name outside it is refused before
            anything starts (a model may invent one; it must not become a durable call).
        max_wait: Return after this long even if some calls still run.
        **options: :class:`scope_tool.client.CallOptions` (``answer_timeout``, ``allowed_answerers``,
            ``notify_url``, ``principal``, ``require_verified``) as
            :meth:`scope_tool.client.ToolCalls.start`, for every call of the turn (``principal=None``
            takes :func:`scope_tool.current_principal`: who the agent acts for in this task).

    Raises:
        TurnError: the turn is malformed (a blank or repeated tool-call id, a bad id, a tool the
            registry does not hold); nothing was started.
    """
    if isinstance(tool_calls, ModelToolCall) or not all(
        isinstance(each, ModelToolCall) for each in tool_calls
    ):
        raise TurnError("tool_calls must be a sequence of ModelToolCall")
    known = frozenset(definition.name for definition in registry.definitions())
    seen: set[str] = set()
    planned: list[tuple[ModelToolCall, str, Request]] = []
    for tool_call in tool_calls:
        call_id = call_id_for(turn_id, tool_call.tool_call_id)
        if tool_call.tool_call_id in seen:
            raise TurnError(f"tool call id {tool_call.tool_call_id!r} appears twice in the turn")
        seen.add(tool_call.tool_call_id)
        if tool_call.name not in known:
            shown = tool_call.name if len(tool_call.name) <= 80 else tool_call.name[:80] + "..."
            raise TurnError(
                f"tool call {tool_call.tool_call_id!r}: unknown tool {shown!r};"
                f" the registry holds: {', '.join(sorted(known)) or 'no tools'}"
            )
        try:
            request = tool_call.request()
        except (TypeError, ValueError) as exc:
            raise TurnError(f"tool call {tool_call.tool_call_id!r}: {exc}") from exc
        planned.append((tool_call, call_id, request))
    stops = await asyncio.gather(
        *(
            calls.start_and_wait(request, call_id=call_id, max_wait=max_wait, **options)
            for _, call_id, request in planned
        )
    )
    statuses = [status for _, status in stops]
    return Turn(
        turn_id=turn_id,
        calls=tuple(
            TurnCall(
                tool_call_id=tool_call.tool_call_id,
                name=tool_call.name,
                call_id=call_id,
                status=status,
            )
            for (tool_call, call_id, _), status in zip(planned, statuses, strict=True)
        ),
    )
