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
write per round); every round heartbeats while it runs, every third of its heartbeat timeout or
every ``cancel_check_interval`` (1 s by default) if sooner, because a heartbeat's reply is how
a running activity learns that its call was cancelled.

Isolation: the tool runs on its own event loop in its own thread (``scope_tool.workers._isolation``), so a
tool that blocks its loop cannot starve the heartbeats of other rounds; it is named in a warning.

Cancellation: a cancelled round reports ``cancelled`` with what the tool did after the
cancellation (a synchronous function's thread cannot be stopped and may finish its effect). A
tool that still *completed* keeps its result: cancellation never replaces a completed outcome.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Callable, Collection
from datetime import timedelta

from temporalio import activity

from scope_tool import (
    Binding,
    CallError,
    Output,
    Registry,
    Request,
    acting_for,
    classify_failure,
    wire,
)
from scope_tool._round import RoundContext, RoundReport, in_round
from scope_tool.errors import ToolError
from scope_tool.wire._questions import read_question
from scope_tool.workers._carry import carried
from scope_tool.workers._isolation import run_isolated

__all__ = ["Releases", "ToolActivities"]

_LOG = logging.getLogger("scope_tool.workers")
_DEFAULT_HEARTBEAT_EVERY = timedelta(seconds=3)
_DEFAULT_CANCEL_CHECK = timedelta(seconds=1)
_DEFAULT_CANCEL_GRACE = timedelta(seconds=5)


class ToolActivities:
    """Holds the registry the activity resolves tools in.

    Args:
        registry: the tools this worker runs.
        retry_safe: names of tools that may run again when their worker is lost mid-round
            (idempotent tools). Every other tool runs at most once per round.
        cancel_check_interval: longest time between heartbeats of a running round, so a
            cancellation reaches the tool within about this long (one heartbeat RPC each).
        cancel_grace: how long a cancelled round waits for its tool to stop before reporting.
        blocked_warning_after: how long a tool may block its event loop before the warning.
        pinned_queue: the queue only this worker process polls (``wire.process_queue``); a
            question whose tool pinned the next round (``RoundContext.pin_next_round``) names
            it, so the answer re-enters here. ``None``: pinning has no effect.
        pinned_wait: how long a pinned round may wait for this process before the call ends
            "outcome unknown".
        releases: where a pinned question's ``release`` callback waits for its call to end
            unanswered (shared with the process queue's :class:`PinnedRounds`).
    """

    def __init__(
        self,
        registry: Registry,
        *,
        retry_safe: Collection[str] = (),
        cancel_check_interval: timedelta = _DEFAULT_CANCEL_CHECK,
        cancel_grace: timedelta = _DEFAULT_CANCEL_GRACE,
        blocked_warning_after: timedelta = timedelta(seconds=1),
        pinned_queue: str | None = None,
        pinned_wait: timedelta = timedelta(seconds=60),
        releases: Releases | None = None,
    ) -> None:
        if not isinstance(registry, Registry):
            raise TypeError(
                f"registry must be a scope_tool.Registry, not {type(registry).__name__}"
            )
        for name, value in (
            ("cancel_check_interval", cancel_check_interval),
            ("cancel_grace", cancel_grace),
            ("blocked_warning_after", blocked_warning_after),
            ("pinned_wait", pinned_wait),
        ):
            if value <= timedelta(0):
                raise ValueError(f"{name} must be positive, got {value}")
        self._registry = registry
        self._retry_safe = frozenset(retry_safe)
        self._cancel_check = cancel_check_interval
        self._cancel_grace = cancel_grace.total_seconds()
        self._warn_after = blocked_warning_after.total_seconds()
        self._pinned_queue = pinned_queue
        self._pinned_wait = pinned_wait.total_seconds()
        self._releases = releases if releases is not None else Releases()

    @activity.defn(name=wire.CALL_TOOL_ACTIVITY)
    async def call_tool(self, round_input: wire.CallToolInput) -> wire.RoundResult:
        """Run one round of a call (see the module docstring)."""
        binding = self._registry.resolve(round_input.tool)
        if binding is None:
            message = f"tool: unknown tool {_quote(round_input.tool)}"
            return wire.RoundInvalid(
                message=message, output=Output.text_output(f"error: {message}")
            )
        digest = binding.contract.digest
        if round_input.contract_digest is not None and round_input.contract_digest != digest:
            return wire.RoundErrored(
                message=f"the contract of tool {_quote(round_input.tool)} changed since round 1"
                f" (digest {round_input.contract_digest[:12]} then, {digest[:12]} now);"
                " refusing to re-enter it with a contract the model did not see",
            )
        retry_safe = round_input.tool in self._retry_safe
        notes = _RoundNotes(wire.ToolStartedHeartbeat(retry_safe=retry_safe))
        if retry_safe:
            # Without these details a lost round counts as not retry-safe, which is the answer
            # for every other tool already; only a retry-safe one must say so before it runs.
            activity.heartbeat(notes.details)
        beating = asyncio.create_task(_heartbeat_until_cancelled(notes, self._cancel_check))
        # The question this round answers is re-entering: nothing is left to release.
        self._releases.forget(round_input.call_id, round_input.round - 1)
        pin = _Pinned()
        context = RoundContext(
            call_id=round_input.call_id,
            round=round_input.round,
            report=notes.report,
            pin_next_round=pin,
        )
        helpers = [beating]
        if round_input.report_running:
            helpers.append(asyncio.create_task(_report_running(round_input)))
        try:
            with in_round(context):
                result = await self._run(binding, round_input, digest=digest, retry_safe=retry_safe)
            if (
                isinstance(result, wire.RoundInputRequested)
                and pin.pinned
                and self._pinned_queue is not None
            ):
                if pin.release is not None:
                    self._releases.keep(round_input.call_id, round_input.round, pin.release)
                result = dataclasses.replace(
                    result,
                    resume_queue=self._pinned_queue,
                    resume_within_seconds=self._pinned_wait,
                    idempotency_key=notes.details.idempotency_key,
                )
            return carried(result, round_input)
        finally:
            for helper in helpers:
                helper.cancel()
            for helper in helpers:
                with contextlib.suppress(asyncio.CancelledError):
                    await helper

    async def _run(
        self, binding: Binding, round_input: wire.CallToolInput, *, digest: str, retry_safe: bool
    ) -> wire.RoundResult:
        try:
            request = Request(name=round_input.tool, arguments=round_input.arguments)
        except (ToolError, ValueError, TypeError) as exc:
            return wire.RoundInvalid(message=str(exc), output=Output.text_output(f"error: {exc}"))
        continuation = None
        if round_input.input_request is not None:
            if round_input.response is None:
                return wire.RoundErrored(
                    message="round input has a committed request but no answer"
                )
            try:
                continuation = read_question(round_input.input_request).continuation(
                    round_input.response
                )
            except (ToolError, ValueError) as exc:
                return wire.RoundErrored(message=f"the committed answer no longer re-enters: {exc}")
        try:
            invocation = binding.contract.prepare(request, continuation)
        except (ToolError, ValueError) as exc:
            return wire.RoundInvalid(message=str(exc), output=Output.text_output(f"error: {exc}"))
        label = f"tool {_quote(round_input.tool)} (call {_quote(round_input.call_id)}, round {round_input.round})"
        # The call's principal reaches every Guard's Authorizer in this round (the tool's
        # thread runs in a copy of this context).
        with acting_for(round_input.principal):
            end = await run_isolated(
                lambda: binding.call(invocation),
                label=label,
                warn_after=self._warn_after,
                grace=self._cancel_grace,
            )
        if end.cancelled and not _cancel_requested():
            # The worker is shutting down or the round timed out: the call was not cancelled,
            # so the round is lost as before (outcome unknown, or re-run if retry-safe).
            raise asyncio.CancelledError()
        if end.value is None and end.error is None:
            return wire.RoundCancelled(
                message=f"round {round_input.round} was cancelled: {end.note}"
            )
        if end.cancelled and end.value is not None and end.value.input_request is not None:
            return wire.RoundCancelled(
                message=f"round {round_input.round} was cancelled; the tool asked a question"
                f" after it, which was not committed ({end.note})"
            )
        try:
            if end.error is not None:
                raise end.error
            assert end.value is not None
            result = end.value
        except Exception as exc:
            failure = classify_failure(exc)
            if failure is not None:
                return wire.RoundFailed(
                    failure_kind=failure.kind, output=failure.output, message=str(failure)
                )
            return wire.RoundErrored(
                message=f"{type(exc).__name__}: {exc}", evidence=_evidence(exc)
            )
        if result.input_request is not None:
            return wire.RoundInputRequested(
                input_request=result.input_request.to_json(),
                contract_digest=digest,
                policy=binding.approval_policy,
            )
        return wire.RoundCompleted(output=result.output)


def _cancel_requested() -> bool:
    """Whether the server asked this round to stop (the call was cancelled)."""
    details = activity.cancellation_details()
    return details is not None and details.cancel_requested


class Releases:
    """The ``release`` callbacks of this process's pinned questions, by call and round."""

    def __init__(self) -> None:
        self._waiting: dict[tuple[str, int], Callable[[str], None]] = {}

    def keep(self, call_id: str, round_number: int, release: Callable[[str], None]) -> None:
        self._waiting[(call_id, round_number)] = release

    def forget(self, call_id: str, round_number: int) -> None:
        self._waiting.pop((call_id, round_number), None)

    def release(self, call_id: str, round_number: int, reason: str) -> bool:
        """Call the question's callback once; False when there is none (here)."""
        release = self._waiting.pop((call_id, round_number), None)
        if release is None:
            return False
        try:
            release(reason)
        except Exception:  # the call has ended either way; a tool's bug is only logged
            _LOG.exception("releasing round %d of call %s failed", round_number, call_id)
        return True


class _Pinned:
    """``RoundContext.pin_next_round`` of one round: whether the tool pinned, and its release."""

    __slots__ = ("pinned", "release")

    def __init__(self) -> None:
        self.pinned = False
        self.release: Callable[[str], None] | None = None

    def __call__(self, release: Callable[[str], None] | None = None) -> None:
        self.pinned = True
        self.release = release


class _RoundNotes:
    """The details the round's heartbeats carry, with the tool's latest report in them.

    ``report`` is called from the tool's own thread (``scope_tool._round``); it swaps the
    details and wakes the heartbeat loop on the activity's loop, so a reported idempotency key
    is on its way to the server before the tool's effect starts.
    """

    def __init__(self, started: wire.ToolStartedHeartbeat) -> None:
        self.details = started
        self.changed = asyncio.Event()
        self._loop = asyncio.get_running_loop()

    def report(self, note: RoundReport) -> None:
        self.details = dataclasses.replace(
            self.details,
            idempotency_key=note.idempotency_key or self.details.idempotency_key,
            progress=note.progress,
            total=note.total,
            message=note.message,
        )
        with contextlib.suppress(RuntimeError):  # the round is over and its loop closed
            self._loop.call_soon_threadsafe(self.changed.set)


async def _heartbeat_until_cancelled(notes: _RoundNotes, most: timedelta) -> None:
    """Keep the round alive while the tool runs; a lost worker stops this, and the server sees.

    Each heartbeat's reply also carries a pending cancellation, so ``most`` bounds how long a
    cancelled call's tool keeps running unaware. A report from the tool is sent at once (the
    SDK still throttles heartbeats to one per ``most``).
    """
    timeout = activity.info().heartbeat_timeout
    every = min(timeout / 3, most) if timeout else min(_DEFAULT_HEARTBEAT_EVERY, most)
    while True:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(notes.changed.wait(), every.total_seconds())
        notes.changed.clear()
        activity.heartbeat(notes.details)


async def _report_running(round_input: wire.CallToolInput) -> None:
    """Once the round has run a while, tell the call, which then shows it RUNNING.

    Best effort: unsent, the call shows the phase after the round when it ends.
    """
    await asyncio.sleep(wire.ROUND_RUNNING_AFTER_SECONDS)
    try:
        handle = activity.client().get_workflow_handle(round_input.call_id)
        await handle.signal(wire.ROUND_RUNNING, round_input.round)
    except Exception as exc:
        _LOG.warning(
            "call %s round %d: could not report the round running (%s); its phase shows when"
            " it ends",
            round_input.call_id,
            round_input.round,
            exc,
        )


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
