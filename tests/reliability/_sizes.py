"""One suite, two sizes: small in ``make test``, full (``SCOPE_TOOL_TEST_SIZE=full``) in ``make stress``.

The load, fault and hostile-input scenarios run the same code and the same assertions at both sizes; only the
number of calls, the time budgets and whether figures are recorded differ.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import timedelta

from ._load import FaultPlan

__all__ = ["SIZE", "Size"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Size:
    """How big the scenarios run."""

    name: str
    load_calls: int
    load_budget_seconds: float
    fault_calls: int
    fault_hold_seconds: float
    fault_plan: FaultPlan
    fault_budget_seconds: float
    heartbeat_timeout: timedelta
    test_timeout_seconds: int
    record_figures: bool
    hostile_requests: int
    """Requests hypothesis generates for the facade (beside the explicit ones)."""
    hostile_answers: int
    """Answers hypothesis generates for the facade."""
    hostile_cli: int
    """Calls and answers generated for the command line (each one a process start)."""


SMALL = Size(
    name="small",
    load_calls=50,
    load_budget_seconds=600.0,
    fault_calls=40,
    fault_hold_seconds=0.4,
    fault_plan=FaultPlan(kill_worker_at=0.2, kill_server_at=0.5, server_down_seconds=2.0),
    fault_budget_seconds=100.0,
    heartbeat_timeout=timedelta(seconds=3),  # conftest.HEARTBEAT_TIMEOUT
    test_timeout_seconds=120,
    record_figures=False,
    hostile_requests=40,
    hostile_answers=150,
    hostile_cli=0,
)
FULL = Size(
    name="full",
    load_calls=1_000,
    load_budget_seconds=800.0,
    fault_calls=1_000,
    fault_hold_seconds=0.2,
    fault_plan=FaultPlan(kill_worker_at=0.3, kill_server_at=0.6, server_down_seconds=3.0),
    fault_budget_seconds=800.0,
    heartbeat_timeout=timedelta(seconds=10),
    test_timeout_seconds=900,
    record_figures=True,
    hostile_requests=400,
    hostile_answers=600,
    hostile_cli=30,
)

SIZE = FULL if os.environ.get("SCOPE_TOOL_TEST_SIZE", "small") == "full" else SMALL
"""The size of this run."""
