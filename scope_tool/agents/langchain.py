"""A :class:`~scope_tool.Registry`'s tools as LangChain tools, run as durable calls, whose
questions are LangGraph interrupts.

Needs the ``langchain`` extra (``pip install 'scope-tool[langchain]'``). :func:`scope_tools`
gives one LangChain :class:`~langchain_core.tools.BaseTool` per registry tool (same name,
description, and the contract's JSON schema as ``args_schema``), for ``create_agent``, a
LangGraph ``ToolNode`` or ``model.bind_tools``. Every invocation is a durable call
(:class:`scope_tool.client.ToolCalls`) whose id is ``call_id_for(conversation, tool_call_id)``:
the conversation is the LangGraph ``thread_id`` (or ``conversation_id=``), the tool-call id the
model's, so a resumed or retried step attaches to the call it already made and never runs the
tool twice.

* A call that ends becomes a ``ToolMessage``: the text :func:`~scope_tool.agents.model_result`
  gives, with ``artifact={"call_id", "phase"}``; an unsuccessful one (failed, rejected, denied,
  invalid, expired...) a ``ToolMessage`` with ``status="error"`` (a ``ToolException`` the tool
  handles), so the model sees the reason.
* A call that waits for a person is a LangGraph ``interrupt()`` (``on_wait="interrupt"``, the
  default) whose value has the shape of LangChain's human-in-the-loop middleware's per-call
  request (``{"type": "tool_approval", "tool_call_id", "name", "args", "description"}``) plus
  the durable call's ``call_id``, ``request_id``, ``prompt``, ``response_schema`` and
  ``allowed_decisions`` (the interrupt's own ``response_schema`` is the JSON Schema of those
  decisions). The graph pauses, its checkpointer keeps the step, the durable call keeps the
  question: the agent process may stop or die. ``Command(resume=DECISION)`` continues it, in
  this process or a new one, with the middleware's decisions: ``{"type": "approve"}``,
  ``{"type": "edit", "edited_action": {"name": ..., "args": {...}}}``,
  ``{"type": "reject", "message": "..."}`` (or ``{"decisions": [one of these]}``); also
  ``{"type": "answer", "answer": <JSON>}`` (the engine's own answer, for any question) and
  ``{"type": "wait"}`` (someone answers in the inbox or with ``scope-tool answer``: wait for the
  call). A call answered elsewhere while the agent was away ends the same way whatever the
  resume value (``{"type": "wait"}`` says it best): the resumed step finds the call ended and
  returns its result, the value unused. A decision the call refuses (an edit that breaks the
  schema, a malformed decision, one whose ``"call_id"`` names another call) interrupts again
  with ``"refused"`` saying why; the call keeps waiting, unchanged. Several waiting calls in
  one LangGraph task (a plain ``ToolNode``; ``create_agent`` gives each call its own task)
  receive resume values by order: put ``call_id`` in each decision there.
* ``on_wait="inline"`` waits for the durable call instead (no graph needed).

::

    tools = scope_tools(calls, registry)  # conversation: the LangGraph thread_id
    agent = create_agent(model, tools, checkpointer=AsyncSqliteSaver(...))
    config = {"configurable": {"thread_id": "chat-42"}}
    await agent.ainvoke({"messages": [("user", "write hello to notes.txt")]}, config)
    # paused: (await agent.aget_state(config)).interrupts[0].value["call_id"] is the call
    ...  # any process, later:
    await agent.ainvoke(Command(resume={"type": "approve"}), config)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Final, Literal

from pydantic import PrivateAttr

try:
    from langchain_core.runnables import RunnableConfig
    from langchain_core.tools import BaseTool, ToolException
    from langgraph.config import get_config
    from langgraph.types import interrupt
except ImportError as _missing:
    raise ImportError(
        f"scope_tool.agents.langchain needs LangChain and LangGraph ({_missing}); install them"
        " with: pip install 'scope-tool[langchain]'",
        name=_missing.name,
    ) from _missing

from scope_tool import APPROVAL_PROMPT_KIND, Definition, Principal, Registry, Request
from scope_tool.agents._results import ModelResult, model_result
from scope_tool.agents._turns import call_id_for, wait_for_stop
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

__all__ = ["ScopeTool", "scope_tools"]

#: Refusals that mean "this question was answered or closed meanwhile": wait for the call.
_ANSWERED_ELSEWHERE: Final = frozenset(
    {RefusalReason.STALE_REQUEST, RefusalReason.FINISHED, RefusalReason.NOT_WAITING}
)
_DECISIONS: Final = ("approve", "edit", "reject", "answer", "wait")
_WAIT: Final = object()


@dataclass(frozen=True, slots=True, kw_only=True)
class _Options:
    conversation_id: str | None
    on_wait: Literal["interrupt", "inline"]
    answer_timeout: timedelta | None
    allowed_answerers: tuple[str, ...]
    principal: Principal | None
    require_verified: bool
    answered_by: str | None
    on_waiting: Callable[[CallStatus], object] | None
    on_worker_wait: Callable[[str, WorkerWait], object] | None


def scope_tools(
    calls: ToolCalls,
    registry: Registry,
    *,
    conversation_id: str | None = None,
    on_wait: Literal["interrupt", "inline"] = "interrupt",
    answer_timeout: timedelta | None = None,
    allowed_answerers: tuple[str, ...] = (),
    principal: Principal | None = None,
    require_verified: bool = False,
    answered_by: str | None = None,
    on_waiting: Callable[[CallStatus], object] | None = None,
    on_worker_wait: Callable[[str, WorkerWait], object] | None = None,
) -> list[ScopeTool]:
    """The tools of ``registry`` as LangChain tools, each call run durably through ``calls``.

    Args:
        calls: The durable runtime's facade; a worker serving ``registry`` must poll its task
            queue.
        registry: The tools to offer (their definitions; the worker runs them).
        conversation_id: Names the durable calls with each model tool-call id; ``None`` (the
            default) takes the LangGraph ``thread_id`` of the run (``config["configurable"]``),
            which a resumed run uses again anyway.
        on_wait: ``"interrupt"`` pauses the graph with ``interrupt()`` when a call waits for a
            person; ``"inline"`` waits for the durable call to end instead.
        answer_timeout: As :meth:`scope_tool.client.ToolCalls.start`.
        allowed_answerers: As :meth:`scope_tool.client.ToolCalls.start`.
        principal: Who the agent acts for, as :meth:`scope_tool.client.ToolCalls.start`
            (``None``: the ``acting_for`` block around the run, if any).
        require_verified: As :meth:`scope_tool.client.ToolCalls.start`.
        answered_by: Who a decision given through ``Command(resume=...)`` is recorded as
            (the call's ``answered_by``) when the decision does not say (its own
            ``"answered_by"``, and ``"identity_token"`` for a verified answer); ``None``
            records no one.
        on_waiting: With ``on_wait="inline"``, called with the call's status when it stops to
            wait for a person, before the tool waits.
        on_worker_wait: As :meth:`scope_tool.client.ToolCalls.start_and_wait`.

    Raises:
        TypeError: ``calls`` or ``registry`` is of the wrong type.
        ValueError: ``on_wait`` is unknown, or ``conversation_id`` is blank or too long.
    """
    for given, expected, what in (
        (calls, ToolCalls, "calls must be a scope_tool.client.ToolCalls"),
        (registry, Registry, "registry must be a scope_tool.Registry"),
    ):
        if not isinstance(given, expected):
            raise TypeError(f"{what}, not {type(given).__name__}")
    if on_wait not in ("interrupt", "inline"):
        raise ValueError(f"on_wait must be 'interrupt' or 'inline', got {on_wait!r}")
    if conversation_id is not None:
        call_id_for(conversation_id, "probe")  # refuses a blank or oversized id now
    options = _Options(
        conversation_id=conversation_id,
        on_wait=on_wait,
        answer_timeout=answer_timeout,
        allowed_answerers=tuple(allowed_answerers),
        principal=principal,
        require_verified=require_verified,
        answered_by=answered_by,
        on_waiting=on_waiting,
        on_worker_wait=on_worker_wait,
    )
    return [ScopeTool._build(calls, d, options) for d in registry.definitions()]


class ScopeTool(BaseTool):
    """One registry tool as a LangChain tool; each invocation a durable call.

    Made by :func:`scope_tools`. Invoke it with a model's ``ToolCall`` (as ``create_agent``
    and ``ToolNode`` do): the tool-call id names the durable call. Async only (``ainvoke``):
    a durable call is awaited on the Temporal client's event loop.
    """

    handle_tool_error: Any = True
    response_format: Literal["content", "content_and_artifact"] = "content_and_artifact"
    _calls: ToolCalls = PrivateAttr()
    _options: _Options = PrivateAttr()

    @classmethod
    def _build(cls, calls: ToolCalls, definition: Definition, options: _Options) -> ScopeTool:
        """The tool for one definition (use :func:`scope_tools`)."""
        tool = cls(
            name=definition.name,
            description=definition.description or definition.name,
            args_schema=json.loads(definition.input_schema),
        )
        tool._calls = calls
        tool._options = options
        return tool

    async def ainvoke(
        self, input: str | dict[str, Any] | Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Any:
        """Run the call for a model's ``ToolCall`` (``{"type": "tool_call", "id", "args"}``).

        Raises:
            AgentsError: ``input`` is not a tool call with an id and object arguments.
        """
        tool_call_id = input.get("id") if isinstance(input, dict) else None
        if not (isinstance(input, dict) and input.get("type") == "tool_call") or not (
            isinstance(tool_call_id, str) and tool_call_id
        ):
            raise AgentsError(
                f"the tool {self.name!r} runs a durable call named by the model's tool-call id:"
                " invoke it with a ToolCall ({'type': 'tool_call', 'id': ..., 'name': ...,"
                " 'args': {...}}), as create_agent and ToolNode do"
            )
        if not isinstance(input.get("args"), dict):
            raise AgentsError(f"tool call {tool_call_id!r}: args must be an object")
        return await super().ainvoke(input, config, **kwargs)

    def _run(self, *args: Any, **kwargs: Any) -> Any:
        raise AgentsError(
            f"the tool {self.name!r} is async (its durable call is awaited on the Temporal"
            " client's event loop): run the agent with ainvoke/astream"
        )

    def _to_args_and_kwargs(
        self, tool_input: str | dict[str, Any], tool_call_id: str | None
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        # The arguments pass through as the model sent them: the durable contract admits them
        # (schema and the tool's own validator), so the model sees the contract's refusal.
        return (), {"arguments": tool_input, "tool_call_id": tool_call_id}

    async def _arun(
        self,
        *,
        arguments: Any,
        tool_call_id: str | None,
        config: RunnableConfig,
        **_: Any,
    ) -> tuple[str, dict[str, str]]:
        options = self._options
        if not isinstance(tool_call_id, str) or not isinstance(arguments, dict):
            raise AgentsError(f"the tool {self.name!r} needs a ToolCall with an id and args")
        conversation = options.conversation_id or _thread_id(config, self.name)
        call_id = call_id_for(conversation, tool_call_id)
        try:
            text = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
        except (TypeError, ValueError) as exc:
            raise ToolException(f"error: the arguments are not JSON: {exc}") from None
        handle, status = await self._calls.start_and_wait(
            Request(name=self.name, arguments=text),
            call_id=call_id,
            answer_timeout=options.answer_timeout,
            allowed_answerers=options.allowed_answerers,
            principal=options.principal,
            require_verified=options.require_verified,
            on_worker_wait=options.on_worker_wait,
        )
        if status.phase is Phase.AWAITING_INPUT:
            if options.on_wait == "inline":
                if options.on_waiting is not None:
                    options.on_waiting(status)
                return _returned(model_result(await handle.result(), call_id=call_id))
            _in_a_graph(self.name, call_id)
            return _returned(
                await self._ask_until_answered(handle, status, tool_call_id, arguments)
            )
        return _returned(model_result(status))

    async def _ask_until_answered(
        self,
        handle: ToolCallHandle,
        status: CallStatus,
        tool_call_id: str,
        arguments: dict[str, Any],
    ) -> ModelResult:
        """Interrupt the graph for each question the call asks; answer it with the decision.

        LangGraph re-runs the step from its start on resume and hands back the decisions given
        so far, in order. A decision the call already accepted (an answer it recorded) is not
        sent again; a refused one is refused again; the first new one is sent.
        """
        recorded = [_loaded(record.response) for record in status.answers]
        replayed = 0
        refused: dict[str, str] | None = None
        while status.phase is Phase.AWAITING_INPUT:
            pending = status.pending
            assert pending is not None  # AWAITING_INPUT always has its question
            decision = interrupt(
                _request(self.name, status, tool_call_id, arguments, refused),
                response_schema=_decision_schema(self.name, status),
            )
            try:
                answer = _answer(decision, self.name, pending.prompt, status.call_id)
                who, token = _identity(decision, self._options.answered_by)
            except ValueError as problem:
                refused = {"reason": "decision", "message": str(problem)}
                continue
            if answer is _WAIT:
                return model_result(await handle.result(), call_id=status.call_id)
            if replayed < len(recorded) and recorded[replayed] == answer:
                replayed += 1  # given in an earlier run of this step, and accepted then
                status = await wait_for_stop(handle)
                continue
            try:
                await handle.answer(
                    answer, request_id=pending.request_id, answered_by=who, identity_token=token
                )
            except AnswerRejectedError as refusal:
                if refusal.reason not in _ANSWERED_ELSEWHERE:
                    refused = {"reason": str(refusal.reason), "message": str(refusal)}
                    continue
            refused = None
            status = await wait_for_stop(handle)
        return model_result(status)


def _thread_id(config: RunnableConfig, tool: str) -> str:
    thread = (config.get("configurable") or {}).get("thread_id")
    if thread is None or not str(thread).strip():
        raise AgentsError(
            f"the tool {tool!r} names its durable calls by the conversation: run the agent with"
            ' config={"configurable": {"thread_id": ...}}, or pass conversation_id= to'
            " scope_tools"
        )
    return str(thread)


def _in_a_graph(tool: str, call_id: str) -> None:
    """Refuse to ``interrupt()`` outside a LangGraph step (it would fail with a bare KeyError)."""
    try:
        configurable = get_config().get("configurable") or {}
    except RuntimeError:
        configurable = {}
    # LangGraph's CONFIG_KEY_SCRATCHPAD (langgraph._internal): set for every step of a graph.
    if "__pregel_scratchpad" not in configurable:
        raise AgentsError(
            f"the call of {tool!r} waits for a person (call id {call_id}: answer or cancel it),"
            " and only a LangGraph graph with a checkpointer can pause for it: run the tool in"
            " one (create_agent, ToolNode), or make the tools with on_wait='inline'"
        )


def _request(
    tool: str,
    status: CallStatus,
    tool_call_id: str,
    arguments: dict[str, Any],
    refused: dict[str, str] | None,
) -> dict[str, Any]:
    """The interrupt's value: LangChain's per-call HITL request plus the durable question."""
    pending = status.pending
    assert pending is not None
    prompt = _loaded(pending.prompt)
    approval = isinstance(prompt, dict) and prompt.get("kind") == APPROVAL_PROMPT_KIND
    if approval:
        question = str(prompt.get("question") or f"Approve this call of {tool}?")
        allowed = (
            ["approve", "edit", "reject"] if prompt.get("allow_edit") else ["approve", "reject"]
        )
    else:
        question = f"The call of {tool} asks a question"
        allowed = ["answer"]
    value: dict[str, Any] = {
        "type": "tool_approval" if approval else "tool_input",
        "tool_call_id": tool_call_id,
        "name": tool,
        "args": arguments,
        "description": f"{question} (call id {status.call_id})",
        "allowed_decisions": [*allowed, "wait"],
        "call_id": status.call_id,
        "request_id": pending.request_id,
        "prompt": prompt,
        "response_schema": _loaded(pending.response_schema),
    }
    if refused is not None:
        value["refused"] = refused
    return value


def _decision_schema(tool: str, status: CallStatus) -> dict[str, Any]:
    """The JSON Schema of the decisions the interrupt takes, for LangGraph clients' forms.

    An edit's ``args`` are the approval's own ``$defs.arguments`` (the tool's input schema);
    an ``answer`` is the question's response schema when it can be embedded as it is (no
    ``$ref``), else any JSON value. The call checks every answer itself either way.
    """
    pending = status.pending
    assert pending is not None
    prompt = _loaded(pending.prompt)
    response = _loaded(pending.response_schema)
    call = {"const": status.call_id}

    def branch(kind: str, **members: Any) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {"type": {"const": kind}, "call_id": call, **members},
            "required": ["type", *members],
        }

    branches = [branch("wait")]
    schema: dict[str, Any] = {}
    if isinstance(prompt, dict) and prompt.get("kind") == APPROVAL_PROMPT_KIND:
        branches += [branch("approve"), branch("reject", message={"type": "string"})]
        if prompt.get("allow_edit"):
            defs = response.get("$defs") if isinstance(response, dict) else None
            arguments: dict[str, Any] = {"type": "object"}
            if isinstance(defs, dict) and "arguments" in defs:
                schema["$defs"] = defs
                arguments = {"$ref": "#/$defs/arguments"}
            action = {
                "type": "object",
                "properties": {"name": {"const": tool}, "args": arguments},
                "required": ["args"],
            }
            branches.append(branch("edit", edited_action=action))
    else:
        embeddable = isinstance(response, dict) and "$ref" not in json.dumps(response)
        branches.append(branch("answer", answer=response if embeddable else {}))
    schema["anyOf"] = branches
    return schema


def _identity(decision: Any, default: str | None) -> tuple[str | None, str | None]:
    """Who gives a decision: its ``answered_by`` (else ``default``) and ``identity_token``.

    Raises:
        ValueError: either is there but not a non-empty string.
    """
    decision = _one(decision)
    if not isinstance(decision, Mapping):
        return default, None
    found: list[str | None] = []
    for key, fallback in (("answered_by", default), ("identity_token", None)):
        value = decision.get(key, fallback)
        if value is not None and not (isinstance(value, str) and value.strip()):
            raise ValueError(
                f"a decision's {key!r} must be a non-empty string, got {_shown(value)}"
            )
        found.append(value)
    return found[0], found[1]


def _one(decision: Any) -> Any:
    """The decision itself, out of LangChain's batched ``{"decisions": [decision]}``.

    Raises:
        ValueError: the batch holds other than exactly one decision.
    """
    if isinstance(decision, Mapping) and set(decision) == {"decisions"}:
        decisions = decision["decisions"]
        if not isinstance(decisions, list) or len(decisions) != 1:
            raise ValueError(
                "a durable call's interrupt takes exactly one decision; resume each interrupt"
                " by its id (Command(resume={interrupt.id: decision}))"
            )
        return decisions[0]
    return decision


def _answer(decision: Any, tool: str, prompt: bytes, call_id: str) -> Any:
    """The engine answer a resume value stands for (``_WAIT``: wait for the call).

    A decision may name its call (``"call_id"``, as the interrupt's value does): one naming
    another call is refused, so a resume value LangGraph hands to another interrupt of the same
    task (several waiting calls in one ``ToolNode`` task) never answers the wrong call.

    Raises:
        ValueError: the value is no decision this question takes (the message says why).
    """
    decision = _one(decision)
    kind = decision.get("type") if isinstance(decision, Mapping) else None
    named = decision.get("call_id", call_id) if isinstance(decision, Mapping) else call_id
    if named != call_id:
        raise ValueError(
            f"this decision names the call {_shown(named)}; this interrupt is of the call"
            f" {call_id!r}"
        )
    if kind not in _DECISIONS:
        raise ValueError(
            f"resume with a decision: {{'type': one of {', '.join(_DECISIONS)}}},"
            f" got {_shown(decision)}"
        )
    assert isinstance(decision, Mapping)
    if kind == "wait":
        return _WAIT
    if kind == "answer":
        if "answer" not in decision:
            raise ValueError(
                "an 'answer' decision needs the answer: {'type': 'answer', 'answer': ...}"
            )
        return decision["answer"]
    loaded = _loaded(prompt)
    if not (isinstance(loaded, dict) and loaded.get("kind") == APPROVAL_PROMPT_KIND):
        raise ValueError(
            f"the call of {tool} asks a question, not for approval: resume with"
            " {'type': 'answer', 'answer': <a value its response schema admits>}"
        )
    if kind == "approve":
        return {"decision": "approve"}
    if kind == "reject":
        message = decision.get("message")
        reason = message if isinstance(message, str) and message.strip() else "no reason given"
        return {"decision": "deny", "reason": reason}
    action = decision.get("edited_action")
    if not isinstance(action, Mapping) or not isinstance(action.get("args"), Mapping):
        raise ValueError(
            "an edit needs the edited action: {'type': 'edit', 'edited_action':"
            " {'name': ..., 'args': {...}}}"
        )
    if action.get("name", tool) != tool:
        raise ValueError(
            f"an edit cannot change the tool: this call is of {tool!r}, the edit names"
            f" {_shown(action.get('name'))}"
        )
    return {"decision": "edit", "arguments": dict(action["args"])}


def _loaded(text: bytes | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:120] + "..."


def _returned(result: ModelResult) -> tuple[str, dict[str, str]]:
    if result.is_error:
        raise ToolException(result.text)
    return result.text, {"call_id": result.call_id or "", "phase": result.phase.value}
