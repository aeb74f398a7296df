"""Benchmark 4: many calls parked waiting for a person at once, then all answered.

``SCOPE_TOOL_BENCH_PARKED`` calls (default 10,000) are started on each side and left waiting,
the way a user's client starts many calls: ``START_CONCURRENCY`` starts in flight and at most
``BACKLOG`` calls started but not yet waiting. At 25/50/75/100 % parked the worker process's
resident memory (VmRSS from ``/proc/PID/status``) and the server's SQLite database (pages in use,
WAL included) are sampled: the RSS should be bounded by the worker's workflow cache
(``max_cached_workflows``), not by the number of calls, and stay under 300 MiB. Then every call
is answered (100 answers in flight); every result is checked against the text its call was
started with, so a lost or crossed answer fails the benchmark. Baseline first, engine second,
each with a fresh worker process. The slopes over the checkpoints give each figure at
``PROJECTED_CALLS`` (50,000) on paper.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import pytest
from bare_side import BareSide
from bench_report import Figure, GoalKind
from bench_runs import CallSide, CpuUse, cpu_use, run_lanes, run_token
from engine_side import EngineSide
from worker_process import ProcessMemory, WorkerProcess

from scope_tool.client import Phase

START_CONCURRENCY = 50
BACKLOG = 200  # calls started but not yet waiting, at most
ANSWER_CONCURRENCY = 100
MEMORY_GOAL_MIB = 300.0
CHECKPOINTS = (0.25, 0.5, 0.75, 1.0)
PROJECTED_CALLS = 50_000
_ENDED_EARLY = ", ".join(
    f"'{phase.value}'"
    for phase in Phase
    if phase.is_terminal and phase is not Phase.COMPLETED  # the warm-up call completes
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Checkpoint:
    """One side's state when a share of its calls had parked (or, resuming, had finished)."""

    calls: int
    seconds: float  # since the first start (parking) or the first answer (resuming)
    rss_mib: float
    database_bytes: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ParkedRun:
    """What one side did with N parked calls."""

    count: int
    idle: ProcessMemory
    database_before: int  # server database bytes in use before the first start
    parking: tuple[Checkpoint, ...]  # at 25/50/75/100 % parked
    all_parked: ProcessMemory
    database_parked: int  # server database bytes in use with every call waiting
    resuming: tuple[float, ...]  # seconds from the first answer to 25/50/75/100 % finished
    peak_rss_mib: float  # highest sampled RSS over parking and resuming
    park_seconds: float  # from the first start to all waiting
    resume_seconds: float  # from the first answer to the last checked result
    cpu: CpuUse  # over parking and resuming

    @property
    def database_per_call(self) -> float:
        """Server database bytes one waiting call holds (all parked, minus before parking)."""
        return (self.database_parked - self.database_before) / self.count

    @property
    def rss_slope(self) -> float:
        """Worker RSS bytes each further waiting call adds (least squares over the checkpoints)."""
        return _slope([(point.calls, point.rss_mib * (1 << 20)) for point in self.parking])

    @property
    def database_slope(self) -> float:
        """Server database bytes each further waiting call adds (least squares, checkpoints)."""
        return _slope([(point.calls, float(point.database_bytes)) for point in self.parking])

    @property
    def park_slope(self) -> float:
        """Seconds each further call takes to park, from 25 % to 100 % parked."""
        return _slope([(point.calls, point.seconds) for point in self.parking])

    @property
    def resume_slope(self) -> float:
        """Seconds each further call takes to resume, from 25 % to 100 % finished."""
        return _slope(
            [
                (share * self.count, seconds)
                for share, seconds in zip(CHECKPOINTS, self.resuming, strict=True)
            ]
        )

    def projected(self, calls: int) -> tuple[float, float, float, float]:
        """Worker RSS MiB, this side's database growth GiB, park s and resume s at ``calls``.

        Each is this run's figure with every call waiting plus the slope over the checkpoints
        times the calls beyond this run (a negative RSS slope, noise, counts as flat).
        """
        extra = calls - self.count
        return (
            (self.all_parked.rss_bytes + max(0.0, self.rss_slope) * extra) / (1 << 20),
            (self.database_parked - self.database_before + self.database_slope * extra) / (1 << 30),
            self.park_seconds + self.park_slope * extra,
            self.resume_seconds + self.resume_slope * extra,
        )


