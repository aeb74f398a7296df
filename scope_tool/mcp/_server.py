"""The MCP server: a registry's contracts as tools, each ``tools/call`` one durable call.

A call is started (or attached to) under a derived call id, then followed for a few seconds:
a finished call returns its model-visible result; a question is asked in the best way the
client supports (see :mod:`._asking`): on 2026-07-28 as an ``input_required`` result whose
sealed ``requestState`` names the call and the question, on a handshake session as an
``elicitation/create`` request; a client that declared the tasks extension gets a task backed
by the call instead (:mod:`._tasks`). Everything a later request needs lives in Temporal, so
any ``scope-tool mcp`` process, restarted or not, can serve it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from datetime import timedelta
from typing import Any

import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from scope_tool import Principal, Registry, Request
from scope_tool.client import (
    CallOutcome,
    CallStatus,
    Phase,
    ToolCallHandle,
    ToolCalls,
    ToolCallsError,
)
from scope_tool.client._answer_text import is_short_text
from scope_tool.mcp._access import bound_principal, may_follow, principal_of
from scope_tool.mcp._asking import Question, apply_reply, question_for
from scope_tool.mcp._engine import CallOwners, WorkerCheck, derive_call_id, owner_tag
from scope_tool.mcp._options import McpOptions
from scope_tool.mcp._results import outcome_result, waiting_result
from scope_tool.mcp._tasks import created_task, register_tasks
from scope_tool.mcp.errors import McpSettingsError, NoWorkerError

__all__ = ["CALL_ID_META_KEY", "STATUS_TOOL", "TASKS_EXTENSION", "McpOptions", "build_server"]

STATUS_TOOL = "scope_tool_call_status"
"""The tool a model calls with a ``call_id`` to follow a call that was still waiting."""

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
CALL_ID_META_KEY = "scope-tool/call-id"
"""Request ``_meta`` key a client may set to name the call itself (its own idempotency key)."""

_CALL_PREFIX = "mcp-"
_MAX_CALL_ID_BYTES = 1000
"""Temporal's default limit on a workflow id (what ``ToolCalls.start`` accepts)."""
_POLL_SECONDS = 0.25
_STATUS_WAIT = timedelta(seconds=30)
_NO_WORKER_WAIT = timedelta(seconds=1)


