"""The container suite runs only when asked: ``make test-containers`` sets
``SCOPE_TOOL_CONTAINER_TESTS=1`` after building the images it needs.

A plain ``pytest`` (``make test``) does not collect these tests at all, the same way it does not
collect the benchmarks: they need a Docker engine and three locally built images, which
``make test-containers`` provides. Once collected, nothing here skips: a missing engine or image
fails the test with a line saying how to get it.
"""

from __future__ import annotations

import os
from pathlib import Path

ENABLE_ENV = "SCOPE_TOOL_CONTAINER_TESTS"


def pytest_ignore_collect(collection_path: Path) -> bool | None:
    if os.environ.get(ENABLE_ENV) == "1":
        return None
    return collection_path.name.startswith("test_") or None
