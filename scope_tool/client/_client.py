"""The client facade: start, find, answer and follow tool calls without knowing Temporal.

A call's id is its workflow id. ``start`` is start-or-attach: while a call with that id runs,
starting it again returns the running call (``WorkflowIDConflictPolicy.USE_EXISTING``); once it
has finished, starting it again also returns the finished call (``REJECT_DUPLICATE``, the
rejection turned into an attach), so the tool never runs twice for one call id. A new call needs
a new id.

Calls are routed (see ``scope_tool.workflows._workflow``): a round only reaches a worker serving its tool
and contract. For a tool no worker serves (a model's hallucinated name), round 1 gets a short
schedule-to-start timeout and the call ends INVALID "no worker serves tool X" within seconds; for
a served tool it gets ``unserved_tool_timeout`` (a worker restarting meanwhile is waited for).
Whether a tool is served is asked once per tool per minute (``ServedTools``), not per call.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import timedelta
from typing import Any, TypedDict, Unpack

from temporalio.client import (
    Client,
)
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode, TLSConfig

from scope_tool import ApprovalPolicy, Principal, Request, current_principal, wire
from scope_tool._read_only import ReadOnly
from scope_tool.client._answer_text import AnswerText, encode_answer, is_short_text
from scope_tool.client._batch import BatchItem, BatchReceipt, answer_batch
from scope_tool.client._closed import assignee_clause, closed_phase, phase_clause, summary_phase
from scope_tool.client._first_stop import (
    WorkerWaitReport,
    refused_start,
    start_at_first_stop,
    start_options,
)
from scope_tool.client._handle import ToolCallHandle
from scope_tool.client._keywords import refuse_unknown_keywords
from scope_tool.client._routing import ServedTools, ToolInfo, list_tools
from scope_tool.config._converter import DATA_CONVERTER, with_scope_tool_converter
from scope_tool.config.settings import (
    DEFAULT_ADDRESS,
    DEFAULT_NAMESPACE,
    DEFAULT_TASK_QUEUE,
    Settings,
)
from scope_tool.config.tracing import client_tracing_interceptors
from scope_tool.config.webhook import allowed_from_environment, check_destination, parse_allowed
from scope_tool.errors import InvalidPolicyError
from scope_tool.wire._status import CallOutcome, CallStatus, CallSummary, Phase
from scope_tool.wire.errors import (
    CallConflictError,
    ToolCallsError,
)

__all__ = ["UNSERVED_TIMEOUT_NOW", "CallOptions", "ToolCalls"]

_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class CallOptions(TypedDict, total=False):
    """The options of a call's start, passed on as keywords by the helpers that start calls.

    Each is described at :meth:`ToolCalls.start`, which checks them; ``start_and_wait`` and
    :func:`scope_tool.agents.run_turn` take the same keywords (``**options``) rather than a copy
    of the list.
    """

    answer_timeout: timedelta | None
    allowed_answerers: Sequence[str]
    notify_url: str | None
    policy: ApprovalPolicy | None
    principal: Principal | None
    require_verified: bool
    channels: Sequence[str]


class ToolCalls:
    """Start and find tool calls on one task queue.

    Args:
        client: a connected Temporal client. If it was not made with :data:`DATA_CONVERTER`,
            a copy with that converter is used (the workflow's values need it).
        task_queue: where the workers of ``python -m scope_tool.workers`` poll.
        heartbeat_timeout: how long a silent tool activity may go before its worker is
            considered lost (the call then ends ERRORED "outcome unknown").
        notify_initial_interval: first retry delay of webhook notifications (doubling, 5 tries).
        unserved_tool_timeout: how long round 1 of a call waits for a worker serving its tool
            before the call ends INVALID "no worker serves tool X", when workers served the
            tool lately. For a tool no worker polls when the call starts it is
            :data:`UNSERVED_TIMEOUT_NOW` (a hallucinated name ends INVALID at once, not never).
            Later rounds wait without limit: the call already ran and only its contract may
            resume it.
        notify_allowed: URL prefixes a ``notify_url`` must fall under (a sequence, or the
            comma-separated ``SCOPE_TOOL_NOTIFY_ALLOWED``); empty allows any http(s) URL but
            link-local and metadata ones; ``None`` reads ``SCOPE_TOOL_NOTIFY_ALLOWED``.
            Workers check their own setting too.
    """

    client: ReadOnly[Client] = ReadOnly("The Temporal client in use (with :data:`DATA_CONVERTER`).")
    task_queue: ReadOnly[str] = ReadOnly("The task queue calls are started on.")

    def __init__(
        self,
        client: Client,
        *,
        task_queue: str = DEFAULT_TASK_QUEUE,
        heartbeat_timeout: timedelta = timedelta(seconds=10),
        notify_initial_interval: timedelta = timedelta(seconds=1),
        unserved_tool_timeout: timedelta = timedelta(minutes=5),
        notify_allowed: str | Sequence[str] | None = None,
    ) -> None:
        if not task_queue:
            raise ValueError("task_queue must be a non-empty string")
        if "@" in task_queue:
            raise ValueError(
                f"task_queue must not contain '@' (tool queues are named task_queue@tool),"
                f" got {task_queue!r}"
            )
        if unserved_tool_timeout < UNSERVED_TIMEOUT_NOW:
            raise ValueError(
                f"unserved_tool_timeout must be at least {UNSERVED_TIMEOUT_NOW.total_seconds():g}s,"
                f" got {unserved_tool_timeout}"
            )
        if heartbeat_timeout <= timedelta(0):
            raise ValueError(f"heartbeat_timeout must be positive, got {heartbeat_timeout}")
        self._client = with_scope_tool_converter(client)
        self._task_queue = task_queue
        self._heartbeat_timeout = heartbeat_timeout
        self._notify_initial_interval = notify_initial_interval
        self._unserved_tool_timeout = unserved_tool_timeout
        self._served = ServedTools(self._client, task_queue, remember=timedelta(minutes=1))
        # One rule for every entry point: unset here means the setting, as the CLI reads it.
        self._notify_allowed = (
            allowed_from_environment() if notify_allowed is None else parse_allowed(notify_allowed)
        )

    @classmethod
    async def connect(
        cls,
        address: str = DEFAULT_ADDRESS,
        *,
        namespace: str = DEFAULT_NAMESPACE,
        task_queue: str = DEFAULT_TASK_QUEUE,
        tls: bool | TLSConfig | None = None,
        api_key: str | None = None,
    ) -> ToolCalls:
        """Connect to a Temporal frontend with the data converter the workflows need."""
        client = await Client.connect(
            address,
            namespace=namespace,
            tls=tls if tls is not None else False,
            api_key=api_key,
            data_converter=DATA_CONVERTER,
            interceptors=client_tracing_interceptors(),  # SCOPE_TOOL_TRACING (scope_tool.config.tracing)
        )
        return cls(client, task_queue=task_queue)

    @classmethod
    async def from_settings(cls, settings: Settings) -> ToolCalls:
        """The facade as ``settings`` say: their connection, task queue and webhook allow-list.

        This is how the CLI, the inbox and the MCP server connect, from ``SCOPE_TOOL_*``
        (``Settings.from_environment()``) or from their flags.
        """
        return cls(
            await settings.connect(),
            task_queue=settings.task_queue,
            notify_allowed=settings.notify_allowed,
        )

    async def tools(self) -> list[ToolInfo]:
        """The tools the workers polling this task queue serve now, by name.

        Read from what each worker published at startup (the catalog workflow), keeping only
        tools whose queue has pollers; empty when no worker runs.
        """
        return await list_tools(self._client, self._task_queue)

    async def serves(self, tool: str) -> bool:
        """Whether a worker polls ``tool``'s queue (remembered for a minute once true)."""
        return await self._served.served(tool)

    async def start(
        self, request: Request, *, call_id: str, **options: Unpack[CallOptions]
    ) -> ToolCallHandle:
        """Start the call ``call_id`` for ``request``, or attach to the call with that id.

        Args:
            request: the model's untrusted proposal; it is admitted by the tool's contract
                inside the worker (a refusal ends the call INVALID, it is not raised here).
            call_id: the identity of this logical call (the workflow id).
            answer_timeout: how long each question may wait for an answer (then EXPIRED).
            allowed_answerers: identities allowed to answer (``answered_by``); empty = anyone.
            notify_url: an ``http(s)://`` URL POSTed when the call waits and when it ends.
            principal: who the agent acts for; recorded with the call and given to the tool's
                ``Authorizer`` in every round. ``None`` takes :func:`scope_tool.current_principal`
                (the ``acting_for`` block around this call), which may be ``None`` too.
            require_verified: answers must carry a valid identity token
                (:mod:`scope_tool.wire.identity`); the token's subject is who answered.
            channels: where each question is also sent when the call starts waiting:
                ``"email"`` (one message per allowed answerer, a link per decision) and/or
                ``"slack"`` (a message with a button per decision); see docs/channels.md.
            policy: how each question is decided (:class:`~scope_tool.ApprovalPolicy`, e.g. a
                quorum of distinct voters); ``None``: the first accepted answer decides.

        Raises:
            ValueError: an argument is malformed (nothing was started).
        """
        call = await self._call_input(request, call_id=call_id, options=options)
        try:
            handle = await self._client.start_workflow(
                wire.WORKFLOW_NAME,
                call,
                **start_options(call, task_queue=self._task_queue),
                request_eager_start=True,
            )
        except WorkflowAlreadyStartedError:
            return await self._attach(call_id, request, call.principal)
        except RPCError as err:
            if err.status == RPCStatusCode.INVALID_ARGUMENT:
                raise refused_start(call_id, request.name, err) from None
            raise
        response = getattr(handle, "_start_workflow_response", None)
        if response is not None and getattr(response, "started", True) is False:
            # USE_EXISTING returned the running call with this id rather than starting one.
            return await self._attach(call_id, request, call.principal)
        return ToolCallHandle(handle, client=self._client)

    async def start_and_wait(
        self,
        request: Request,
        *,
        call_id: str,
        max_wait: timedelta | None = None,
        on_worker_wait: WorkerWaitReport | None = None,
        **options: Unpack[CallOptions],
    ) -> tuple[ToolCallHandle, CallStatus]:
        """Start (or attach to) a call and return it with its status at its first stop.

        The first stop is the call ending or waiting for a person. One round trip
        (update-with-start of the ``first_stop`` update) where the server supports it, else
        :meth:`start` and the ``status`` query polled. Same arguments, attach rules and errors
        as :meth:`start`; with ``max_wait``, a call still running then is returned RUNNING.

        When no worker takes the call for a few seconds (every worker stopped, or none serves
        its tool or contract), ``on_worker_wait`` is called with the call id and the
        :class:`WorkerWait` (once per wait; it keeps waiting); without it a warning of the
        ``scope_tool.client`` logger says so, with the call id.

        Raises:
            ValueError: an argument is malformed (nothing was started).
            CallConflictError: ``call_id`` names a call of another request.
        """
        call = await self._call_input(request, call_id=call_id, options=options)
        if max_wait is not None and max_wait <= timedelta(0):
            raise ValueError(f"max_wait must be positive, got {max_wait}")
        # The fallback start keeps the principal already resolved (current_principal() here).
        pinned: CallOptions = {**options, "principal": call.principal}
        return await start_at_first_stop(
            self._client,
            self._task_queue,
            self.get,
            call,
            lambda: self.start(request, call_id=call_id, **pinned),
            max_wait=max_wait,
            on_worker_wait=on_worker_wait,
        )

    async def _call_input(
        self, request: Request, *, call_id: str, options: CallOptions
    ) -> wire.ToolCallInput:
        """The workflow input for a call, or the ValueError saying which argument is wrong."""
        refuse_unknown_keywords(options, CallOptions.__optional_keys__, "call options")
        answer_timeout = options.get("answer_timeout")
        allowed_answerers = options.get("allowed_answerers", ())
        notify_url = options.get("notify_url")
        principal = options.get("principal")
        require_verified = options.get("require_verified", False)
        channels = options.get("channels", ())
        if isinstance(channels, str) or not all(each in wire.CHANNELS for each in channels):
            raise ValueError(
                f"channels must be a sequence of {', '.join(map(repr, wire.CHANNELS))},"
                f" got {channels!r}"
            )
        policy = options.get("policy")
        if policy is not None and not isinstance(policy, ApprovalPolicy):
            raise InvalidPolicyError(
                f"policy must be a scope_tool.ApprovalPolicy, not {type(policy).__name__}"
            )
        if not isinstance(request, Request):
            raise TypeError(f"request must be a scope_tool.Request, not {type(request).__name__}")
        if not isinstance(call_id, str) or not call_id.strip():
            raise ValueError(f"call_id must be a non-empty string, got {call_id!r}")
        if not is_short_text(call_id, limit=_MAX_CALL_ID_BYTES):
            raise ValueError(
                f"call_id must be UTF-8 text of at most {_MAX_CALL_ID_BYTES} bytes,"
                f" got {call_id[:80]!r}"
            )
        if answer_timeout is not None and answer_timeout <= timedelta(0):
            raise ValueError(f"answer_timeout must be positive, got {answer_timeout}")
        if answer_timeout is not None and answer_timeout > _MAX_ANSWER_TIMEOUT:
            # The workflow adds it to the current time; past year 9999 that overflows and
            # would fail every workflow task of the call instead of refusing it here.
            raise ValueError(
                f"answer_timeout must be at most {_MAX_ANSWER_TIMEOUT.days} days,"
                f" got {answer_timeout}"
            )
        answerers = tuple(allowed_answerers)
        if isinstance(allowed_answerers, str) or not all(
            isinstance(each, str) and each for each in answerers
        ):
            raise ValueError(
                f"allowed_answerers must be a sequence of non-empty strings, got {allowed_answerers!r}"
            )
        if policy is not None:
            policy.check_deadline(answer_timeout)
        if policy is not None and answerers:
            outside = [each for each in policy.eligible if each not in answerers]
            if outside:
                raise InvalidPolicyError(
                    f"the policy names voters the call's allowed_answerers leave out:"
                    f" {', '.join(outside)}"
                )
        if notify_url is not None and not notify_url.startswith(("http://", "https://")):
            raise ValueError(f"notify_url must be an http:// or https:// URL, got {notify_url!r}")
        if notify_url is not None:
            check_destination(notify_url, self._notify_allowed)
        if principal is None:
            principal = current_principal()
        elif not isinstance(principal, Principal):
            raise ValueError(
                f"principal must be a scope_tool.Principal, not {type(principal).__name__}"
            )
        if not isinstance(require_verified, bool):
            raise ValueError(f"require_verified must be a bool, got {require_verified!r}")
        return wire.ToolCallInput(
            call_id=call_id,
            tool=request.name,
            arguments=request.arguments,
            answer_timeout_seconds=answer_timeout.total_seconds() if answer_timeout else None,
            allowed_answerers=answerers,
            notify_url=notify_url,
            notify_initial_interval_seconds=self._notify_initial_interval.total_seconds(),
            heartbeat_timeout_seconds=self._heartbeat_timeout.total_seconds(),
            principal=principal,
            require_verified=require_verified,
            channels=tuple(dict.fromkeys(channels)),
            policy=policy,
            routed=True,
            eager_rounds=True,
            running_shown_late=True,
            assignee_attribute=True,
            task_check_bytes=wire.TASK_CHECK_BYTES,
            unserved_timeout_seconds=(
                self._unserved_tool_timeout
                if await self._served.served(request.name)
                else UNSERVED_TIMEOUT_NOW
            ).total_seconds(),
        )

    async def _attach(
        self, call_id: str, request: Request, principal: Principal | None
    ) -> ToolCallHandle:
        """The existing call ``call_id``, if it was started for this same request and principal.

        Raises:
            CallConflictError: the call was started with another tool, other arguments, or
                acting for another principal (its outcome is not this caller's to read).
        """
        attached = self.get(call_id)
        first = None
        async for event in attached.workflow_handle.fetch_history_events(page_size=1):
            first = event
            break
        if first is None or not first.HasField("workflow_execution_started_event_attributes"):
            return ToolCallHandle(attached.workflow_handle, attached=True, client=self._client)
        payloads = first.workflow_execution_started_event_attributes.input.payloads
        [existing] = await self._client.data_converter.decode(payloads, [wire.ToolCallInput])
        if existing.tool != request.name or _as_bytes(existing.arguments) != _as_bytes(
            request.arguments
        ):
            raise CallConflictError(
                call_id, existing_tool=existing.tool, same_tool=existing.tool == request.name
            )
        if existing.principal != principal:
            raise CallConflictError(
                call_id, existing_tool=existing.tool, same_tool=True, other_principal=True
            )
        return ToolCallHandle(attached.workflow_handle, attached=True, client=self._client)

    async def answer_batch(
        self,
        items: Sequence[BatchItem],
        response: Any,
        *,
        answered_by: str | None = None,
        identity_token: str | None = None,
    ) -> BatchReceipt:
        """Give one answer to several waiting calls, checked first as one batch.

        Every call is checked before anything is sent (its request still the pending one, the
        actor allowed on it, the answer valid for its question); if any fails, nothing is
        written and :class:`BatchRefusedError` names each call that failed. Otherwise each call
        gets its own request-bound answer, as :meth:`ToolCallHandle.answer` sends it.

        Args:
            items: the calls, each with the question the actor saw (``BatchItem(call_id,
                request_id)``; ``request_id`` ``None``: the one pending now).
            response: the answer, as for :meth:`ToolCallHandle.answer`.
            answered_by: who answers (a voter, on quorum calls).
            identity_token: a signed identity token, as for :meth:`ToolCallHandle.answer`.

        Raises:
            BatchRefusedError: a call failed the check; no answer was sent.
            ValueError: no items, too many (over 500) or a call named twice.
        """
        raw = response if isinstance(response, AnswerText) else encode_answer(response, call_id="")
        return await answer_batch(
            self.get, items, raw, answered_by=answered_by, identity_token=identity_token
        )

    def get(self, call_id: str) -> ToolCallHandle:
        """A handle to the call ``call_id`` (no I/O; a missing call shows up on first use)."""
        handle = self._client.get_workflow_handle(call_id, result_type=CallOutcome)
        return ToolCallHandle(handle, client=self._client)

    async def list(
        self,
        *,
        phase: Phase | None = None,
        tool: str | None = None,
        assignee: str | None = None,
        limit: int = 100,
    ) -> list[CallSummary]:
        """Calls found by their search attributes, newest first, one row per call id.

        ``assignee`` keeps the calls whose ``ScopeToolAssignee`` names that person and those
        without the attribute (anyone may answer them, or they were started before it), so
        with ``phase=Phase.AWAITING_INPUT`` it narrows the waiting calls to those the person
        may answer; whether they may (a voter who has voted may not) is their status's to say.

        A call closed without an outcome (terminated, timed out, reset away) is listed with the
        phase of its execution status (ERRORED, or CANCELLED), never as waiting.
        Visibility is eventually consistent: a call started a moment ago may not be listed yet.

        Raises:
            ToolCallsError: the server could not list (unreachable, visibility unavailable).
        """
        if limit <= 0:
            raise ValueError(f"limit must be positive, got {limit}")
        clauses = [f"WorkflowType = '{wire.WORKFLOW_NAME}'"]
        if phase is not None:
            clauses.append(phase_clause(Phase(phase)))
        if tool is not None:
            if not _TOOL_NAME.match(tool):
                raise ValueError(f"tool must be a tool name ([A-Za-z0-9_-]{{1,64}}), got {tool!r}")
            clauses.append(f"{wire.TOOL_KEY.name} = '{tool}'")
        if assignee is not None:
            clause = assignee_clause(assignee)
            if clause is None:
                raise ValueError(
                    f"assignee must be 1 to 256 of A-Z a-z 0-9 _ . @ + - to be searched,"
                    f" got {assignee!r:.80}"
                )
            clauses.append(clause)
        found: dict[str, CallSummary] = {}
        try:
            async for execution in self._client.list_workflows(" AND ".join(clauses), limit=limit):
                attributes = execution.typed_search_attributes
                if closed_phase(execution.status) is not None and await self._superseded(
                    execution.id, execution.run_id
                ):
                    continue  # a reset replaced this run: the call is its newer run
                summary = CallSummary(
                    call_id=execution.id,
                    tool=attributes.get(wire.TOOL_KEY) or "",
                    phase=summary_phase(execution.status, attributes.get(wire.PHASE_KEY)),
                    started_at=execution.start_time,
                )
                known = found.get(summary.call_id)
                if known is None or known.started_at < summary.started_at:
                    found[summary.call_id] = summary
        except RPCError as err:
            raise ToolCallsError(f"listing calls failed: {err.message}") from err
        return sorted(found.values(), key=lambda summary: summary.started_at, reverse=True)

    async def _superseded(self, call_id: str, run_id: str | None) -> bool:
        """Whether the call's latest run is another one (an operator reset the call)."""
        try:
            latest = await self._client.get_workflow_handle(call_id).describe()
        except RPCError:
            return False
        return run_id is not None and latest.run_id != run_id


UNSERVED_TIMEOUT_NOW = timedelta(seconds=10)
"""Round 1's schedule-to-start timeout when no worker polls the tool's queue at start: long
enough for a worker that is starting (it says "ready" only once the server lists its pollers,
but a call may be started while it connects), short enough that a hallucinated tool name gets its INVALID answer
within seconds."""

_MAX_ANSWER_TIMEOUT = timedelta(days=365 * 1000)
"""Longest answer deadline accepted (a millennium): far beyond any use, far from overflow."""

_MAX_CALL_ID_BYTES = 1000
"""Temporal's default limit on a workflow id, checked before any RPC."""


def _as_bytes(arguments: str | bytes) -> bytes:
    return arguments.encode("utf-8", "surrogatepass") if isinstance(arguments, str) else arguments