class ScopeToolServer:
    """The handlers behind :func:`build_server` (one instance per process)."""

    def __init__(self, calls: ToolCalls, registry: Registry, options: McpOptions) -> None:
        names = {definition.name for definition in registry.definitions()}
        if STATUS_TOOL in names:
            raise McpSettingsError(
                f"the registry has a tool named {STATUS_TOOL!r}, which scope-tool mcp reserves"
            )
        self.calls = calls
        self.registry = registry
        self.options = options
        self.workers = WorkerCheck(calls)
        self.owners = CallOwners(calls)

    # --- tools/list ---------------------------------------------------------------------

    async def list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        """Every tool's contract, plus the status tool."""
        tools = [
            types.Tool(
                name=definition.name,
                description=definition.description or None,
                input_schema=json.loads(definition.input_schema),
            )
            for definition in self.registry.definitions()
        ]
        tools.append(
            types.Tool(
                name=STATUS_TOOL,
                description=(
                    "Follow a scope-tool call that was not finished when its tool returned:"
                    " returns its result, or asks the pending question again."
                ),
                input_schema={
                    "type": "object",
                    "properties": {"call_id": {"type": "string", "minLength": 1}},
                    "required": ["call_id"],
                    "additionalProperties": False,
                },
            )
        )
        return types.ListToolsResult(tools=tools)

    # --- tools/call ---------------------------------------------------------------------

    async def call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult | dict[str, Any]:
        """Start or attach to the durable call, then follow it (see the module docstring)."""
        if params.request_state is not None:
            return await self._repeat(ctx, params)
        if params.name == STATUS_TOOL:
            call_id = str((params.arguments or {}).get("call_id", ""))
            handle = await self.owned(ctx, call_id)
            return await self.follow(ctx, handle, tool=await self._tool_of(handle))
        requester = self.requester(ctx)
        if self.registry.resolve(params.name) is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"unknown tool {params.name!r}")
        try:
            arguments = json.dumps(params.arguments or {}, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            # JSON text may escape a lone surrogate ("\ud800"); no JSON document the tool can
            # receive (I-JSON, UTF-8) carries one, so it is the caller's bad input.
            raise MCPError(
                code=types.INVALID_PARAMS,
                message="arguments: a string holds a lone surrogate (U+D800-U+DFFF),"
                " which is not valid RFC 7493 JSON",
            ) from None
        meta = ctx.meta or {}
        client_key = meta.get(CALL_ID_META_KEY)
        try:
            call_id = derive_call_id(
                tool=params.name,
                arguments=arguments,
                scope=self._scope(ctx),
                request_id=ctx.request_id,
                client_key=client_key if isinstance(client_key, str) else None,
                owner=requester,
            )
        except ValueError as error:
            raise MCPError(code=types.INVALID_PARAMS, message=str(error)) from None
        if not await self.workers.has_worker():
            raise MCPError(
                code=types.INTERNAL_ERROR, message=str(NoWorkerError(self.calls.task_queue))
            )
        try:
            handle = await self.calls.start(
                Request(name=params.name, arguments=arguments.decode("utf-8")),
                call_id=call_id,
                principal=requester,
            )
        except ValueError as error:
            raise MCPError(code=types.INVALID_PARAMS, message=str(error)) from None
        if wants_task(ctx):
            return await created_task(self, handle)
        return await self.follow(ctx, handle, tool=params.name, just_started=True)

    def find(self, call_id: str) -> ToolCallHandle:
        """A call started through MCP (ids outside ``mcp-`` are not this front end's to show)."""
        if not call_id.startswith(_CALL_PREFIX):
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"no MCP call with id {call_id[:200]!r} (MCP call ids start with 'mcp-')",
            )
        if not is_short_text(call_id, limit=_MAX_CALL_ID_BYTES):
            # A lone surrogate cannot be sent to Temporal (it was -32603 "Internal server
            # error"); an id over Temporal's limit names no call either.
            raise _unknown(call_id)
        return self.calls.get(call_id)

    def requester(self, ctx: ServerRequestContext[Any]) -> Principal | None:
        """Who sent this request (``None`` without credentials)."""
        try:
            return principal_of(ctx)
        except PermissionError as error:
            raise MCPError(code=types.INVALID_REQUEST, message=str(error)) from None

    def answerer(self, ctx: ServerRequestContext[Any]) -> str:
        """The identity history records for an answer this request gives."""
        requester = self.requester(ctx)
        return requester.user if requester is not None else self.options.answered_by

    async def owned(self, ctx: ServerRequestContext[Any], call_id: str) -> ToolCallHandle:
        """The call ``call_id`` if this request's principal may see it (see ``may_follow``).

        A call of another principal is refused exactly as a call that does not exist, so the
        refusal never confirms an id.
        """
        handle = self.find(call_id)
        try:
            owner = await self.owners.owner(handle)
        except LookupError:
            raise _unknown(call_id) from None
        if not may_follow(self.requester(ctx), owner, reviewer_role=self.options.reviewer_role):
            raise _unknown(call_id)
        return handle

    async def status_of(self, handle: ToolCallHandle) -> CallStatus:
        """The call's snapshot; a missing call or silent workers become protocol errors.

        A status is a query a worker answers. Right after a worker died, Temporal still routes
        the call's queries to the dead worker's sticky queue for a few seconds before a live
        worker takes over, so the wait is generous. With no worker at all, a finished call
        still answers from its recorded outcome; a running one is an error that says why.
        """
        alive = await self.workers.has_worker()
        try:
            return await handle.status(wait_for_worker=_STATUS_WAIT if alive else _NO_WORKER_WAIT)
        except LookupError:
            raise _unknown(handle.call_id) from None
        except ToolCallsError as error:
            message = (
                str(error)
                if alive
                else str(NoWorkerError(self.calls.task_queue, call_id=handle.call_id))
            )
            raise MCPError(code=types.INTERNAL_ERROR, message=message) from None

    async def follow(
        self,
        ctx: ServerRequestContext[Any],
        handle: ToolCallHandle,
        *,
        tool: str,
        refusal: str | None = None,
        settle_request: str | None = None,
        just_started: bool = False,
    ) -> types.CallToolResult | types.InputRequiredResult:
        """Follow the call for up to ``wait_seconds``: its result, a question, or "waits".

        Between status reads it waits on the call's result (a long poll), so a call that
        completes is answered at once, not at the next status read. A call ``just_started``
        has not asked anything yet, so its first status read waits for one such poll.
        """
        finished = asyncio.ensure_future(handle.result())
        try:
            if just_started:
                await asyncio.wait({finished}, timeout=_POLL_SECONDS)
            return await self._follow(
                ctx,
                handle,
                finished,
                tool=tool,
                refusal=refusal,
                settle_request=settle_request,
            )
        finally:
            finished.cancel()
            with contextlib.suppress(BaseException):
                await finished

    async def _follow(
        self,
        ctx: ServerRequestContext[Any],
        handle: ToolCallHandle,
        finished: asyncio.Future[CallOutcome],
        *,
        tool: str,
        refusal: str | None,
        settle_request: str | None,
    ) -> types.CallToolResult | types.InputRequiredResult:
        deadline = time.monotonic() + self.options.wait_seconds
        while True:
            if finished.done() and finished.exception() is None:
                return outcome_result(finished.result(), call_id=handle.call_id)
            status = await self.status_of(handle)
            if status.phase.is_terminal:
                outcome = status.outcome or await handle.result()
                return outcome_result(outcome, call_id=handle.call_id)
            pending = status.pending
            settling = pending is not None and pending.request_id == settle_request
            if pending is not None and not settling:
                question = question_for(
                    pending,
                    call_id=handle.call_id,
                    tool=tool,
                    capabilities=ctx.session.client_capabilities,
                    inbox_url=self.options.inbox_url,
                    refusal=refusal,
                )
                if question is None:
                    return self._waiting(handle, tool, status.phase)
                if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
                    state = {
                        "call": handle.call_id,
                        "request": question.request_id,
                        "tool": tool,
                        "form": question.plan is not None,
                        "owner": owner_tag(self.requester(ctx)),
                    }
                    return types.InputRequiredResult(
                        input_requests={question.request_id: question.elicitation},
                        request_state=json.dumps(state),
                    )
                if not ctx.session.can_send_request:
                    return self._waiting(handle, tool, status.phase)
                done, refusal, settle_request = await self._ask_in_session(ctx, handle, question)
                if done is not None:
                    return done
                deadline = time.monotonic() + self.options.wait_seconds
                continue
            if time.monotonic() >= deadline:
                note = "Answer it on the inbox page." if settling else ""
                return self._waiting(handle, tool, status.phase, note=note)
            await asyncio.wait({finished}, timeout=_POLL_SECONDS)

    async def _ask_in_session(
        self, ctx: ServerRequestContext[Any], handle: ToolCallHandle, question: Question
    ) -> tuple[types.CallToolResult | None, str | None, str | None]:
        """Handshake era: ask with ``elicitation/create`` and apply the reply in place.

        Returns the final result when the person declined or dismissed (the call waits), else
        ``None`` plus the refusal to show next and the URL-mode question to let settle.
        """
        params = question.elicitation.params
        if isinstance(params, types.ElicitRequestURLParams):
            reply = await ctx.session.elicit_url(
                params.message,
                params.url,
                params.elicitation_id or question.request_id,
                related_request_id=ctx.request_id,
            )
        else:
            reply = await ctx.session.elicit_form(
                params.message, params.requested_schema, related_request_id=ctx.request_id
            )
        outcome = await apply_reply(handle, question, reply, answered_by=self.answerer(ctx))
        refusal = outcome.refusal if outcome.reason != "stale_request" else None
        settle = question.request_id if question.plan is None else None
        if (
            question.plan is not None
            and (outcome.declined or outcome.dismissed)
            and not outcome.answered
        ):
            what = "declined" if outcome.declined else "dismissed the question"
            status = await self.status_of(handle)
            waiting = self._waiting(
                handle,
                status.tool,
                status.phase,
                note=f"The person {what}; the call keeps waiting.",
            )
            return waiting, None, None
        return None, refusal, settle

    async def _repeat(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        """2026-07-28: the client repeats the call with ``inputResponses`` for our question.

        The SDK's boundary has already checked the seal, the TTL, the method, tool and digest of
        the arguments, and the principal. The state itself names the call, the question, and
        the owner it was issued to (checked again here, so it holds without credentials too).
        A form reply to a question that was already answered is a replay: refused.
        """
        try:
            state = json.loads(params.request_state or "")
            call_id, request_id, tool, form, owner = (
                str(state["call"]),
                str(state["request"]),
                str(state["tool"]),
                bool(state["form"]),
                str(state["owner"]),
            )
        except (ValueError, KeyError, TypeError):
            raise MCPError(code=types.INVALID_PARAMS, message="malformed requestState") from None
        if owner != owner_tag(self.requester(ctx)):
            raise _unknown(call_id)
        handle = await self.owned(ctx, call_id)
        status = await self.status_of(handle)
        replies = params.input_responses or {}
        reply = replies.get(request_id)
        if form and reply is not None and any(a.request_id == request_id for a in status.answers):
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=(
                    f"this requestState was already used: question {request_id} of call"
                    f" {call_id} is answered; call {STATUS_TOOL} with this call_id to follow it"
                ),
                data={"reason": "request_state_used", "call_id": call_id},
            )
        pending = status.pending
        if pending is None or pending.request_id != request_id or reply is None:
            return await self.follow(ctx, handle, tool=tool)
        question = question_for(
            pending,
            call_id=call_id,
            tool=tool,
            capabilities=ctx.session.client_capabilities,
            inbox_url=self.options.inbox_url,
        )
        if question is None or not isinstance(reply, types.ElicitResult):
            return await self.follow(ctx, handle, tool=tool)
        outcome = await apply_reply(handle, question, reply, answered_by=self.answerer(ctx))
        if outcome.refusal is not None and outcome.reason != "stale_request":
            return await self.follow(ctx, handle, tool=tool, refusal=outcome.refusal)
        if question.plan is None:
            return await self.follow(ctx, handle, tool=tool, settle_request=request_id)
        if not outcome.answered and (outcome.declined or outcome.dismissed):
            what = "declined" if outcome.declined else "dismissed the question"
            return self._waiting(
                handle, tool, status.phase, note=f"The person {what}; the call keeps waiting."
            )
        return await self.follow(ctx, handle, tool=tool)

    def _waiting(
        self, handle: ToolCallHandle, tool: str, phase: Phase, *, note: str = ""
    ) -> types.CallToolResult:
        return waiting_result(
            call_id=handle.call_id, tool=tool, phase=phase, note=note, status_tool=STATUS_TOOL
        )

    async def _tool_of(self, handle: ToolCallHandle) -> str:
        return (await self.status_of(handle)).tool

    def _scope(self, ctx: ServerRequestContext[Any]) -> str:
        """The session a resend shares; a stateless request gets a nonce of its own."""
        headers = getattr(ctx.request, "headers", None)
        session = headers.get("mcp-session-id") if headers is not None else None
        return f"session:{session}" if session else f"request:{uuid.uuid4().hex}"


