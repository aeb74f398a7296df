"""``scope-tool worker --tools module:attr`` serves your own tools, as the README shows.

A tool module is written to a temporary folder, the worker is started from that folder (as a
person would, ``module`` importable from the current directory) on its own task queue, a call is
made through the CLI, and SIGTERM stops the worker with exit code 0.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

from ._cli import DevProcess, cli

TOOLS = textwrap.dedent(
    """
    from pydantic import BaseModel
    from scope_tool import Func, Registry

    class Greeting(BaseModel):
        name: str

    def greet(value: Greeting) -> str:
        return f"Hello, {value.name}!"

    registry = Registry(Func(greet, name="greet"))
    """
)


def test_worker_serves_a_registry_from_the_current_folder(
    dev_session: DevProcess, tmp_path: Path
) -> None:
    module = f"my_tools_{uuid.uuid4().hex[:6]}"
    (tmp_path / f"{module}.py").write_text(TOOLS)
    queue = f"own-tools-{uuid.uuid4().hex[:6]}"
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in ("PYTHONPATH", "SCOPE_TOOL_IDENTITY_SECRET")
    }
    environment["SCOPE_TOOL_ADDRESS"] = dev_session.address
    # This tree's scope_tool (not whichever the console script's environment installed); the
    # tool module is still found only in the current folder.
    environment["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    worker = subprocess.Popen(
        # The console script (not ``python -m``): the current folder is not on its sys.path.
        [
            str(Path(sys.executable).parent / "scope-tool"),
            "worker",
            "--tools",
            f"{module}:registry",
            "--task-queue",
            queue,
        ],
        cwd=tmp_path,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # A call names a tool only once a worker serves it (else it is refused, did-you-mean).
        assert worker.stderr is not None
        ready = worker.stderr.readline()
        assert "worker ready" in ready, ready
        # Without the identity secret it says so at once, naming itself: it would refuse every
        # verified answer whose check it runs.
        warning = worker.stderr.readline()
        assert warning.startswith("scope-tool: warning: SCOPE_TOOL_IDENTITY_SECRET is not set"), (
            warning
        )
        assert f"@{os.uname().nodename}" in warning, warning
        assert "--require-verified" in warning, warning
        waited = cli(
            dev_session,
            "call",
            "greet",
            '{"name": "Ada"}',
            "--task-queue",
            queue,
            "--wait",
            "--timeout",
            "60",
        )
        assert waited.code == 0, waited
        assert "Hello, Ada!" in waited.stdout
        worker.send_signal(signal.SIGTERM)
        _, stderr = worker.communicate(timeout=30)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.communicate()
    assert worker.returncode == 0, stderr
    assert "Traceback" not in stderr
