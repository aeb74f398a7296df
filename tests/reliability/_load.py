"""The load scenario, at any size, with optional faults: the engine of ``test_load`` and stress.

One run: N calls of ``approve_write`` (each asks once) started concurrently from this process,
answered concurrently by an answerer *process*, executed by W worker *processes* on one dedicated
dev server. Optionally, while the calls run, one worker is SIGKILLed (and a replacement started)
and later the dev server itself is SIGKILLed and restarted on the same SQLite file and port.

Afterwards everything that can be checked from outside is checked: every call reached a terminal
phase, the side-effect ledger holds exactly one row per COMPLETED call and never two for any
call, calls caught inside the tool by the worker kill ended ERRORED "outcome unknown", and no
workflow history contains a WorkflowTaskFailed event.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from helpers.servers import DedicatedDevServer
from temporalio.api.enums.v1 import EventType, TimeoutType, WorkflowTaskFailedCause
from temporalio.client import Client
from temporalio.service import RPCError

from scope_tool import Request
from scope_tool.client import DATA_CONVERTER, CallOutcome, Phase, ToolCalls
from scope_tool.wire import CALL_TOOL_HERE_ACTIVITY, NOT_SERVED_HERE, ROUND_ACTIVITIES

from ._ledger import LedgerAudit, SideEffectLedger
from ._processes import AnswererProcess, WorkerProcess

__all__ = ["FaultPlan", "LoadReport", "run_load"]


@dataclass(frozen=True, slots=True, kw_only=True)
class FaultPlan:
    """When to break things, as fractions of the calls whose effect is already in the ledger.

    Attributes:
        kill_worker_at: SIGKILL worker 0 once this fraction of effects exist (None: never).
        replace_worker_after: Seconds until a replacement worker starts (None: no replacement).
        kill_server_at: SIGKILL the dev server once this fraction of effects exist (None: never).
        server_down_seconds: How long the server stays dead before the restart.
    """

    kill_worker_at: float | None = 0.3
    replace_worker_after: float | None = 1.0
    kill_server_at: float | None = 0.6
    server_down_seconds: float = 2.0


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadReport:
    """Everything a load run measured and proved."""

    calls: int
    workers: int
    seconds: float
    phases: dict[str, int]
    audit: LedgerAudit
    outcome_unknown: int
    unknown_by_round: dict[str, int]
    caught_in_tool: dict[str, str]
    not_terminal: tuple[str, ...]
    workflow_task_failures: tuple[str, ...]
    rounds_rerun: tuple[str, ...]
    faults: tuple[str, ...]
    answerer: dict[str, Any]
    longest_pause_seconds: float = 0.0
    worker_crash_logs: tuple[str, ...] = field(default=())

    @property
    def calls_per_second(self) -> float:
        """Calls carried start-to-terminal per wall-clock second."""
        return self.calls / self.seconds if self.seconds else 0.0

    def summary(self) -> str:
        """One paragraph for the test output and the README figures."""
        return (
            f"{self.calls} calls, {self.workers} workers: {self.seconds:.1f} s, "
            f"{self.calls_per_second:.1f} calls/s; phases {self.phases}; "
            f"effects {self.audit.effects}, lost {len(self.audit.lost)}, "
            f"duplicated {len(self.audit.duplicated)}, misrouted {len(self.audit.misrouted)}; "
            f"outcome-unknown {self.outcome_unknown} {self.unknown_by_round}; not terminal {len(self.not_terminal)}; "
            f"WorkflowTaskFailed {len(self.workflow_task_failures)}; "
            f"rounds re-run {len(self.rounds_rerun)}; faults {list(self.faults)}; "
            f"longest pause between effects {self.longest_pause_seconds:.1f} s; "
            f"answerer {self.answerer}"
        )


async def _retrying(operation: Any, *, until: float) -> Any:
    """Run an idempotent RPC, retrying through a server outage."""
    delay = 0.1
    while True:
        try:
            return await operation()
        except (TimeoutError, RPCError, ConnectionError):
            if time.monotonic() > until:
                raise
            await asyncio.sleep(delay)
            delay = min(delay * 2, 2.0)


async def _connect_facade(
    address: str, task_queue: str, *, heartbeat_timeout: timedelta, until: float
) -> ToolCalls:
    async def attempt() -> Client:
        return await Client.connect(address, data_converter=DATA_CONVERTER)

    client: Client = await _retrying(attempt, until=until)
    return ToolCalls(client, task_queue=task_queue, heartbeat_timeout=heartbeat_timeout)


async def run_load(
    *,
    server: DedicatedDevServer,
    workdir: Path,
    calls: int,
    workers: int = 2,
    hold_seconds: float = 0.0,
    faults: FaultPlan | None = None,
    start_concurrency: int = 64,
    answer_concurrency: int = 48,
    budget_seconds: float = 600.0,
    heartbeat_timeout: timedelta = timedelta(seconds=10),
) -> LoadReport:
    """Run one load scenario end to end and return what it measured (see the module doc)."""
    run_id = uuid.uuid4().hex[:8]
    task_queue = f"reliability-load-{run_id}"
    ledger = SideEffectLedger(workdir / f"ledger-{run_id}.db")
    until = time.monotonic() + budget_seconds
    keys = tuple(f"load-{run_id}-{index:05d}" for index in range(calls))
    keys_file = workdir / f"keys-{run_id}.txt"
    keys_file.write_text("\n".join(keys) + "\n")

    def new_worker(index: int) -> WorkerProcess:
        worker = WorkerProcess(
            address=server.address,
            task_queue=task_queue,
            ledger_file=ledger.path,
            log_file=workdir / f"worker-{run_id}-{index}.log",
            hold_seconds=hold_seconds,
        )
        worker.start()
        return worker

    pool = [new_worker(index) for index in range(workers)]
    answerer = AnswererProcess(
        address=server.address,
        task_queue=task_queue,
        keys_file=keys_file,
        log_file=workdir / f"answerer-{run_id}.log",
        concurrency=answer_concurrency,
        deadline_seconds=budget_seconds,
    )
    try:
        facade = await _connect_facade(
            server.address, task_queue, heartbeat_timeout=heartbeat_timeout, until=until
        )
        raw_client = await Client.connect(server.address)
        for worker in pool:
            await asyncio.to_thread(worker.wait_ready, timeout=60.0)
        started = time.monotonic()
        answerer.start()
        gate = asyncio.Semaphore(start_concurrency)

        async def start_one(key: str) -> None:
            request = Request(name="approve_write", arguments=json.dumps({"key": key}))
            async with gate:
                await _retrying(lambda: facade.start(request, call_id=key), until=until)

        fault_task = asyncio.create_task(
            _inject_faults(
                faults,
                calls,
                server=server,
                pool=pool,
                new_worker=new_worker,
                ledger=ledger,
                until=until,
            )
        )
        await asyncio.gather(*(start_one(key) for key in keys))
        await _wait_all_closed(raw_client, task_queue, until=until)
        seconds = time.monotonic() - started
        faults_done, caught = await fault_task
        outcomes = await _collect_outcomes(facade, keys, until=until)
        answer_report = await asyncio.to_thread(answerer.wait_report, timeout=120.0)
        histories = await _audit_histories(raw_client, keys, until=until)
    finally:
        answerer.kill()
        exit_codes = [worker.stop() for worker in pool]
    phases = Counter(outcome.phase.value for outcome in outcomes.values())
    completed = [key for key, outcome in outcomes.items() if outcome.phase is Phase.COMPLETED]
    unknown = sum(
        1
        for outcome in outcomes.values()
        if outcome.phase is Phase.ERRORED and outcome.message.startswith("outcome unknown")
    )
    crash_logs = tuple(
        worker.log_text()[-3000:]
        for worker, code in zip(pool, exit_codes, strict=True)
        if code not in (0, -9, None) or "Traceback" in worker.log_text()
    )
    return LoadReport(
        calls=calls,
        workers=workers,
        seconds=seconds,
        phases=dict(sorted(phases.items())),
        audit=ledger.audit(call_keys=keys, completed=completed),
        outcome_unknown=unknown,
        unknown_by_round=dict(
            sorted(
                Counter(
                    f"round {outcome.rounds}"
                    for outcome in outcomes.values()
                    if outcome.phase is Phase.ERRORED
                ).items()
            )
        ),
        caught_in_tool={key: outcomes[key].phase.value for key in caught if key in outcomes},
        not_terminal=tuple(key for key in keys if key not in outcomes),
        workflow_task_failures=histories.workflow_task_failures,
        rounds_rerun=tuple(
            key
            for key, outcome in outcomes.items()
            if histories.tool_rounds_started.get(key) != outcome.rounds
        ),
        faults=tuple(faults_done),
        answerer=answer_report,
        longest_pause_seconds=ledger.longest_pause(),
        worker_crash_logs=crash_logs,
    )


async def _inject_faults(
    plan: FaultPlan | None,
    calls: int,
    *,
    server: DedicatedDevServer,
    pool: list[WorkerProcess],
    new_worker: Any,
    ledger: SideEffectLedger,
    until: float,
) -> tuple[list[str], list[str]]:
    """Watch the ledger and break things at the planned points (fractions of ``calls``).

    Returns what was done, in words, and the calls caught inside the tool by the worker kill.
    """
    done: list[str] = []
    caught: list[str] = []
    if plan is None:
        return done, caught
    steps: list[tuple[float, str]] = []
    if plan.kill_worker_at is not None:
        steps.append((plan.kill_worker_at, "worker"))
    if plan.kill_server_at is not None:
        steps.append((plan.kill_server_at, "server"))
    for fraction, what in sorted(steps):
        threshold = max(1, int(calls * fraction))
        while await asyncio.to_thread(ledger.effect_total) < threshold:
            if time.monotonic() > until:
                return done, caught
            await asyncio.sleep(0.05)
        if what == "worker":
            victim = pool[0]
            assert victim.process is not None
            # Kill only while the victim is inside the tool, so the fault provably lands
            # mid-effect; the marks it leaves are the calls it abandoned.
            while not await asyncio.to_thread(ledger.inflight, pid=victim.process.pid):
                if time.monotonic() > until:
                    return done, caught
                await asyncio.sleep(0.01)
            effects = await asyncio.to_thread(ledger.effect_total)
            victim.kill()
            caught.extend(await asyncio.to_thread(ledger.inflight, pid=victim.process.pid))
            done.append(
                f"SIGKILL worker 0 at {effects} effects, {len(caught)} calls inside the tool"
            )
            if plan.replace_worker_after is not None:
                await asyncio.sleep(plan.replace_worker_after)
                pool.append(new_worker(len(pool)))
                done.append("replacement worker started")
        else:
            effects = await asyncio.to_thread(ledger.effect_total)
            server.kill()
            done.append(f"SIGKILL dev server at {effects} effects")
            await asyncio.sleep(plan.server_down_seconds)
            await asyncio.to_thread(server.start)
            done.append(f"dev server restarted after {plan.server_down_seconds:.0f} s")
    return done, caught


async def _wait_all_closed(client: Client, task_queue: str, *, until: float) -> None:
    """Poll visibility until no workflow on the task queue is still running."""
    # Only the calls: each task queue also has its long-lived tool catalog workflow.
    query = (
        f"TaskQueue = '{task_queue}' AND ExecutionStatus = 'Running'"
        " AND WorkflowType = 'scope_tool.ToolCall'"
    )
    while True:
        try:
            running = (await client.count_workflows(query)).count
        except RPCError:
            running = -1
        if running == 0:
            return
        if time.monotonic() > until:
            raise TimeoutError(f"{running} calls still running at the budget's end")
        await asyncio.sleep(0.25)


async def _collect_outcomes(
    facade: ToolCalls, keys: tuple[str, ...], *, until: float
) -> dict[str, CallOutcome]:
    gate = asyncio.Semaphore(64)
    outcomes: dict[str, CallOutcome] = {}

    async def one(key: str) -> None:
        async with gate:
            outcome: CallOutcome = await _retrying(lambda: facade.get(key).result(), until=until)
            outcomes[key] = outcome

    await asyncio.gather(*(one(key) for key in keys))
    return outcomes


@dataclass(frozen=True, slots=True, kw_only=True)
class _HistoryAudit:
    workflow_task_failures: tuple[str, ...]
    tool_rounds_started: dict[str, int]


async def _audit_histories(client: Client, keys: tuple[str, ...], *, until: float) -> _HistoryAudit:
    """Read every call's history: WorkflowTaskFailed events (``"call_id: CAUSE: message"``)
    and how many tool activities each call scheduled (one per round means none was re-run),
    not counting a round offered on the main queue that ran nothing there (refused, or not
    taken in time) and so went to its routed queue."""
    gate = asyncio.Semaphore(32)
    failed: list[str] = []
    started: dict[str, int] = {}

    async def one(key: str) -> None:
        async with gate:
            history = await _retrying(
                lambda: client.get_workflow_handle(key).fetch_history(), until=until
            )
        scheduled = 0
        offered: set[int] = set()
        for event in history.events:
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
                attributes = event.workflow_task_failed_event_attributes
                cause = WorkflowTaskFailedCause.Name(attributes.cause)
                failed.append(f"{key}: {cause}: {attributes.failure.message[:200]}")
            elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
                activity = event.activity_task_scheduled_event_attributes.activity_type.name
                scheduled += activity in ROUND_ACTIVITIES
                if activity == CALL_TOOL_HERE_ACTIVITY:
                    offered.add(event.event_id)
            elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED:
                lost = event.activity_task_failed_event_attributes
                refused = lost.failure.application_failure_info.type == NOT_SERVED_HERE
                scheduled -= refused and lost.scheduled_event_id in offered
            elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
                timed_out = event.activity_task_timed_out_event_attributes
                untaken = (
                    timed_out.failure.timeout_failure_info.timeout_type
                    == TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_START
                )
                scheduled -= untaken and timed_out.scheduled_event_id in offered
        started[key] = scheduled

    await asyncio.gather(*(one(key) for key in keys))
    return _HistoryAudit(workflow_task_failures=tuple(sorted(failed)), tool_rounds_started=started)
