"""The tool activity: one round of one call, its outcome returned as a tagged union.

Nothing a tool does crosses the activity boundary as an exception: an unknown tool or a refused
request is ``invalid``, a definite failure (``classify_failure``) is ``failure``, anything else
is ``error`` (its ``CallError`` evidence kept for operators, away from the model). Only a lost
worker or a cancellation ends an activity abnormally, and the workflow handles both.

Contract pinning: round 1 returns the sha256 of the tool's canonical ``Definition``; later rounds
refuse to re-enter a tool whose deployed contract no longer has that digest.

Retry safety: for a tool the worker declares safe to retry (``retry_safe=``), the activity
heartbeats ``{retry_safe: true}`` before the tool runs. If the worker is then
lost, the heartbeat timeout hands these details to the workflow, which re-runs the round. A
round lost without such details (every other tool) ends ERRORED "outcome unknown", and the tool
never runs twice. So only retry-safe tools pay for that first heartbeat (one more RPC and server
write per round); every round heartbeats every third of its heartbeat timeout while it runs.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Collection
from datetime import timedelta

from temporalio import activity

from scope_tool import (
    Binding,
    CallError,
    InputRequest,
    Output,
    Registry,
    Request,
    acting_for,
    classify_failure,
)
from scope_tool.errors import ToolError
from workflows.wire import (
    CALL_TOOL_ACTIVITY,
    CallToolInput,
    RoundCompleted,
    RoundErrored,
    RoundFailed,
    RoundInputRequested,
    RoundInvalid,
    RoundResult,
    ToolStartedHeartbeat,
)

__all__ = ["ToolActivities"]

_DEFAULT_HEARTBEAT_EVERY = timedelta(seconds=3)


class ToolActivities:
    """Holds the registry the activity resolves tools in.

    Args:
        registry: the tools this worker runs.
        retry_safe: names of tools that may run again when their worker is lost mid-round
            (idempotent tools). Every other tool runs at most once per round.
    """

    def __init__(self, registry: Registry, *, retry_safe: Collection[str] = ()) -> None:
        if not isinstance(registry, Registry):
            raise TypeError(
                f"registry must be a scope_tool.Registry, not {type(registry).__name__}"
            )
        self._registry = registry
        self._retry_safe = frozenset(retry_safe)

    @activity.defn(name=CALL_TOOL_ACTIVITY)
    async def call_tool(self, round_input: CallToolInput) -> RoundResult:
        """Run one round of a call (see the module docstring)."""
        binding = self._registry.resolve(round_input.tool)
        if binding is None:
            message = f"tool: unknown tool {_quote(round_input.tool)}"
            return RoundInvalid(message=message, output=Output.text_output(f"error: {message}"))
        digest = binding.contract.digest
        if round_input.contract_digest is not None and round_input.contract_digest != digest:
            return RoundErrored(
                message=f"the contract of tool {_quote(round_input.tool)} changed since round 1"
                f" (digest {round_input.contract_digest[:12]} then, {digest[:12]} now);"
                " refusing to re-enter it with a contract the model did not see",
            )
        retry_safe = round_input.tool in self._retry_safe
        started = ToolStartedHeartbeat(retry_safe=retry_safe)
        if retry_safe:
            # Without these details a lost round counts as not retry-safe, which is the answer
            # for every other tool already; only a retry-safe one must say so before it runs.
            activity.heartbeat(started)
        beating = asyncio.create_task(_heartbeat_until_cancelled(started))
        try:
            return await self._run(binding, round_input, digest=digest, retry_safe=retry_safe)
        finally:
            beating.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await beating

    async def _run(
        self, binding: Binding, round_input: CallToolInput, *, digest: str, retry_safe: bool
    ) -> RoundResult:
        try:
            request = Request(name=round_input.tool, arguments=round_input.arguments)
        except (ToolError, ValueError, TypeError) as exc:
            return RoundInvalid(message=str(exc), output=Output.text_output(f"error: {exc}"))
        continuation = None
        if round_input.input_request is not None:
            if round_input.response is None:
                return RoundErrored(message="round input has a committed request but no answer")
            try:
                continuation = InputRequest.from_json(round_input.input_request).continuation(
                    round_input.response
                )
            except (ToolError, ValueError) as exc:
                return RoundErrored(message=f"the committed answer no longer re-enters: {exc}")
        try:
            invocation = binding.contract.prepare(request, continuation)
        except (ToolError, ValueError) as exc:
            return RoundInvalid(message=str(exc), output=Output.text_output(f"error: {exc}"))
        try:
            # The call's principal reaches every Guard's Authorizer in this round.
            with acting_for(round_input.principal):
                result = await binding.call(invocation)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            failure = classify_failure(exc)
            if failure is not None:
                return RoundFailed(
                    failure_kind=failure.kind, output=failure.output, message=str(failure)
                )
            return RoundErrored(message=f"{type(exc).__name__}: {exc}", evidence=_evidence(exc))
        if result.input_request is not None:
            return RoundInputRequested(
                input_request=result.input_request.to_json(), contract_digest=digest
            )
        return RoundCompleted(output=result.output)


async def _heartbeat_until_cancelled(details: ToolStartedHeartbeat) -> None:
    """Keep the round alive while the tool runs; a lost worker stops this, and the server sees."""
    timeout = activity.info().heartbeat_timeout
    every = timeout / 3 if timeout else _DEFAULT_HEARTBEAT_EVERY
    while True:
        await asyncio.sleep(every.total_seconds())
        activity.heartbeat(details)


def _evidence(exc: BaseException) -> Output | None:
    """The evidence of the first ``CallError`` on the explicit cause chain, if any."""
    current: BaseException | None = exc
    for _ in range(64):
        if current is None:
            return None
        if isinstance(current, CallError):
            return current.evidence
        current = current.__cause__
    return None


def _quote(text: str) -> str:
    import json

    return json.dumps(text, ensure_ascii=True)
