"""A :class:`~scope_tool.Registry`'s tools as a Pydantic AI toolset, run as durable calls.

Needs the ``pydantic-ai`` extra (``pip install 'scope-tool[pydantic-ai]'``). Every tool call the
model makes becomes a durable call (:class:`scope_tool.client.ToolCalls`) whose id comes from the
conversation id and the model's tool-call id, so a resumed or retried run attaches to the call
it already made and never runs the tool twice.

* A call that ends returns the text :func:`~scope_tool.agents.model_result` gives; an
  unsuccessful one (failed, rejected, denied, invalid, expired...) is a
  :class:`~pydantic_ai.exceptions.ToolFailed` the model sees and can adapt to.
* A call that waits for a person either ends the agent run with ``DeferredToolRequests``
  (``on_wait="defer"``, the default; each request's metadata carries ``call_id``,
  ``request_id``, ``prompt`` and ``response_schema``) or waits for the durable call while the
  person answers (``on_wait="inline"``).

After a deferred run the agent process may stop (or crash); the calls keep waiting on the
server. Once a person answers (``scope-tool answer``, the inbox...), :func:`deferred_results`
reads the durable calls into ``DeferredToolResults`` and the run continues from its saved
message history::

    toolset = ScopeToolset(calls, registry, conversation_id="chat-42")
    agent = Agent(model, toolsets=[toolset], output_type=[str, DeferredToolRequests])
    run = await agent.run("write hello to notes.txt")
    # run.output is DeferredToolRequests: save run.all_messages_json() and the requests
    ...
    results = await deferred_results(calls, requests)
    run = await agent.run(message_history=saved, deferred_tool_results=results)
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal

from pydantic_core import SchemaValidator, core_schema

try:
    from pydantic_ai import RunContext
    from pydantic_ai.exceptions import CallDeferred, ToolFailed
    from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, ToolDefinition
    from pydantic_ai.toolsets import AbstractToolset
    from pydantic_ai.toolsets.abstract import ToolsetTool
except ImportError as _missing:
    raise ImportError(
        f"scope_tool.agents.pydantic_ai needs Pydantic AI ({_missing}); install it with:"
        " pip install 'scope-tool[pydantic-ai]'",
        name=_missing.name,
    ) from _missing

from scope_tool import Definition, Principal, Registry, Request
from scope_tool.agents._results import ModelResult, model_result
from scope_tool.agents._turns import call_id_for
from scope_tool.agents.errors import AgentsError
from scope_tool.client import CallStatus, Phase, ToolCalls, WorkerWait

__all__ = ["ScopeToolset", "deferred_results"]

# The durable contract admits the arguments (schema and the tool's own validator); Pydantic AI
# passes them through untouched so the model sees the contract's own refusal message.
_ANY_ARGUMENTS = SchemaValidator(schema=core_schema.dict_schema())

#: The metadata keys a deferred request carries (``DeferredToolRequests.metadata[id]``).
METADATA_KEYS = ("call_id", "request_id", "tool", "prompt", "response_schema")


@dataclass(frozen=True, slots=True, kw_only=True)
class _Options:
    on_wait: Literal["defer", "inline"]
    answer_timeout: timedelta | None
    allowed_answerers: tuple[str, ...]
    principal: Principal | None
    require_verified: bool
    on_waiting: Callable[[CallStatus], object] | None = None
    on_worker_wait: Callable[[str, WorkerWait], object] | None = None


class ScopeToolset(AbstractToolset[Any]):
    """The tools of ``registry``, each call run durably through ``calls``.

    Args:
        calls: The durable runtime's facade; a worker serving ``registry`` must poll its task
            queue.
        registry: The tools to offer (their definitions; the worker runs them).
        conversation_id: A stable id for the conversation (chat session, task...). With each
            model tool-call id it names the durable call, so it must survive the agent
            process: a resumed run must use the same one.
        on_wait: ``"defer"`` ends the run with ``DeferredToolRequests`` when a call waits for
            a person; ``"inline"`` waits for the durable call to end instead.
        answer_timeout: As :meth:`scope_tool.client.ToolCalls.start`.
        allowed_answerers: As :meth:`scope_tool.client.ToolCalls.start`.
        principal: Who the agent acts for in this conversation, as
            :meth:`scope_tool.client.ToolCalls.start` (``None``: the ``acting_for`` block around the
            agent run, if any).
        require_verified: As :meth:`scope_tool.client.ToolCalls.start`.
        on_waiting: With ``on_wait="inline"``, called with the call's status (its ``call_id``
            and pending question) when a call stops to wait for a person, before the run waits:
            say there what it waits for and how to answer, or the run just goes quiet.
        on_worker_wait: Called with the call id and the :class:`~scope_tool.client.WorkerWait`
            when no worker has taken a call for a few seconds (its worker stopped, or none
            serves the tool); the run keeps waiting. ``None``: a warning of the
            ``scope_tool.client`` logger says so, with the call id
            (:meth:`~scope_tool.client.ToolCalls.start_and_wait`).
        id: The toolset's id among an agent's toolsets.
    """

    def __init__(
        self,
        calls: ToolCalls,
        registry: Registry,
        *,
        conversation_id: str,
        on_wait: Literal["defer", "inline"] = "defer",
        answer_timeout: timedelta | None = None,
        allowed_answerers: tuple[str, ...] = (),
        id: str | None = "scope-tool",
        principal: Principal | None = None,
        require_verified: bool = False,
        on_waiting: Callable[[CallStatus], object] | None = None,
        on_worker_wait: Callable[[str, WorkerWait], object] | None = None,
    ) -> None:
        for given, expected, what in (
            (calls, ToolCalls, "calls must be a scope_tool.client.ToolCalls"),
            (registry, Registry, "registry must be a scope_tool.Registry"),
        ):
            if not isinstance(given, expected):
                raise TypeError(f"{what}, not {type(given).__name__}")
        if on_wait not in ("defer", "inline"):
            raise ValueError(f"on_wait must be 'defer' or 'inline', got {on_wait!r}")
        call_id_for(conversation_id, "probe")  # refuses a blank or oversized id now
        self._calls = calls
        self._definitions: dict[str, Definition] = {d.name: d for d in registry.definitions()}
        self._conversation_id = conversation_id
        self._options = _Options(
            on_wait=on_wait,
            answer_timeout=answer_timeout,
            allowed_answerers=tuple(allowed_answerers),
            principal=principal,
            require_verified=require_verified,
            on_waiting=on_waiting,
            on_worker_wait=on_worker_wait,
        )
        self._id = id

    @property
    def id(self) -> str | None:
        """The toolset's id among an agent's toolsets."""
        return self._id

    @property
    def conversation_id(self) -> str:
        """The id every durable call id of this toolset starts with."""
        return self._conversation_id

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        """One Pydantic AI tool per registry definition (same name, description, schema)."""
        return {
            name: ToolsetTool(
                toolset=self,
                tool_def=ToolDefinition(
                    name=name,
                    description=definition.description or None,
                    parameters_json_schema=json.loads(definition.input_schema),
                ),
                max_retries=1,
                args_validator=_ANY_ARGUMENTS,
            )
            for name, definition in self._definitions.items()
        }

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        """Start (or attach to) the durable call and return, defer or wait at its first stop.

        Raises:
            CallDeferred: the call waits for a person and ``on_wait`` is ``"defer"``.
            ToolFailed: the call ended unsuccessfully; the model sees the reason.
        """
        if ctx.tool_call_id is None:
            raise AgentsError(f"Pydantic AI called {name!r} without a tool call id")
        call_id = call_id_for(self._conversation_id, ctx.tool_call_id)
        request = Request(
            name=name,
            arguments=json.dumps(tool_args, ensure_ascii=False, separators=(",", ":")),
        )
        _, status = await self._calls.start_and_wait(
            request,
            call_id=call_id,
            answer_timeout=self._options.answer_timeout,
            allowed_answerers=self._options.allowed_answerers,
            principal=self._options.principal,
            require_verified=self._options.require_verified,
            on_worker_wait=self._options.on_worker_wait,
        )
        if status.phase is Phase.AWAITING_INPUT:
            if self._options.on_wait == "defer":
                raise CallDeferred(metadata=_metadata(status))
            if self._options.on_waiting is not None:
                self._options.on_waiting(status)
            outcome = await self._calls.get(call_id).result()
            return _returned(model_result(outcome, call_id=call_id))
        return _returned(model_result(status))


async def deferred_results(
    calls: ToolCalls,
    requests: DeferredToolRequests,
    *,
    wait: bool = False,
) -> DeferredToolResults:
    """Read the durable calls behind deferred requests into ``DeferredToolResults``.

    Only calls that have ended are included (an unsuccessful one as ``ToolFailed``), unless
    ``wait`` is true, which waits for each call to end. Pass the result to
    ``agent.run(message_history=..., deferred_tool_results=...)``; calls still waiting can be
    read again later (``requests.remaining(results)`` lists them).

    Raises:
        AgentsError: a deferred request has no ``call_id`` in its metadata (it did not come
            from a :class:`ScopeToolset`).
    """
    results = DeferredToolResults()
    for part in requests.calls:
        metadata = requests.metadata.get(part.tool_call_id) or {}
        call_id = metadata.get("call_id")
        if not isinstance(call_id, str):
            raise AgentsError(
                f"deferred tool call {part.tool_call_id!r} has no durable call id in its metadata"
            )
        handle = calls.get(call_id)
        if wait:
            result = model_result(await handle.result(), call_id=call_id)
        else:
            result = model_result(await handle.status())
            if not result.ended:
                continue
        results.calls[part.tool_call_id] = _value(result)
    return results


def _metadata(status: CallStatus) -> dict[str, Any]:
    pending = status.pending
    assert pending is not None  # AWAITING_INPUT always has its question
    return {
        "call_id": status.call_id,
        "request_id": pending.request_id,
        "tool": status.tool,
        "prompt": json.loads(pending.prompt),
        "response_schema": json.loads(pending.response_schema),
    }


def _value(result: ModelResult) -> Any:
    return _failed(result.text) if result.is_error else result.text


def _returned(result: ModelResult) -> str:
    if result.is_error:
        raise _failed(result.text)
    return result.text


def _failed(text: str) -> ToolFailed:
    """The failure as Pydantic AI shows it: ``{"error": text}``, so a text that already begins
    with ``error: `` (a reviewer's denial) loses that word rather than say it twice."""
    return ToolFailed(text.removeprefix("error: "))
