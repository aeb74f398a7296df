"""A :class:`~scope_tool.Registry`'s tools as Google ADK tools, run as durable calls.

Needs the ``google-adk`` extra (``pip install 'scope-tool[google-adk]'``). Every function call
the model makes becomes a durable call (:class:`scope_tool.client.ToolCalls`) whose id comes
from the conversation (by default the ADK session: app, user, session id) and ADK's
function-call id, so a re-run of the same call (ADK re-runs a call once its confirmation
arrives; a resumed or retried invocation re-runs it too) attaches to the call it already made
and never runs the tool twice.

* A call that ends returns the text :func:`~scope_tool.agents.model_result` gives (ADK hands
  the model ``{"result": text}``); an unsuccessful one (failed, rejected, denied, invalid,
  expired...) returns ``{"error": text}``, the way ADK's own tools report an error.
* A call that waits for a person uses ADK's tool confirmation: the tool calls
  ``tool_context.request_confirmation`` (hint: what to answer; payload: ``call_id``,
  ``request_id``, ``tool``, ``prompt``, ``response_schema``), so the runner emits its
  ``adk_request_confirmation`` function call, and the model is told the call waits.
* The client's confirmation (a ``FunctionResponse`` named ``adk_request_confirmation``) makes
  ADK re-run the call; the re-run attaches to the same durable call and answers its question:
  ``confirmed`` approves, not ``confirmed`` denies (``payload["reason"]`` is the reason), and a
  payload that is itself an answer (``{"decision": "edit", "arguments": {...}}``) is sent as it
  is. An answer the engine refuses (an edit that breaks the schema) raises
  :class:`~scope_tool.client.AnswerRejectedError` out of ``Runner.run_async``: the call still
  waits, and the confirmation request stays open for a corrected answer.

The answer may instead come from anywhere else (``scope-tool answer``, the inbox) while no
agent process runs. A new process reads the saved session and :func:`confirmation_responses`
turns the answered calls into the confirmation message ADK resumes with::

    toolset = ScopeToolset(calls, registry)
    agent = LlmAgent(name="files", model=model, tools=[toolset])
    runner = Runner(app_name="files", agent=agent, session_service=SqliteSessionService(path))
    async for event in runner.run_async(user_id=..., session_id=..., new_message=prompt): ...
    # the write waits for a person; the process may stop (or crash) now
    ...
    session = await runner.session_service.get_session(app_name=..., user_id=..., session_id=...)
    message = await confirmation_responses(calls, session, wait=True)
    async for event in runner.run_async(user_id=..., session_id=..., new_message=message): ...
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Final

try:
    from google.adk.agents.readonly_context import ReadonlyContext
    from google.adk.sessions import Session
    from google.adk.tools.base_tool import BaseTool
    from google.adk.tools.base_toolset import BaseToolset, ToolPredicate
    from google.adk.tools.tool_confirmation import ToolConfirmation
    from google.adk.tools.tool_context import ToolContext
    from google.genai import types
except ImportError as _missing:
    raise ImportError(
        f"scope_tool.agents.google_adk needs Google ADK ({_missing}); install it with:"
        " pip install 'scope-tool[google-adk]'",
        name=_missing.name,
    ) from _missing

from scope_tool import Definition, Principal, Registry, Request
from scope_tool.agents._results import ModelResult, model_result
from scope_tool.agents._turns import call_id_for, wait_for_stop
from scope_tool.agents.errors import AgentsError
from scope_tool.client import CallStatus, Phase, ToolCallHandle, ToolCalls, WorkerWait

__all__ = [
    "ScopeTool",
    "ScopeToolset",
    "confirmation_responses",
    "session_conversation_id",
    "waiting_calls",
]

#: The name of the function call ADK emits to ask the client for a tool confirmation.
CONFIRMATION_CALL: Final = "adk_request_confirmation"

#: The keys of the payload a waiting call's confirmation request carries.
PAYLOAD_KEYS: Final = ("call_id", "request_id", "tool", "prompt", "response_schema")

_HINT: Final = (
    "{tool} waits for a person (call id {call_id}). Confirm to approve, or send"
    ' confirmed=false with payload {{"reason": "..."}} to deny; a payload'
    ' {{"decision": "edit", "arguments": {{...}}}} approves with changed arguments. Or answer'
    ' elsewhere: scope-tool answer {call_id} \'{{"decision": "approve"}}\'.'
)


def session_conversation_id(session: Session) -> str:
    """The default conversation id of a session: ``"{app_name}/{user_id}/{session id}"``.

    Two users (or apps) with the same session id never share a durable call: a ``/`` (or
    ``%``) inside a part is written ``%2F`` (``%25``), so no two sessions give the same id.
    """
    parts = (session.app_name, session.user_id, session.id)
    return "/".join(part.replace("%", "%25").replace("/", "%2F") for part in parts)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Options:
    conversation_id: str | Callable[[Session], str]
    answer_timeout: timedelta | None
    allowed_answerers: tuple[str, ...]
    principal: Principal | None
    require_verified: bool
    on_worker_wait: Callable[[str, WorkerWait], object] | None


class ScopeTool(BaseTool):
    """One registry tool as an ADK tool: its name, description and JSON schema; each call durable.

    Made by :class:`ScopeToolset` (one per definition); not constructed directly.
    """

    def __init__(self, calls: ToolCalls, definition: Definition, options: _Options) -> None:
        super().__init__(name=definition.name, description=definition.description or "")
        self._calls = calls
        self._schema: dict[str, Any] = json.loads(definition.input_schema)
        self._options = options

    def _get_declaration(self) -> types.FunctionDeclaration:
        return types.FunctionDeclaration(
            name=self.name,
            description=self.description or None,
            parameters_json_schema=self._schema,
        )

    def call_id(self, tool_context: ToolContext) -> str:
        """The durable call id for the function call ``tool_context`` runs."""
        if not tool_context.function_call_id:
            raise AgentsError(f"ADK called {self.name!r} without a function call id")
        conversation = self._options.conversation_id
        if not isinstance(conversation, str):
            conversation = conversation(tool_context.session)
        return call_id_for(conversation, tool_context.function_call_id)

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        """Start (or attach to) the durable call; return its result, or ask for confirmation."""
        call_id = self.call_id(tool_context)
        request = Request(
            name=self.name,
            arguments=json.dumps(args, ensure_ascii=False, separators=(",", ":")),
        )
        options = self._options
        handle, status = await self._calls.start_and_wait(
            request,
            call_id=call_id,
            answer_timeout=options.answer_timeout,
            allowed_answerers=options.allowed_answerers,
            principal=options.principal,
            require_verified=options.require_verified,
            on_worker_wait=options.on_worker_wait,
        )
        confirmation = tool_context.tool_confirmation
        if status.phase is Phase.AWAITING_INPUT and confirmation is not None:
            status = await _confirm(handle, status, confirmation, tool_context.user_id)
        if status.phase is Phase.AWAITING_INPUT:
            tool_context.request_confirmation(
                hint=_HINT.format(tool=self.name, call_id=call_id), payload=_payload(status)
            )
            return {"result": model_result(status).text}
        return _response(model_result(status))


async def _confirm(
    handle: ToolCallHandle, status: CallStatus, confirmation: ToolConfirmation, user_id: str
) -> CallStatus:
    """Answer the call's pending question with ADK's confirmation; return its next stop.

    An answer the call refuses raises :class:`~scope_tool.client.AnswerRejectedError` out of
    the ADK run: the call is unchanged and still waits, and since the re-run left no tool
    response, ADK's confirmation request stays open for a corrected one (ADK 2.13 drops a
    confirmation requested again from inside a confirmed re-run, so asking again is no way).
    """
    pending = status.pending
    assert pending is not None  # AWAITING_INPUT always has its question
    payload = confirmation.payload
    if isinstance(payload, dict) and "decision" in payload:
        response: dict[str, Any] = payload
    elif confirmation.confirmed:
        response = {"decision": "approve"}
    else:
        response = {"decision": "deny"}
        reason = payload.get("reason") if isinstance(payload, dict) else None
        if isinstance(reason, str) and reason.strip():
            response["reason"] = reason
    await handle.answer(response, request_id=pending.request_id, answered_by=user_id or None)
    return await wait_for_stop(handle)


class ScopeToolset(BaseToolset):
    """The tools of ``registry`` as ADK tools, each call run durably through ``calls``.

    Pass it in an agent's ``tools`` (``LlmAgent(..., tools=[toolset])``).

    Args:
        calls: The durable runtime's facade; a worker serving ``registry`` must poll its task
            queue.
        registry: The tools to offer (their definitions; the worker runs them).
        conversation_id: With each ADK function-call id it names the durable call, so it must
            survive the agent process. ``None`` (the default) takes the ADK session's
            :func:`session_conversation_id`, which a persistent session service keeps; a
            string fixes it; a callable derives it from the session.
        answer_timeout: As :meth:`scope_tool.client.ToolCalls.start`.
        allowed_answerers: As :meth:`scope_tool.client.ToolCalls.start`; a confirmation sent
            through ADK answers as the session's user id.
        principal: Who the agent acts for, as :meth:`scope_tool.client.ToolCalls.start`
            (``None``: the ``acting_for`` block around the run, if any).
        require_verified: As :meth:`scope_tool.client.ToolCalls.start` (ADK's confirmation
            then cannot answer: it carries no identity token; answer in the inbox or the CLI).
        on_worker_wait: Called with the call id and the :class:`~scope_tool.client.WorkerWait`
            when no worker has taken a call for a few seconds; ``None``: a warning of the
            ``scope_tool.client`` logger says so.
        tool_filter: As ADK's ``BaseToolset``: the names of the tools to offer, or a predicate.
    """

    def __init__(
        self,
        calls: ToolCalls,
        registry: Registry,
        *,
        conversation_id: str | Callable[[Session], str] | None = None,
        answer_timeout: timedelta | None = None,
        allowed_answerers: tuple[str, ...] = (),
        principal: Principal | None = None,
        require_verified: bool = False,
        on_worker_wait: Callable[[str, WorkerWait], object] | None = None,
        tool_filter: ToolPredicate | list[str] | None = None,
    ) -> None:
        for given, expected, what in (
            (calls, ToolCalls, "calls must be a scope_tool.client.ToolCalls"),
            (registry, Registry, "registry must be a scope_tool.Registry"),
        ):
            if not isinstance(given, expected):
                raise TypeError(f"{what}, not {type(given).__name__}")
        if conversation_id is None:
            conversation_id = session_conversation_id
        elif isinstance(conversation_id, str):
            call_id_for(conversation_id, "probe")  # refuses a blank or oversized id now
        elif not callable(conversation_id):
            raise TypeError(
                "conversation_id must be a string, a callable of the session, or None;"
                f" got {type(conversation_id).__name__}"
            )
        super().__init__(tool_filter=tool_filter)
        options = _Options(
            conversation_id=conversation_id,
            answer_timeout=answer_timeout,
            allowed_answerers=tuple(allowed_answerers),
            principal=principal,
            require_verified=require_verified,
            on_worker_wait=on_worker_wait,
        )
        self._tools = [ScopeTool(calls, d, options) for d in registry.definitions()]

    async def get_tools(self, readonly_context: ReadonlyContext | None = None) -> list[BaseTool]:
        """One ADK tool per registry definition (those ``tool_filter`` selects)."""
        return [tool for tool in self._tools if self._is_tool_selected(tool, readonly_context)]


async def confirmation_responses(
    calls: ToolCalls, session: Session, *, wait: bool = False
) -> types.Content | None:
    """The confirmation message that resumes a session whose calls were answered elsewhere.

    Finds the session's unanswered ``adk_request_confirmation`` calls a :class:`ScopeToolset`
    made, reads each durable call, and returns one user message with a confirmation
    ``FunctionResponse`` for every call that has ended (``wait=True`` waits for each to end);
    ``None`` when none has. Send it as ``new_message`` to ``Runner.run_async``: ADK re-runs
    each confirmed call, the re-run attaches to the durable call, and the model gets its
    result (a denial's reason included). ``confirmed`` is false for a rejected, expired or
    cancelled call. Calls still waiting can be read again later.

    Raises:
        AgentsError: a confirmation request names no durable call (it did not come from a
            :class:`ScopeToolset`).
    """
    parts: list[types.Part] = []
    for request_id, call_id in _open_requests(session).items():
        handle = calls.get(call_id)
        if wait:
            result = model_result(await handle.result(), call_id=call_id)
        else:
            result = model_result(await handle.status())
            if not result.ended:
                continue
        confirmed = result.phase not in (Phase.REJECTED, Phase.EXPIRED, Phase.CANCELLED)
        confirmation = ToolConfirmation(
            confirmed=confirmed, payload={"call_id": call_id, "phase": result.phase.value}
        )
        parts.append(
            types.Part(
                function_response=types.FunctionResponse(
                    id=request_id,
                    name=CONFIRMATION_CALL,
                    response=confirmation.model_dump(by_alias=True, exclude_none=True),
                )
            )
        )
    return types.Content(role="user", parts=parts) if parts else None


def waiting_calls(session: Session) -> list[str]:
    """The durable call ids the session's open confirmation requests wait on, oldest first.

    Empty once ADK has acted on every request: nothing in the session waits for a person.

    Raises:
        AgentsError: a confirmation request names no durable call (it did not come from a
            :class:`ScopeToolset`).
    """
    return list(_open_requests(session).values())


def _open_requests(session: Session) -> dict[str, str]:
    """Open confirmation request id -> the durable call id it asks about."""
    consumed = _consumed_confirmations(session)
    return {
        call.id: _requested_call_id(call)
        for event in session.events
        for call in event.get_function_calls()
        if call.name == CONFIRMATION_CALL and call.id and call.id not in consumed
    }


def _consumed_confirmations(session: Session) -> set[str]:
    """The ids of confirmation requests ADK has acted on, by ADK's own rule: a tool response
    to the original call after the user's first answer to the request. (A request answered
    with a refused answer left no tool response, so it is still open.)"""
    originals: dict[str, str] = {}  # original function call id -> confirmation request id
    for event in session.events:
        for call in event.get_function_calls():
            if call.name == CONFIRMATION_CALL and call.id:
                original = (call.args or {}).get("originalFunctionCall")
                if isinstance(original, dict) and isinstance(original.get("id"), str):
                    originals[original["id"]] = call.id
    answered: set[str] = set()
    consumed: set[str] = set()
    for event in session.events:
        for response in event.get_function_responses():
            if not response.id:
                continue
            if event.author == "user":
                answered.add(response.id)
            elif (request := originals.get(response.id)) is not None and request in answered:
                consumed.add(request)
    return consumed


def _requested_call_id(call: types.FunctionCall) -> str:
    args = call.args or {}
    confirmation = args.get("toolConfirmation")
    payload = confirmation.get("payload") if isinstance(confirmation, dict) else None
    call_id = payload.get("call_id") if isinstance(payload, dict) else None
    if not isinstance(call_id, str):
        raise AgentsError(f"confirmation request {call.id!r} has no durable call id in its payload")
    return call_id


def _payload(status: CallStatus) -> dict[str, Any]:
    pending = status.pending
    assert pending is not None  # AWAITING_INPUT always has its question
    return {
        "call_id": status.call_id,
        "request_id": pending.request_id,
        "tool": status.tool,
        "prompt": json.loads(pending.prompt),
        "response_schema": json.loads(pending.response_schema),
    }


def _response(result: ModelResult) -> dict[str, str]:
    """ADK's tool response: ``{"result": text}``, or ``{"error": text}`` for an unsuccessful
    call (a reviewer's denial, which begins ``error: ``, loses that word rather than say it
    twice)."""
    if result.is_error:
        return {"error": result.text.removeprefix("error: ")}
    return {"result": result.text}
