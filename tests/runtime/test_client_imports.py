"""A client import never loads the workflow definition (checked in a fresh interpreter)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from helpers.imports import modules_loaded_by


@pytest.mark.parametrize(
    "statement",
    [
        "from scope_tool.client import ToolCalls, ToolCallHandle, CallStatus, AnswerRejectedError",
        "import scope_tool.wire",
        "import scope_tool.cli.__main__",
    ],
)
def test_a_client_import_does_not_load_the_workflow(statement: str) -> None:
    assert modules_loaded_by(statement, ("scope_tool.workflows._workflow",)) == set()


def test_the_worker_side_still_finds_the_workflow() -> None:
    probe = (
        "import sys\nfrom scope_tool.workflows import ToolCallWorkflow\n"
        "print(ToolCallWorkflow.__module__, 'scope_tool.workflows._workflow' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "scope_tool.workflows._workflow True", done.stderr
