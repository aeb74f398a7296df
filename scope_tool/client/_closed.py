"""Calls whose workflow closed without an outcome: terminated, timed out, failed or cancelled.

The workflow always returns a :class:`CallOutcome`; only an operator (``temporal workflow
terminate``, a reset, which terminates the run it replaces) or the server (a workflow execution
timeout) can close it otherwise. The ``ScopeToolPhase`` search attribute and the state a query
replays then still say what the call was doing (``AWAITING_INPUT`` with its question), so every
view derives the phase from the execution status instead:

- ``Terminated``, ``TimedOut`` or ``Failed``: ``ERRORED``, the message naming what closed it
  (with the operator's reason and identity) and that a running round's effect is unknown;
- ``Canceled``: ``CANCELLED``.

``list`` filters on ``ExecutionStatus`` too, so a terminated call is never listed as waiting.
"""

from __future__ import annotations

import re
from typing import Final

from temporalio.client import (
    WorkflowExecutionStatus,
    WorkflowHandle,
    WorkflowHistoryEventFilterType,
)

from scope_tool.wire import ASSIGNEE_KEY, PHASE_KEY
from scope_tool.wire._status import CallOutcome, Phase

__all__ = ["assignee_clause", "closed_outcome", "closed_phase", "phase_clause", "summary_phase"]

_SEARCHABLE_NAME: Final = re.compile(r"[A-Za-z0-9_.@+-]{1,256}")
"""Names a visibility query can look up in ``ScopeToolAssignee``: quotes, backslashes and other
punctuation are query syntax to some visibility stores (SQLite's full-text index refuses them)."""


def assignee_clause(name: str) -> str | None:
    """The clause selecting calls ``name`` may answer by the ``ScopeToolAssignee`` attribute
    (named there, or no attribute: anyone may answer, or a call started before it), or
    ``None`` for a name a query cannot carry safely."""
    if not isinstance(name, str) or _SEARCHABLE_NAME.fullmatch(name) is None:
        return None
    key = ASSIGNEE_KEY.name
    return f"({key} = '{name}' OR {key} IS NULL)"


_OPEN: Final = frozenset({WorkflowExecutionStatus.RUNNING, WorkflowExecutionStatus.COMPLETED})
_CLOSED_ERRORED: Final = "('Terminated', 'TimedOut', 'Failed')"


def closed_phase(status: WorkflowExecutionStatus | None) -> Phase | None:
    """The phase of a call closed without an outcome; ``None`` while it runs or when completed."""
    if status is None or status in _OPEN or status is WorkflowExecutionStatus.CONTINUED_AS_NEW:
        return None
    if status is WorkflowExecutionStatus.CANCELED:
        return Phase.CANCELLED
    return Phase.ERRORED


def summary_phase(status: WorkflowExecutionStatus | None, attribute: str | None) -> Phase:
    """A listed call's phase: the execution status wins over a stale search attribute."""
    closed = closed_phase(status)
    if closed is not None:
        return closed
    return Phase(attribute or Phase.RUNNING.value)


def phase_clause(phase: Phase) -> str:
    """The visibility query clause selecting the calls that are in ``phase`` now."""
    attribute = f"{PHASE_KEY.name} = '{phase.value}'"
    if not phase.is_terminal:
        return f"{attribute} AND ExecutionStatus = 'Running'"
    settled = f"{attribute} AND ExecutionStatus IN ('Running', 'Completed')"
    if phase is Phase.ERRORED:
        return f"(({settled}) OR ExecutionStatus IN {_CLOSED_ERRORED})"
    if phase is Phase.CANCELLED:
        return f"(({settled}) OR ExecutionStatus = 'Canceled')"
    return settled


async def closed_outcome(
    handle: WorkflowHandle[object, CallOutcome],
    status: WorkflowExecutionStatus,
    *,
    rounds: int = 0,
) -> CallOutcome:
    """The outcome of a call closed without one, read from its close event."""
    phase = closed_phase(status) or Phase.ERRORED
    detail = ""
    async for event in handle.fetch_history_events(
        event_filter_type=WorkflowHistoryEventFilterType.CLOSE_EVENT
    ):
        if event.HasField("workflow_execution_terminated_event_attributes"):
            attributes = event.workflow_execution_terminated_event_attributes
            who = f" ({attributes.identity})" if attributes.identity else ""
            reason = attributes.reason or "no reason given"
            detail = f"the call was terminated by an operator{who}: {reason}"
        elif event.HasField("workflow_execution_timed_out_event_attributes"):
            detail = "the call's workflow execution timed out before it finished"
        elif event.HasField("workflow_execution_failed_event_attributes"):
            failure = event.workflow_execution_failed_event_attributes.failure
            detail = f"the call's workflow failed: {failure.message}"
        elif event.HasField("workflow_execution_canceled_event_attributes"):
            detail = "the call was cancelled"
    if not detail:
        detail = f"the call closed without an outcome ({status.name})"
    if phase is Phase.ERRORED:
        detail += (
            "; it recorded no outcome, so whether a round that was running had its effect"
            " is unknown, and it takes no more answers"
        )
    return CallOutcome(phase=phase, message=detail, rounds=rounds)
