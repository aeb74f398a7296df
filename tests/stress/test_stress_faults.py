"""Faults during load, full size: 1,000 calls; one worker SIGKILLed mid-tool, later the dev
server SIGKILLed and restarted on its SQLite file and port. Zero lost, zero duplicated effects
of the (not retry-safe) tool; calls caught inside it end ERRORED "outcome unknown", counted.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.servers import DedicatedDevServer
from reliability._load import FaultPlan, run_load

from workflows import Phase

from ._figures import record_figures

CALLS = 1_000


@pytest.mark.timeout(900)
async def test_thousand_calls_survive_worker_and_server_kills(
    fresh_server: DedicatedDevServer, tmp_path: Path
) -> None:
    report = await run_load(
        server=fresh_server,
        workdir=tmp_path,
        calls=CALLS,
        workers=2,
        hold_seconds=0.2,
        faults=FaultPlan(kill_worker_at=0.3, kill_server_at=0.6, server_down_seconds=3.0),
        budget_seconds=800.0,
    )
    record_figures(
        "faults",
        {
            "calls": CALLS,
            "workers": 2,
            "seconds": round(report.seconds, 1),
            "calls_per_second": round(report.calls_per_second, 1),
            "faults": list(report.faults),
            "phases": report.phases,
            "caught_in_tool": len(report.caught_in_tool),
            "outcome_unknown": report.outcome_unknown,
            "unknown_by_round": report.unknown_by_round,
            "effects": report.audit.effects,
            "lost": len(report.audit.lost),
            "duplicated": len(report.audit.duplicated),
            "misrouted": len(report.audit.misrouted),
            "workflow_task_failed": len(report.workflow_task_failures),
            "rounds_rerun": len(report.rounds_rerun),
            "longest_pause_between_effects_s": round(report.longest_pause_seconds, 1),
            "answerer": report.answerer,
        },
    )
    assert len(report.faults) == 4, report.faults
    assert fresh_server.starts == 2
    assert report.not_terminal == ()
    assert set(report.phases) <= {Phase.COMPLETED.value, Phase.ERRORED.value}, report.phases
    assert report.caught_in_tool, "the worker kill caught no call inside the tool"
    assert set(report.caught_in_tool.values()) == {Phase.ERRORED.value}, report.caught_in_tool
    assert report.outcome_unknown == report.phases.get(Phase.ERRORED.value, 0)
    assert report.audit.lost == ()
    assert report.audit.duplicated == ()
    assert report.audit.misrouted == ()
    assert report.audit.strangers == ()
    assert report.workflow_task_failures == ()
    assert report.rounds_rerun == (), "a tool round was scheduled twice for one call"