def _slope(points: list[tuple[float, float]]) -> float:
    """The least-squares slope of ``points`` (value per call)."""
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / spread


class _MemoryWatch:
    """Samples a worker's RSS every half second and keeps the highest value."""

    def __init__(self, worker: WorkerProcess) -> None:
        self._worker = worker
        self.peak_rss_bytes = 0

    async def run(self) -> None:
        while True:
            self.peak_rss_bytes = max(self.peak_rss_bytes, self._worker.memory().rss_bytes)
            await asyncio.sleep(0.5)


class _ParkedCount:
    """How many of a side's calls wait for their answer, polled; starts wait on it.

    A user's client that starts thousands of calls does not fire them all into the server at
    once: it keeps a bounded number of them in flight. Here a start waits while more than
    ``BACKLOG`` calls have been started but are not waiting yet, so the server works through
    a queue it can hold instead of one that grows by the whole run (at 10,000 calls, an
    unbounded backlog on the SQLite dev server left workflow tasks waiting minutes to start).
    """

    def __init__(self, count_parked: Callable[[], Awaitable[int]]) -> None:
        self._count_parked = count_parked
        self.parked = 0
        self.started = 0
        self._failure: Exception | None = None
        self._changed = asyncio.Condition()

    async def refresh(self) -> int:
        """Count the waiting calls again and let blocked starts through if there is room.

        If counting fails (an engine call ended before its question), blocked starts fail too
        instead of waiting out the benchmark's budget.
        """
        try:
            parked = await self._count_parked()
        except Exception as error:
            async with self._changed:
                self._failure = error
                self._changed.notify_all()
            raise
        async with self._changed:
            self.parked = parked
            self._changed.notify_all()
        return parked

    async def admit(self) -> None:
        """Wait until fewer than ``BACKLOG`` started calls are not waiting yet; count one more."""
        async with self._changed:
            await self._changed.wait_for(
                lambda: self._failure is not None or self.started - self.parked < BACKLOG
            )
            if self._failure is not None:
                raise RuntimeError(
                    f"counting the parked calls failed: {self._failure!r}"
                ) from self._failure
            self.started += 1


async def _park_and_resume(
    side: CallSide,
    *,
    count: int,
    token: str,
    count_parked: Callable[[], Awaitable[int]],
    server_pid: int,
    database_bytes: Callable[[], int],
) -> ParkedRun:
    worker = side.worker
    await worker.watch(side.echo(f"parked-warm-up-{token}-{side.name}", "warm up"), within=120)
    idle = worker.memory()
    database_before = await asyncio.to_thread(database_bytes)
    watch = _MemoryWatch(worker)
    sampler = asyncio.create_task(watch.run())
    parked_calls: list[object] = [None] * count
    parking: list[Checkpoint] = []
    progress = _ParkedCount(count_parked)

    async def start_one(index: int) -> None:
        await progress.admit()
        parked_calls[index] = await side.park(
            f"parked-{token}-{side.name}-{index}", f"request {index}"
        )

    async def until_all_parked() -> None:
        while True:
            parked = await progress.refresh()
            while len(parking) < len(CHECKPOINTS) and parked >= CHECKPOINTS[len(parking)] * count:
                parking.append(
                    Checkpoint(
                        calls=parked,
                        seconds=time.perf_counter() - started,
                        rss_mib=worker.memory().rss_mib,
                        database_bytes=await asyncio.to_thread(database_bytes),
                    )
                )
            if parked >= count:
                return
            await asyncio.sleep(0.5)

    budget = 600 + count / 5
    cpu_before = cpu_use(worker=worker, server_pid=server_pid)
    started = time.perf_counter()
    waiting = asyncio.create_task(until_all_parked())
    try:
        await worker.watch(
            run_lanes(count, concurrency=START_CONCURRENCY, operation=start_one), within=budget
        )
        await worker.watch(waiting, within=budget)
        park_seconds = time.perf_counter() - started
        await asyncio.sleep(2)  # let the last activations settle before the headline sample
        all_parked = worker.memory()
        database_parked = await asyncio.to_thread(database_bytes)

        failures: list[str] = []
        resuming: list[float] = []
        finished = 0
        resume_started = time.perf_counter()

        async def answer_one(index: int) -> None:
            nonlocal finished
            try:
                await side.answer_and_finish(parked_calls[index], approved=index % 2 == 0)
            except Exception as error:
                failures.append(f"call {index}: {error!r}")
                return
            finished += 1
            if len(resuming) < len(CHECKPOINTS) and finished >= CHECKPOINTS[len(resuming)] * count:
                resuming.append(time.perf_counter() - resume_started)

        resume_seconds = await worker.watch(
            run_lanes(count, concurrency=ANSWER_CONCURRENCY, operation=answer_one), within=budget
        )
        assert not failures, (
            f"{len(failures)} of {count} {side.name} calls lost or wrong: {failures[:5]}"
        )
        cpu = cpu_use(worker=worker, server_pid=server_pid) - cpu_before
    finally:
        sampler.cancel()
        waiting.cancel()
    return ParkedRun(
        count=count,
        idle=idle,
        database_before=database_before,
        parking=tuple(parking),
        all_parked=all_parked,
        database_parked=database_parked,
        resuming=tuple(resuming),
        peak_rss_mib=max(watch.peak_rss_bytes, all_parked.rss_bytes) / (1 << 20),
        park_seconds=park_seconds,
        resume_seconds=resume_seconds,
        cpu=cpu,
    )


