"""Benchmark 3: completed calls per second with 100 calls in flight, one worker process per side.

Each side runs batches of ``echo`` calls with 100 lanes in flight (a lane starts its next call as
soon as its previous one returned its result). Rounds alternate engine/baseline in the order
E B B E, three times over, after a warm-up batch each, and each side's figure is the median of its
six rounds. The rounds are short (300 calls at the default size) because the dev server's own
capacity dips for tens of seconds at a time under this load, whichever side is running (a bare
workflow alone measured 44-76 calls/s from one 600-call block to the next); with three long
rounds a side could lose two to dips and the ratio swung from 0.7 to 1.2 between runs.
The CPU each process (client, worker, server) spent per call is reported beside it: it says
which process pays for any difference, and it is steadier than wall time on a busy machine.
"""

from __future__ import annotations

import statistics

import pytest
from bench_report import Figure, GoalKind
from bench_runs import CpuUse, cpu_use, run_lanes, run_token

CONCURRENCY = 100
ROUND_ORDER = (0, 1, 1, 0) * 3  # index into (engine, baseline)


@pytest.mark.timeout(1800)
async def test_throughput_with_100_in_flight(
    bench_server, bench_sides, bench_settings, bench_report, check_goal
):
    sides = (bench_sides.engine, bench_sides.bare)
    batch = max(2 * CONCURRENCY, 3 * bench_settings.sequential_calls // 2)
    token = run_token()

    async def run_batch(side, label: str, count: int) -> tuple[float, CpuUse]:
        async def one_call(index: int) -> None:
            await side.echo(f"throughput-{token}-{side.name}-{label}-{index}", f"load {index}")

        before = cpu_use(worker=side.worker, server_pid=bench_server.pid)
        elapsed = await side.worker.watch(
            run_lanes(count, concurrency=CONCURRENCY, operation=one_call), within=600
        )
        spent = cpu_use(worker=side.worker, server_pid=bench_server.pid) - before
        return count / elapsed, spent

    for side in sides:
        await run_batch(side, "warm-up", 2 * CONCURRENCY)

    rounds: dict[str, list[float]] = {side.name: [] for side in sides}
    cpu = {side.name: CpuUse(client=0.0, worker=0.0, server=0.0) for side in sides}
    for round_number, side_index in enumerate(ROUND_ORDER):
        side = sides[side_index]
        rate, spent = await run_batch(side, f"round{round_number}", batch)
        rounds[side.name].append(rate)
        cpu[side.name] = cpu[side.name] + spent

    engine = statistics.median(rounds["engine"])
    baseline = statistics.median(rounds["baseline"])
    assert engine > 0
    assert baseline > 0
    rendered = {
        name: ", ".join(f"{value:.0f}" for value in values) for name, values in rounds.items()
    }
    calls_per_side = batch * ROUND_ORDER.count(0)
    figure = bench_report.record(
        Figure(
            benchmark="3 throughput",
            metric="calls/s, 100 in flight",
            unit="/s",
            engine=engine,
            baseline=baseline,
            goal=GoalKind.RATIO_AT_LEAST,
            bound=0.9,
            note=(
                f"median of {ROUND_ORDER.count(0)} rounds of {batch} calls;"
                f" engine rounds {rendered['engine']}, "
                f"baseline rounds {rendered['baseline']}"
            ),
        )
    )
    for process in ("worker", "server", "client"):
        bench_report.record(
            Figure(
                benchmark="3 throughput",
                metric=f"{process} CPU per call",
                unit="ms",
                engine=1000 * getattr(cpu["engine"], process) / calls_per_side,
                baseline=1000 * getattr(cpu["baseline"], process) / calls_per_side,
                note=f"over the {calls_per_side} measured calls per side",
            )
        )
    check_goal(figure)
