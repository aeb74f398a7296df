"""An upstream MCP tool as a scope-tool :class:`~scope_tool.Tool`.

Each round of the durable call that runs it is one step of the upstream ``tools/call``:

* round 1 (or the round after an approval) sends the call, with the call's idempotency key in
  ``_meta``, after reporting that key to the round (so a worker lost mid-call ends the call
  "outcome unknown" naming the key, and the runtime never sends it again);
* a question the upstream asks (elicitation, or an ``input_required`` result, which the MCP
  client turns into the same callback) ends the round with an
  :class:`~scope_tool.InputRequest` whose response schema is the upstream's requested schema;
  the answer, checked against it by the runtime, goes back upstream in the next round, which
  the round pins to this worker process (the upstream session that asked is here);
* the upstream's result completes the call; an ``isError`` result is a ``failed`` outcome.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import json
from typing import TYPE_CHECKING, Any, Final

import mcp_types as types

from scope_tool._definition import Definition
from scope_tool._failure import Failure, FailureKind
from scope_tool._input_request import InputRequest
from scope_tool._invocation import Invocation
from scope_tool._output import MediaBlock, Output, TextBlock
from scope_tool._result import Result
from scope_tool._round import RoundReport, current_round
from scope_tool._schema import CompiledSchema
from scope_tool.gateway._upstream import Asked, Finished, PendingCall, definition_digest
from scope_tool.gateway.errors import UpstreamCallLostError, UpstreamError

if TYPE_CHECKING:
    from scope_tool.gateway._upstream import Upstream

__all__ = ["ELICITATION_PROMPT_KIND", "UpstreamTool", "idempotency_key"]

ELICITATION_PROMPT_KIND: Final = "scope_tool.gateway.elicitation"
"""The ``"kind"`` member of the prompt of a question an upstream server asked."""


def idempotency_key(call_id: str, server: str, tool: str, arguments: bytes) -> str:
    """The key of one upstream call: the same call and arguments give the same key, always.

    An approver's edit changes the arguments, and so the key.
    """
    digest = hashlib.sha256()
    for part in (b"scope-tool/gateway/v1", call_id.encode(), server.encode(), tool.encode()):
        digest.update(len(part).to_bytes(4, "big"))
        digest.update(part)
    digest.update(arguments)
    return "stk-" + digest.hexdigest()[:40]


class UpstreamTool:
    """One tool of an upstream server, under its gateway name.

    Args:
        upstream: the server it belongs to (its connections live on the gateway's hub).
        listed: the tool as the upstream listed it when the gateway started.
        name: the name the gateway serves it under (prefixed).

    Raises:
        UpstreamError: the tool's input or output schema does not compile here.
    """

    __slots__ = ("_definition", "_digest", "_listed", "_output_schema", "_upstream")

    def __init__(self, upstream: Upstream, listed: types.Tool, *, name: str) -> None:
        self._upstream = upstream
        self._listed = listed
        self._digest = definition_digest(listed)
        described = listed.description or listed.title or ""
        try:
            self._definition = Definition(
                name=name,
                description=described,
                input_schema=json.dumps(listed.input_schema, ensure_ascii=False),
            )
            self._definition.validate()
            self._output_schema = (
                CompiledSchema.parse(json.dumps(listed.output_schema).encode("utf-8"))
                if listed.output_schema is not None
                else None
            )
        except (ValueError, TypeError) as exc:
            raise UpstreamError(
                f"tool {listed.name!r} of upstream server {upstream.config.name!r} cannot be"
                f" served: {exc}"
            ) from None

    @property
    def upstream_name(self) -> str:
        return self._listed.name

    @property
    def read_only(self) -> bool:
        annotations = self._listed.annotations
        return bool(annotations is not None and annotations.read_only_hint)

    def definition(self) -> Definition:
        return self._definition

    async def call(self, invocation: Invocation) -> Result:
        """Send the call (or its answer) upstream and turn what comes back into a result."""
        hub = self._upstream.hub
        round_context = current_round()
        continuation = invocation.continuation
        if continuation is None:
            self._check_contract()
            call_id = round_context.call_id if round_context is not None else _no_call_id()
            key = idempotency_key(
                call_id, self._upstream.config.name, self._listed.name, invocation.arguments
            )
            if round_context is not None:
                # Before anything is sent: a round lost from here on names this key.
                round_context.report(RoundReport(idempotency_key=key))
            arguments = json.loads(invocation.arguments)
            pending = await hub.run(
                self._upstream.start_call(self._listed.name, arguments, key=key)
            )
        else:
            state = json.loads(continuation.state)
            key = state["key"]
            if round_context is not None:
                round_context.report(RoundReport(idempotency_key=key))
            found = hub.pending.get(state["pending"])
            if found is None:
                raise UpstreamCallLostError(
                    f"the call of {self._listed.name!r} on upstream server"
                    f" {self._upstream.config.name!r} was waiting for this answer in a worker"
                    " process that is gone (its upstream session with it); it is not sent again",
                    idempotency_key=key,
                )
            pending = found
            await hub.run(pending.answer(json.loads(continuation.response)))
        return await self._next(pending, key)

    async def _next(self, pending: PendingCall, key: str) -> Result:
        round_context = current_round()

        def progress(value: float, total: float | None, message: str | None) -> None:
            if round_context is not None:
                round_context.report(
                    RoundReport(idempotency_key=key, progress=value, total=total, message=message)
                )

        try:
            event = await self._upstream.hub.run(pending.next_event(progress))
        except asyncio.CancelledError:
            self._upstream.hub.submit(pending.cancel())
            raise
        if isinstance(event, Asked):
            if round_context is not None:
                # The upstream session that asked lives in this process: the answer must too.
                # A call that ends unanswered (withdrawn, expired, cancelled) cancels the
                # upstream's question.
                hub = self._upstream.hub

                def release(reason: str) -> None:
                    hub.submit(pending.release(reason))

                round_context.pin_next_round(release=release)
            return Result(input_request=self._question(event, pending, key))
        return self._finished(event, key)

    def _question(self, asked: Asked, pending: PendingCall, key: str) -> InputRequest:
        requested: Any = asked.params.requested_schema
        schema = (
            requested
            if isinstance(requested, dict)
            else requested.model_dump(mode="json", by_alias=True, exclude_none=True)
        )
        prompt = {
            "kind": ELICITATION_PROMPT_KIND,
            "question": asked.params.message,
            "tool": self._definition.name,
            "server": self._upstream.config.name,
        }
        state = {"pending": pending.id, "key": key}
        return InputRequest(
            prompt=json.dumps(prompt, ensure_ascii=False),
            response_schema=json.dumps(schema, ensure_ascii=False),
            state=json.dumps(state),
        )

    def _finished(self, event: Finished, key: str) -> Result:
        if event.error is not None:
            from mcp.shared.exceptions import MCPError

            if isinstance(event.error, MCPError):
                # The upstream answered: a definite outcome, not an unknown one.
                raise Failure(
                    kind=FailureKind.FAILED,
                    output=Output.text_output(f"error: upstream: {event.error.message}"),
                    cause=event.error,
                )
            raise UpstreamCallLostError(
                f"the call of {self._listed.name!r} on upstream server"
                f" {self._upstream.config.name!r} was sent and ended without an answer"
                f" ({type(event.error).__name__}: {event.error})",
                idempotency_key=key,
            )
        assert event.result is not None
        output = _output(event.result)
        if event.result.is_error:
            raise Failure(
                kind=FailureKind.FAILED,
                output=output,
                cause=UpstreamError(
                    f"upstream tool {self._listed.name!r} of server"
                    f" {self._upstream.config.name!r} returned an error result"
                ),
            )
        return Result(output=output)

    def _check_contract(self) -> None:
        """Refuse to run a tool whose upstream contract changed since it was listed here."""
        now = self._upstream.tools.get(self._listed.name)
        if now is None or definition_digest(now) != self._digest:
            change = "is no longer listed" if now is None else "changed its listing"
            raise UpstreamError(
                f"upstream tool {self._listed.name!r} of server {self._upstream.config.name!r}"
                f" {change} since this worker started; refusing to run it with a contract the"
                " model (or its approver) did not see; restart the worker to serve the new one"
            )

    def __repr__(self) -> str:
        return f"UpstreamTool({self._definition.name!r})"


def _no_call_id() -> str:
    import uuid

    return f"direct-{uuid.uuid4().hex}"


def _output(result: types.CallToolResult) -> Output:
    blocks: list[TextBlock | MediaBlock] = []
    for item in result.content:
        if isinstance(item, types.TextContent):
            if item.text:
                blocks.append(TextBlock(item.text))
        elif isinstance(item, types.ImageContent | types.AudioContent):
            try:
                data = base64.b64decode(item.data, validate=True)
            except (binascii.Error, ValueError):
                blocks.append(TextBlock(item.model_dump_json(by_alias=True)))
                continue
            blocks.append(MediaBlock(mime_type=item.mime_type, data=data))
        else:
            blocks.append(TextBlock(item.model_dump_json(by_alias=True, exclude_none=True)))
    details: Any = result.structured_content
    return Output(
        blocks, None if details is None else json.dumps(details, ensure_ascii=False).encode()
    )
