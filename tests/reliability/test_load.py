"""Load, small: ~50 calls that each ask once, answered by another process, two workers.

The full-size run (1,000 calls) is ``tests/stress/test_stress_load.py`` (``make stress``).
"""

from __future__ import annotations

from pathlib import Path

from helpers.servers import DedicatedDevServer

from ._load import run_load

CALLS = 50


async def test_every_call_completes_exactly_once(
    fresh_server: DedicatedDevServer, tmp_path: Path
) -> None:
    report = await run_load(server=fresh_server, workdir=tmp_path, calls=CALLS, workers=2)
    print(report.summary())

    assert report.not_terminal == ()
    assert report.phases == {"COMPLETED": CALLS}, report.summary()
    assert report.audit.effects == CALLS
    assert report.audit.lost == ()
    assert report.audit.duplicated == ()
    assert report.audit.misrouted == ()
    assert report.audit.strangers == ()
    assert report.workflow_task_failures == ()
    assert report.rounds_rerun == (), "a tool round was scheduled twice for one call"
    assert report.answerer["answered"] == CALLS, report.answerer
    assert report.worker_crash_logs == ()