@pytest.mark.timeout(7200)
async def test_parked_calls_at_scale(bench_server, bench_settings, bench_report, check_goal):
    count = bench_settings.parked_calls
    token = run_token()
    bare = BareSide.create(
        client=bench_server.client,
        address=bench_server.address,
        namespace=bench_server.namespace,
        task_queue=f"parked-bare-{token}",
        log_dir=bench_server.log_dir,
        ask_first=True,
    )
    engine = await EngineSide.create(
        client=bench_server.client,
        address=bench_server.address,
        namespace=bench_server.namespace,
        task_queue=f"parked-engine-{token}",
        log_dir=bench_server.log_dir,
    )

    async def engine_parked() -> int:
        # A call that ended before its question (a round that could not report back to an
        # overloaded server ends ERRORED "outcome unknown") never parks: say so now, instead
        # of waiting out the budget for a count that cannot be reached.
        ended = await engine.client.count_workflows(
            f"TaskQueue = '{engine.task_queue}' AND ScopeToolPhase IN ({_ENDED_EARLY})"
        )
        assert ended.count == 0, (
            f"{ended.count} engine calls ended before they were answered (see their outcome"
            " in the Web UI); on an overloaded server a round 1 that cannot report back in its"
            " heartbeat timeout ends ERRORED 'outcome unknown'. Use fewer calls"
            " (SCOPE_TOOL_BENCH_PARKED) on this machine."
        )
        return await engine.count_in_phase(Phase.AWAITING_INPUT)

    runs: dict[str, ParkedRun] = {}
    for side, count_parked in ((bare, bare.count_waiting), (engine, engine_parked)):
        await side.worker.start()
        try:
            runs[side.name] = await _park_and_resume(
                side,
                count=count,
                token=token,
                count_parked=count_parked,
                server_pid=bench_server.pid,
                database_bytes=bench_server.database_bytes,
            )
        finally:
            await side.worker.stop()

    # Visibility agrees with the client: every engine call ended COMPLETED, none is still waiting.
    deadline = time.monotonic() + 60
    while (completed := await engine.count_in_phase(Phase.COMPLETED)) < count + 1:
        assert time.monotonic() < deadline, f"visibility shows {completed} of {count + 1} completed"
        await asyncio.sleep(0.5)
    assert await engine.count_in_phase(Phase.AWAITING_INPUT) == 0

    engine_run, bare_run = runs["engine"], runs["baseline"]
    rss_points = {
        name: "/".join(f"{point.rss_mib:.0f}" for point in run.parking)
        for name, run in runs.items()
    }
    database_points = {
        name: "/".join(
            f"{(point.database_bytes - run.database_before) / (1 << 20):.0f}"
            for point in run.parking
        )
        for name, run in runs.items()
    }
    label = f"4 parked x{count}"
    projected = f"4 parked, {PROJECTED_CALLS} projected"
    engine_future = engine_run.projected(PROJECTED_CALLS)
    bare_future = bare_run.projected(PROJECTED_CALLS)
    figures = (
        Figure(
            benchmark=label,
            metric="worker RSS, all waiting",
            unit="MiB",
            engine=engine_run.all_parked.rss_mib,
            baseline=bare_run.all_parked.rss_mib,
            goal=GoalKind.ENGINE_AT_MOST,
            bound=MEMORY_GOAL_MIB,
            note=(
                f"idle {engine_run.idle.rss_mib:.0f} vs {bare_run.idle.rss_mib:.0f} MiB; "
                f"RSS at 25/50/75/100% parked: engine {rss_points['engine']}, "
                f"baseline {rss_points['baseline']} MiB"
            ),
        ),
        Figure(
            benchmark=label,
            metric="worker peak RSS",
            unit="MiB",
            engine=engine_run.peak_rss_mib,
            baseline=bare_run.peak_rss_mib,
            note="highest 0.5 s sample over parking and resuming",
        ),
        Figure(
            benchmark=label,
            metric="worker RSS per further waiting call",
            unit="KiB",
            engine=engine_run.rss_slope / 1024,
            baseline=bare_run.rss_slope / 1024,
            note="least-squares slope of RSS over 25/50/75/100% parked",
        ),
        Figure(
            benchmark=label,
            metric="server database per waiting call",
            unit="KiB",
            engine=engine_run.database_per_call / 1024,
            baseline=bare_run.database_per_call / 1024,
            note=(
                "SQLite pages in use (WAL included), all parked minus before; growth at "
                f"25/50/75/100%: engine {database_points['engine']}, "
                f"baseline {database_points['baseline']} MiB"
            ),
        ),
        Figure(
            benchmark=label,
            metric="time to park all (start->waiting)",
            unit="s",
            engine=engine_run.park_seconds,
            baseline=bare_run.park_seconds,
            note=(
                f"{count / engine_run.park_seconds:.1f} vs {count / bare_run.park_seconds:.1f}"
                f" calls/s; {START_CONCURRENCY} starts in flight, at most {BACKLOG} started"
                " and not yet waiting"
            ),
        ),
        Figure(
            benchmark=label,
            metric="time to resume all (answer->result)",
            unit="s",
            engine=engine_run.resume_seconds,
            baseline=bare_run.resume_seconds,
            note=(
                f"{count / engine_run.resume_seconds:.1f} vs "
                f"{count / bare_run.resume_seconds:.1f} calls/s; {ANSWER_CONCURRENCY} answers"
                " in flight; every result checked"
            ),
        ),
        Figure(
            benchmark=label,
            metric="CPU per call (all processes)",
            unit="ms",
            engine=1000 * engine_run.cpu.total / count,
            baseline=1000 * bare_run.cpu.total / count,
            note=(
                "client/worker/server ms: engine "
                + "/".join(f"{1000 * value / count:.1f}" for value in _parts(engine_run.cpu))
                + ", baseline "
                + "/".join(f"{1000 * value / count:.1f}" for value in _parts(bare_run.cpu))
            ),
        ),
    )
    projections = tuple(
        Figure(
            benchmark=projected,
            metric=metric,
            unit=unit,
            engine=engine_value,
            baseline=bare_value,
            note=f"from this run's figure at {count} plus its slope over 25-100%",
        )
        for metric, unit, engine_value, bare_value in zip(
            (
                "worker RSS, all waiting",
                "server database",
                "time to park all",
                "time to resume all",
            ),
            ("MiB", "GiB", "s", "s"),
            engine_future,
            bare_future,
            strict=True,
        )
    )
    for figure in (*figures, *projections):
        bench_report.record(figure)
    for figure in figures:
        check_goal(figure)


def _parts(cpu: CpuUse) -> tuple[float, float, float]:
    return (cpu.client, cpu.worker, cpu.server)
