"""A :class:`~scope_tool.Registry`'s tools as OpenAI Agents SDK function tools, run durably.

Needs the ``openai-agents`` extra (``pip install 'scope-tool[openai-agents]'``). Every tool call
the model makes becomes a durable call (:class:`scope_tool.client.ToolCalls`) whose id comes from
the conversation id and the model's tool-call id (:func:`~scope_tool.agents.call_id_for`), so a
resumed or retried run attaches to the call it already made and never runs the tool twice.

The SDK's own human-in-the-loop surface is the engine's approval gate:

* Each tool's ``needs_approval`` starts (or attaches to) the durable call and says yes exactly
  when the call waits for a person, so the run stops with ``result.interruptions`` as the SDK
  always does. Save ``result.to_state().to_json()``; the agent process may then stop or crash,
  the call keeps waiting on the server.
* The person answers where they like: ``scope-tool answer``, the inbox, or the application's
  own UI through :meth:`ScopeTools.approve` / :meth:`ScopeTools.reject` (a plain
  ``state.approve(item)`` also approves the durable call when the run resumes).
* :meth:`ScopeTools.apply_answers` reads the durable calls behind a restored ``RunState``'s
  interruptions into ``state.approve`` / ``state.reject``; ``Runner.run(agent, state)`` then
  continues and each approved call returns the output the durable call recorded.

What the model sees is :func:`~scope_tool.agents.model_result`'s text: an output as a
``ToolOutputText``, a failure as the error string the SDK sends back for a failed tool, and a
person's denial as the SDK's rejection message::

    tools = ScopeTools(calls, registry, conversation_id="chat-42")
    agent = Agent(name="files", model=model, tools=tools.tools)
    result = await Runner.run(agent, "write hello to notes.txt")
    if result.interruptions:
        saved = result.to_state().to_json()         # store it; the process may exit now
    ...
    state = await RunState.from_json(agent, saved)  # in any process, later
    waiting = await tools.apply_answers(state)      # [] once every call was answered
    result = await Runner.run(agent, state)
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal

try:
    from agents import FunctionTool, RunContextWrapper, RunState, ToolApprovalItem
    from agents.tool import ToolOutputText
    from agents.tool_context import ToolContext
except ImportError as _missing:
    raise ImportError(
        f"scope_tool.agents.openai_agents needs the OpenAI Agents SDK ({_missing}); install it"
        " with: pip install 'scope-tool[openai-agents]'",
        name=_missing.name,
    ) from _missing

from scope_tool import APPROVAL_PROMPT_KIND, Definition, Principal, Registry, Request
from scope_tool.agents._formats import openai_tools
from scope_tool.agents._results import ModelResult, model_result
from scope_tool.agents._turns import call_id_for
from scope_tool.agents.errors import AgentsError
from scope_tool.client import (
    AnswerRejectedError,
    CallStatus,
    Phase,
    RefusalReason,
    ToolCallHandle,
    ToolCalls,
    WorkerWait,
)

__all__ = ["ScopeTools"]


@dataclass(frozen=True, slots=True, kw_only=True)
class _Options:
    answer_timeout: timedelta | None
    allowed_answerers: tuple[str, ...]
    principal: Principal | None
    require_verified: bool
    answered_by: str | None
    on_wait: Literal["interrupt", "inline"]
    on_waiting: Callable[[CallStatus], object] | None
    on_worker_wait: Callable[[str, WorkerWait], object] | None


class ScopeTools:
    """The tools of ``registry`` as SDK ``FunctionTool``\\ s, each call a durable call.

    Args:
        calls: The durable runtime's facade; a worker serving ``registry`` must poll its task
            queue.
        registry: The tools to offer (their definitions; the worker runs them).
        conversation_id: A stable id for the conversation. With each model tool-call id it
            names the durable call, so a resumed run must use the same one.
        strict: ``"auto"`` marks a tool's schema strict exactly when OpenAI strict mode accepts
            it as it is (:func:`~scope_tool.agents.openai_strict_problems`); ``True`` requires
            every tool to be strict (:class:`~scope_tool.agents.StrictModeError` otherwise);
            ``False`` marks none. A schema is never rewritten: the model sees the contract's.
        answer_timeout: As :meth:`scope_tool.client.ToolCalls.start`.
        allowed_answerers: As :meth:`scope_tool.client.ToolCalls.start`.
        principal: Who the agent acts for, as :meth:`scope_tool.client.ToolCalls.start`.
        require_verified: As :meth:`scope_tool.client.ToolCalls.start`.
        answered_by: Who an approval given through the SDK (``state.approve``) is recorded as,
            when :meth:`approve` is not told.
        on_wait: ``"interrupt"`` (the default) interrupts the run while a call waits for a
            person (``result.interruptions``); ``"inline"`` never interrupts: the tool waits in
            the run until the call ends (the person answers with the CLI or the inbox).
        on_waiting: With ``on_wait="inline"``, called with the call's status (its ``call_id``
            and pending question) when a call stops to wait for a person, before the run
            waits: say there what it waits for and how to answer.
        on_worker_wait: Called with the call id and the :class:`~scope_tool.client.WorkerWait`
            when no worker has taken a call for a few seconds; ``None``: a warning of the
            ``scope_tool.client`` logger says so.

    Raises:
        TypeError: ``calls`` or ``registry`` is not what it should be.
        ValueError: ``strict`` or ``on_wait`` is not one of the values above.
        TurnError: ``conversation_id`` is blank or too long.
        StrictModeError: ``strict=True`` and a schema breaks OpenAI strict mode.
    """

    def __init__(
        self,
        calls: ToolCalls,
        registry: Registry,
        *,
        conversation_id: str,
        strict: bool | Literal["auto"] = "auto",
        answer_timeout: timedelta | None = None,
        allowed_answerers: tuple[str, ...] = (),
        principal: Principal | None = None,
        require_verified: bool = False,
        answered_by: str | None = None,
        on_wait: Literal["interrupt", "inline"] = "interrupt",
        on_waiting: Callable[[CallStatus], object] | None = None,
        on_worker_wait: Callable[[str, WorkerWait], object] | None = None,
    ) -> None:
        for given, expected, what in (
            (calls, ToolCalls, "calls must be a scope_tool.client.ToolCalls"),
            (registry, Registry, "registry must be a scope_tool.Registry"),
        ):
            if not isinstance(given, expected):
                raise TypeError(f"{what}, not {type(given).__name__}")
        if on_wait not in ("interrupt", "inline"):
            raise ValueError(f"on_wait must be 'interrupt' or 'inline', got {on_wait!r}")
        call_id_for(conversation_id, "probe")  # refuses a blank or oversized id now
        self._calls = calls
        self._conversation_id = conversation_id
        self._definitions: dict[str, Definition] = {d.name: d for d in registry.definitions()}
        self._options = _Options(
            answer_timeout=answer_timeout,
            allowed_answerers=tuple(allowed_answerers),
            principal=principal,
            require_verified=require_verified,
            answered_by=answered_by,
            on_wait=on_wait,
            on_waiting=on_waiting,
            on_worker_wait=on_worker_wait,
        )
        # Ended calls seen by needs_approval, so the invocation right after needs no round trip.
        self._ended: dict[str, CallStatus] = {}
        self._tools = [
            FunctionTool(
                name=entry["name"],
                description=entry.get("description", ""),
                params_json_schema=entry["parameters"],
                on_invoke_tool=self._invoke,
                strict_json_schema=entry["strict"],
                needs_approval=(
                    self._needs_approval_of(entry["name"]) if on_wait == "interrupt" else False
                ),
            )
            for entry in openai_tools(registry, strict=strict, api="responses")
        ]

    @property
    def tools(self) -> list[FunctionTool]:
        """The SDK tools, one per registry definition (``Agent(tools=...)``)."""
        return list(self._tools)

    @property
    def conversation_id(self) -> str:
        """The id every durable call id of these tools starts with."""
        return self._conversation_id

    def call_id(self, item: ToolApprovalItem) -> str:
        """The durable call id behind an interruption (what ``scope-tool answer`` takes)."""
        tool_call_id = item.call_id
        if not tool_call_id:
            raise AgentsError(f"interruption for {item.tool_name!r} carries no tool call id")
        return call_id_for(self._conversation_id, tool_call_id)

    # --- the SDK's hooks ---------------------------------------------------------------------

    def _needs_approval_of(
        self, name: str
    ) -> Callable[[RunContextWrapper[Any], dict[str, Any], str], Awaitable[bool]]:
        async def needs_approval(
            ctx: RunContextWrapper[Any], params: dict[str, Any], tool_call_id: str
        ) -> bool:
            """Start (or attach to) the call; it needs approval iff it waits for a person."""
            status = await self._start(name, _encoded(params), tool_call_id)
            if status.phase.is_terminal:
                self._ended[status.call_id] = status
            return status.phase is Phase.AWAITING_INPUT

        return needs_approval

    async def _invoke(self, ctx: ToolContext[Any], arguments: str) -> Any:
        """Attach to the call; a call the SDK approved while it waits is approved here."""
        call_id = call_id_for(self._conversation_id, ctx.tool_call_id)
        status = self._ended.pop(call_id, None)
        if status is None:
            status = await self._start(ctx.tool_name, _canonical(arguments), ctx.tool_call_id)
        if status.phase.is_terminal:
            return _shown(model_result(status))
        handle = self._calls.get(call_id)
        if self._options.on_wait == "inline":
            if status.phase is Phase.AWAITING_INPUT and self._options.on_waiting is not None:
                self._options.on_waiting(status)
        elif status.phase is Phase.AWAITING_INPUT and _asks_approval(status):
            # The run invokes a gated call only once the SDK has approved it (state.approve):
            # that approval is the person's answer. One given elsewhere first stands.
            await _answer(handle, {"decision": "approve"}, self._options.answered_by)
        return _shown(model_result(await handle.result(), call_id=call_id))

    async def _start(self, name: str, arguments: str, tool_call_id: str) -> CallStatus:
        _, status = await self._calls.start_and_wait(
            Request(name=name, arguments=arguments),
            call_id=call_id_for(self._conversation_id, tool_call_id),
            answer_timeout=self._options.answer_timeout,
            allowed_answerers=self._options.allowed_answerers,
            principal=self._options.principal,
            require_verified=self._options.require_verified,
            on_worker_wait=self._options.on_worker_wait,
        )
        return status

    # --- the person's answer, from wherever it came ----------------------------------------

    async def apply_answers(
        self, state: RunState[Any, Any], *, wait: bool = False
    ) -> list[ToolApprovalItem]:
        """Apply what people answered to ``state``'s interruptions; return those still waiting.

        For each interruption of these tools whose durable call has ended: a denial (or any
        rejected call) is ``state.reject(item, rejection_message=...)`` with the reason the
        model should see; anything else is ``state.approve(item)``, and the resumed run returns
        the call's recorded outcome without running the tool again. With ``wait`` it waits for
        each call to end (so it returns ``[]``). Interruptions of other tools are left alone.

        Arguments the SDK cannot parse interrupt the run before ``needs_approval`` runs, so no
        durable call exists yet: this starts it (the contract refuses such arguments, and the
        model sees why).
        """
        waiting: list[ToolApprovalItem] = []
        for item in state.get_interruptions():
            if item.tool_name not in self._definitions:
                continue
            status = await self._start(
                item.tool_name, _canonical(_arguments(item)), item.call_id or ""
            )
            if not status.phase.is_terminal and wait:
                call_id = status.call_id
                result = model_result(await self._calls.get(call_id).result(), call_id=call_id)
            else:
                result = model_result(status)
            if not result.ended:
                waiting.append(item)
            elif result.phase is Phase.REJECTED:
                state.reject(item, rejection_message=result.text)
            else:
                state.approve(item)
        return waiting

    async def approve(
        self, state: RunState[Any, Any], item: ToolApprovalItem, *, by: str | None = None
    ) -> None:
        """Approve the durable call behind ``item`` (as ``by``), then ``state.approve(item)``.

        An answer given elsewhere first stands: the resumed run returns what the call did.

        Raises:
            AnswerRejectedError: the call refused the answer for another reason than having
                been answered already (``by`` is not an allowed answerer, ...).
        """
        handle = self._calls.get(self.call_id(item))
        await _answer(handle, {"decision": "approve"}, by or self._options.answered_by)
        state.approve(item)

    async def reject(
        self,
        state: RunState[Any, Any],
        item: ToolApprovalItem,
        reason: str,
        *,
        by: str | None = None,
    ) -> None:
        """Deny the durable call behind ``item`` with ``reason``, then reject it in ``state``.

        The model sees the call's outcome: this denial with its reason, or the answer given
        elsewhere first (then an approved call's output comes back as its result).

        Raises:
            AnswerRejectedError: as :meth:`approve`.
        """
        call_id = self.call_id(item)
        handle = self._calls.get(call_id)
        await _answer(
            handle, {"decision": "deny", "reason": reason}, by or self._options.answered_by
        )
        result = model_result(await handle.result(), call_id=call_id)
        if result.phase is Phase.REJECTED:
            state.reject(item, rejection_message=result.text)
        else:
            state.approve(item)


# The call took another answer first (or has ended): that answer stands.
_ANSWERED_ALREADY = frozenset(
    {RefusalReason.FINISHED, RefusalReason.NOT_WAITING, RefusalReason.STALE_REQUEST}
)


async def _answer(handle: ToolCallHandle, response: dict[str, Any], by: str | None) -> None:
    try:
        await handle.answer(response, answered_by=by)
    except AnswerRejectedError as refused:
        if refused.reason not in _ANSWERED_ALREADY:
            raise


def _shown(result: ModelResult) -> ToolOutputText | str:
    """An output as the SDK's text output; a failure as the error text it sends the model."""
    return result.text if result.is_error else ToolOutputText(text=result.text)


def _asks_approval(status: CallStatus) -> bool:
    pending = status.pending
    if pending is None:
        return False
    try:
        prompt = json.loads(pending.prompt)
    except ValueError:
        return False
    return isinstance(prompt, dict) and prompt.get("kind") == APPROVAL_PROMPT_KIND


def _arguments(item: ToolApprovalItem) -> str:
    arguments = item.arguments
    return arguments if isinstance(arguments, str) else "{}"


def _canonical(arguments: str) -> str:
    """The model's arguments as compact JSON (none: ``{}``; text that is no JSON is kept for
    the contract to refuse), so every path to one call sends the same request."""
    if not arguments.strip():
        return "{}"
    try:
        value = json.loads(arguments)
    except ValueError:
        return arguments
    return _encoded(value)


def _encoded(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
