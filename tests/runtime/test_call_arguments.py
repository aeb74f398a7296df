"""``scope-tool call`` refuses arguments the tool's schema refuses, before anything starts.

The schema is the one the workers published (``scope-tool tools --json``), checked by the
protocol's own schema layer (``CompiledSchema``, as ``Contract.prepare`` checks it), so the
verdict is the worker's; a tool no worker published keeps today's path.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from scope_tool.client import CallNotFoundError, ToolCalls


async def _cli(capsys: Any, *args: str, address: str, queue: str) -> tuple[int, str, str]:
    from scope_tool.cli.__main__ import run

    capsys.readouterr()
    code = await asyncio.to_thread(run, [*args, "--address", address, "--task-queue", queue])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


async def test_bad_arguments_are_refused_in_the_schema_s_terms_before_starting(
    calls: ToolCalls, worker: Any, temporal_address: str, task_queue: str, capsys: Any
) -> None:
    for _ in range(100):
        if any(tool.name == "echo" for tool in await calls.tools()):
            break
        await asyncio.sleep(0.05)
    code, out, err = await _cli(
        capsys,
        "call",
        "echo",
        '{"text": 5}',
        "--id",
        "refused-args",
        address=temporal_address,
        queue=task_queue,
    )
    assert code == 2, (out, err)
    assert "started" not in out
    assert "arguments do not satisfy the input schema of tool 'echo'" in err
    assert "at /text:" in err
    assert '"type": "string"' in err  # the schema fragment at that path
    assert "Traceback" not in err
    with pytest.raises(CallNotFoundError):
        await calls.get("refused-args").status()
    # Arguments the schema accepts start as before.
    code, out, err = await _cli(
        capsys,
        "call",
        "echo",
        json.dumps({"text": "hi"}),
        "--wait",
        address=temporal_address,
        queue=task_queue,
    )
    assert code == 0, (out, err)
    assert "echo: hi" in out