def _unknown(call_id: str) -> MCPError:
    """The one reply for a call that does not exist or is not the requester's to see."""
    return MCPError(code=types.INVALID_PARAMS, message=f"no call with id {call_id[:200]!r}")


def wants_task(ctx: ServerRequestContext[Any]) -> bool:
    """True when this request declared the tasks extension (2026-07-28 per-request caps)."""
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return False
    capabilities = ctx.session.client_capabilities
    extensions = capabilities.extensions if capabilities is not None else None
    return bool(extensions) and TASKS_EXTENSION in (extensions or {})


def build_server(calls: ToolCalls, registry: Registry, options: McpOptions) -> Server[Any]:
    """The lowlevel MCP server for ``registry``, with the tasks extension and sealed state."""
    handlers = ScopeToolServer(calls, registry, options)
    server: Server[Any] = Server(
        "scope-tool",
        version="0.1.0",
        instructions=(
            "Tools run as durable scope-tool calls. A call that waits for a person keeps"
            f" waiting across restarts; follow it with {STATUS_TOOL} and its call_id."
        ),
        on_list_tools=handlers.list_tools,
    )
    # Registered by method rather than ``on_call_tool=``: a task handle is a plain wire mapping
    # (``resultType: "task"``), which the typed constructor argument does not admit.
    server.add_request_handler("tools/call", types.CallToolRequestParams, handlers.call_tool)
    register_tasks(server, handlers)
    server.extensions = {TASKS_EXTENSION: {}}
    security = RequestStateSecurity(
        keys=list(options.state_keys),
        ttl=options.state_ttl_seconds,
        bind_principal=bound_principal,
    )
    server.middleware.append(RequestStateBoundary(security, default_audience="scope-tool"))
    return server
