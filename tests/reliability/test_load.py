"""Load: calls that each ask once, answered by another process, two worker processes; every
call completes exactly once (proved by the side-effect ledger).

Small (50 calls) in ``make test``; full (1,000 calls) with ``SCOPE_TOOL_TEST_SIZE=full``
(``make stress``), which also records the figures.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.servers import DedicatedDevServer

from ._figures import record_figures
from ._load import run_load
from ._sizes import SIZE


@pytest.mark.timeout(SIZE.test_timeout_seconds)
async def test_every_call_completes_exactly_once(
    fresh_server: DedicatedDevServer, tmp_path: Path
) -> None:
    calls = SIZE.load_calls
    report = await run_load(
        server=fresh_server,
        workdir=tmp_path,
        calls=calls,
        workers=2,
        budget_seconds=SIZE.load_budget_seconds,
    )
    print(report.summary())
    if SIZE.record_figures:
        record_figures(
            "load",
            {
                "calls": calls,
                "scope_tool.workers": 2,
                "seconds": round(report.seconds, 1),
                "calls_per_second": round(report.calls_per_second, 1),
                "phases": report.phases,
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

    assert report.not_terminal == ()
    assert report.phases == {"COMPLETED": calls}, report.summary()
    assert report.audit.effects == calls
    assert report.audit.lost == ()
    assert report.audit.duplicated == ()
    assert report.audit.misrouted == ()
    assert report.audit.strangers == ()
    assert report.workflow_task_failures == ()
    assert report.rounds_rerun == (), "a tool round was scheduled twice for one call"
    assert report.answerer["answered"] == calls, report.answerer
    assert report.worker_crash_logs == ()
