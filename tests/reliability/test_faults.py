"""Faults during load, small: SIGKILL a worker mid-tool, then SIGKILL and restart the server.

``approve_write`` is not safe to retry. Whatever breaks, its effect must never happen twice, a
COMPLETED call must have its effect, and the calls the dead worker abandoned inside the tool
must end ERRORED "outcome unknown" (counted), not be silently re-run or left hanging.
The full-size run is ``tests/stress/test_stress_faults.py``.
"""

from __future__ import annotations

from pathlib import Path

from workflows import Phase

from ._dev_server import DedicatedDevServer
from ._load import FaultPlan, run_load
from .conftest import HEARTBEAT_TIMEOUT

CALLS = 40


async def test_worker_and_server_kills_lose_and_duplicate_nothing(
    fresh_server: DedicatedDevServer, tmp_path: Path
) -> None:
    report = await run_load(
        server=fresh_server,
        workdir=tmp_path,
        calls=CALLS,
        workers=2,
        hold_seconds=0.4,
        faults=FaultPlan(kill_worker_at=0.2, kill_server_at=0.5, server_down_seconds=2.0),
        heartbeat_timeout=HEARTBEAT_TIMEOUT,
        budget_seconds=100.0,
    )
    print(report.summary())

    assert len(report.faults) == 4, report.faults  # worker kill, replacement, server kill, restart
    assert fresh_server.starts == 2
    assert report.not_terminal == ()
    assert set(report.phases) <= {Phase.COMPLETED.value, Phase.ERRORED.value}, report.phases
    # The kill landed inside the tool, and every call caught there ended "outcome unknown".
    assert report.caught_in_tool, "the worker kill caught no call inside the tool"
    assert set(report.caught_in_tool.values()) == {Phase.ERRORED.value}, report.caught_in_tool
    assert report.outcome_unknown == report.phases.get(Phase.ERRORED.value, 0)
    assert report.outcome_unknown >= len(report.caught_in_tool)
    assert report.audit.lost == ()
    assert report.audit.duplicated == ()
    assert report.audit.misrouted == ()
    assert report.audit.strangers == ()
    assert report.audit.effects >= report.phases.get(Phase.COMPLETED.value, 0)
    assert report.workflow_task_failures == ()
