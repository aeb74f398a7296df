"""Fixtures for the full-size scenarios: the same real servers and worker processes as the
small versions in ``tests/reliability`` (imported from there, so both sizes run one harness).
"""

from __future__ import annotations

from reliability.conftest import (  # noqa: F401  (fixtures, re-exported for this folder)
    fresh_server,
    reliability_calls,
    reliability_dir,
    reliability_server,
    shared_ledger,
    tool_worker,
)
