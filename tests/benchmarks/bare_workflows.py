"""The baseline: bare Temporal workflows doing the same work as the engine, with Temporal defaults.

Each benchmark compares the engine against the smallest honest Temporal program that does the same
job, so a ratio near 1.0 means scope-tool adds little over Temporal itself:

- ``bare.Echo`` runs the tool function as one activity (``execute_activity`` with only a
  ``start_to_close_timeout``, every other option Temporal's default).
- ``bare.Approval`` waits on an update ``answer`` (validated: one answer only) and then runs one
  activity with the person's decision, the human-in-the-loop shape without any protocol checks.
  With ``ask_first`` it first runs an activity producing the question, as the engine's first
  round does, so a parked call costs both sides the same server round trips. With
  ``keep_phase`` it also keeps the ``ScopeToolPhase`` search attribute current as the engine
  does for a round that ends quickly (written when waiting and when done): a diagnostic baseline that separates what the engine's code
  costs from what keeping calls findable by phase costs.
- ``bare.Verdict`` waits on an update ``answer`` (a JSON text) whose handler runs one activity
  checking it by hand against the costly schema (``hand_checked_decimals``): the floor for an
  answer that is too costly to check in workflow code (the verdict benchmark).

Inputs and results are plain dataclasses and strings through Temporal's default data converter.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import timedelta

from temporalio import activity, workflow
from temporalio.common import SearchAttributeKey
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from bench_functions import (
        approval_outcome,
        approval_prompt,
        echo_text,
        hand_checked_decimals,
    )

__all__ = [
    "ACTIVITY_TIMEOUT",
    "ApprovalCall",
    "ApprovalDecision",
    "BareApprovalWorkflow",
    "BareEchoWorkflow",
    "BareVerdictWorkflow",
    "ask_activity",
    "check_decimals_activity",
    "echo_activity",
    "finish_approval_activity",
]

ACTIVITY_TIMEOUT = timedelta(seconds=60)
_PHASE = SearchAttributeKey.for_keyword("ScopeToolPhase")


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalCall:
    """Input of ``bare.Approval``: the text a person approves or declines."""

    text: str
    ask_first: bool = False
    keep_phase: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalDecision:
    """Input of the activity that runs after the answer arrives."""

    text: str
    approved: bool


@activity.defn(name="bare.echo")
async def echo_activity(text: str) -> str:
    """Run the tool function once; the baseline twin of the engine's ``echo`` tool."""
    return echo_text(text)


@activity.defn(name="bare.ask")
async def ask_activity(text: str) -> str:
    """Produce the question; the twin of the engine's first round returning an input request."""
    return approval_prompt(text)


@activity.defn(name="bare.finish_approval")
async def finish_approval_activity(decision: ApprovalDecision) -> str:
    """Run the tool function with the person's answer; the twin of the engine's second round."""
    return approval_outcome(decision.text, approved=decision.approved)


@workflow.defn(name="bare.Echo")
class BareEchoWorkflow:
    """One activity, Temporal's defaults: the floor for a completing call."""

    @workflow.run
    async def run(self, text: str) -> str:
        return await workflow.execute_activity(
            echo_activity, text, start_to_close_timeout=ACTIVITY_TIMEOUT
        )


@workflow.defn(name="bare.Approval")
class BareApprovalWorkflow:
    """Wait for one answer by update, then run one activity: the floor for a round trip."""

    def __init__(self) -> None:
        self._approved: bool | None = None
        self._asking = True
        self._keep_phase = False

    @workflow.run
    async def run(self, call: ApprovalCall) -> str:
        self._keep_phase = call.keep_phase
        if call.ask_first:
            await workflow.execute_activity(
                ask_activity, call.text, start_to_close_timeout=ACTIVITY_TIMEOUT
            )
        self._asking = False
        self._set_phase("AWAITING_INPUT")
        await workflow.wait_condition(lambda: self._approved is not None)
        assert self._approved is not None
        result = await workflow.execute_activity(
            finish_approval_activity,
            ApprovalDecision(text=call.text, approved=self._approved),
            start_to_close_timeout=ACTIVITY_TIMEOUT,
        )
        self._set_phase("COMPLETED")
        return result

    def _set_phase(self, phase: str) -> None:
        if self._keep_phase:
            workflow.upsert_search_attributes([_PHASE.value_set(phase)])

    @workflow.update(name="answer")
    def answer(self, approved: bool) -> None:
        self._approved = approved

    @answer.validator
    def _refuse_second_answer(self, approved: bool) -> None:
        if self._approved is not None:
            raise ValueError("bare.Approval: already answered")

    @workflow.query(name="waiting")
    def waiting(self) -> bool:
        return not self._asking and self._approved is None


@activity.defn(name="bare.check_decimals")
async def check_decimals_activity(text: str) -> str | None:
    """Check the answer by hand, off the event loop (as the engine's check runs in a thread)."""
    return await asyncio.to_thread(hand_checked_decimals, text)


@workflow.defn(name="bare.Verdict")
class BareVerdictWorkflow:
    """Wait for an answer by update; its handler checks it in one activity and refuses or takes it."""

    def __init__(self) -> None:
        self._taken: str | None = None

    @workflow.run
    async def run(self) -> int:
        await workflow.wait_condition(lambda: self._taken is not None)
        assert self._taken is not None
        return len(self._taken)

    @workflow.update(name="answer")
    async def answer(self, text: str) -> None:
        problem = await workflow.execute_activity(
            check_decimals_activity, text, start_to_close_timeout=ACTIVITY_TIMEOUT
        )
        if problem is not None:
            raise ApplicationError(problem, type="schema", non_retryable=True)
        self._taken = text

    @workflow.query(name="waiting")
    def waiting(self) -> bool:
        return self._taken is None
