"""The audit trail of one call, read from its Temporal event history (no worker needed).

``status`` is a query, answered by a worker from the workflow's live state; once a call has
finished and no worker polls, that state is gone. The event history is not: Temporal keeps it
for the namespace's retention period, with every input the call received. :func:`read_history`
walks it and returns a :class:`CallHistory`: who started the call with which arguments, each
question, each answer (by update or by signal), each refused signal answer, and the outcome.

What history can and cannot show:

* an answer sent by **update** and refused by the validator never reaches history (that is
  what validators are for); its caller got the refusal. Accepted updates are recorded with
  their receipt.
* an answer sent by **signal** is always recorded; whether the workflow took it is decided
  here by the same pure function the workflow ran (:class:`AnswerCheck`) over the same state
  rebuilt from the same events, so the verdict is the one the workflow reached.
* ``answered_by`` is what the answerer claimed, unless the answer carried an identity token
  the workflow verified (``verified``): then it is the token's subject. Tokens are taken by
  update only, whose validator verified them (an accepted update in history is the proof), so
  reading a trail never needs the secret. ``client_identity`` is the Temporal client identity
  that sent it (process and host), recorded by the server.
* ``principal`` is who the agent acted for, as the call was started.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import WorkflowHandle
from temporalio.converter import DataConverter
from temporalio.service import RPCError, RPCStatusCode

from scope_tool.client._history_values import (
    AnswerVia,
    CallHistory,
    HistoryAnswer,
    HistoryQuestion,
    HistoryRefusal,
)
from scope_tool.client._history_walk import HistoryWalk
from scope_tool.client._policy_trail import PolicyEvent, PolicyEventKind
from scope_tool.wire.errors import CallNotFoundError, ToolCallsError

__all__ = [
    "AnswerVia",
    "CallHistory",
    "HistoryAnswer",
    "HistoryQuestion",
    "HistoryRefusal",
    "PolicyEvent",
    "PolicyEventKind",
    "fetch_call_history",
    "read_history",
]


async def fetch_call_history(handle: WorkflowHandle[Any, Any], *, call_id: str) -> CallHistory:
    """Fetch the call's event history from the server and read it (see :func:`read_history`).

    Raises:
        CallNotFoundError: no such call (or its history is past the namespace's retention).
        ToolCallsError: the server refused the request.
    """
    try:
        history = await handle.fetch_history()
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            raise CallNotFoundError(call_id) from err
        raise ToolCallsError(f"history of call {call_id!r}: {err.message}") from err
    # The handle's own client decodes: it carries the converter and codec the facade uses.
    return await read_history(call_id, history.events, handle._client.data_converter)


async def read_history(
    call_id: str, events: Sequence[HistoryEvent], data_converter: DataConverter
) -> CallHistory:
    """Rebuild the audit trail of ``call_id`` from its events (in order, first run).

    Args:
        call_id: the call (workflow id), for request ids and messages.
        events: the workflow's history events, as ``fetch_history`` returns them.
        data_converter: the converter (and codec) the call's payloads were written with.

    Raises:
        ValueError: the events are not a scope-tool call's history.
        PayloadDecryptionError: a payload is sealed with a key this process does not have.
    """
    walk = HistoryWalk(call_id, data_converter)
    for event in events:
        await walk.step(event)
    return walk.result()
