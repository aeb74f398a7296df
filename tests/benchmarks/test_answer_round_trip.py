"""Benchmark 2: human-in-the-loop round trip, answer -> result, for a call waiting on a person.

Engine: an ``approve`` call is started and polled until ``AWAITING_INPUT``; then the timed part
is ``handle.answer(...)`` (the validated update) + ``handle.result()``, which re-enters the tool
from its checkpoint. Baseline: a bare workflow waiting on an update, then running one activity
with the answer; timed the same way (``execute_update`` + ``result``) once a query says it waits.
A second, diagnostic baseline is the same bare workflow keeping the ``ScopeToolPhase`` search
attribute current as the engine does (written when waiting and when done): engine
against it shows what the engine's own code costs, apart from keeping calls findable by phase.
Sequential, rotating the three sides after a warm-up (``bench_latency``). Afterwards one call of
each side is read back from history: events, workflow tasks and actions per call
(``bench_history``), which is where the difference in latency comes from.
"""

from __future__ import annotations

import pytest
from bench_history import call_cost, record_call_costs
from bench_latency import alternate_sequentially, record_latency_figures
from bench_runs import CallSide, timed

WARM_UP_CALLS = 10


@pytest.mark.timeout(1800)
async def test_answer_round_trip(bench_sides, bench_settings, bench_report, check_goal):
    last_call: dict[str, str] = {}

    async def one_call(side: CallSide, call_id: str, iteration: int) -> float:
        last_call[side.name] = f"round-trip-{call_id}"
        parked = await side.worker.watch(
            side.park(f"round-trip-{call_id}", f"change {iteration}"), within=60
        )
        await side.worker.watch(side.wait_parked(parked), within=60)
        return await side.worker.watch(
            # Every third call is declined, so both branches of the tool run.
            timed(side.answer_and_finish(parked, approved=iteration % 3 != 0)),
            within=60,
        )

    samples = await alternate_sequentially(
        (bench_sides.engine, bench_sides.bare, bench_sides.bare.keeping_phase()),
        measured=bench_settings.sequential_calls,
        warm_up=WARM_UP_CALLS,
        one_call=one_call,
    )
    assert len(samples["baseline"]) == bench_settings.sequential_calls
    figures = record_latency_figures(
        bench_report,
        samples,
        benchmark="2 answer round trip",
        bound=1.0,
        note=f"{bench_settings.sequential_calls} sequential round trips each,"
        f" after {WARM_UP_CALLS} warm-up",
    )
    record_latency_figures(
        bench_report,
        samples,
        benchmark="2 answer round trip",
        bound=None,
        note="diagnostic: against the bare workflow upserting ScopeToolPhase as the engine does",
        baseline_name="baseline+phase",
    )
    for name, baseline in (("baseline", bench_sides.bare), ("baseline+phase", bench_sides.bare)):
        record_call_costs(
            bench_report,
            benchmark="2 answer round trip",
            engine=await call_cost(bench_sides.engine.client, last_call["engine"]),
            baseline=await call_cost(baseline.client, last_call[name]),
            note=f"whole call (ask, wait, answer, result), against the {name}",
        )
    for figure in figures:
        check_goal(figure)
