"""Hostile input through the command line: ``scope-tool call`` and ``scope-tool answer``.

Fewer examples than through the facade (each one is a process start), but the same kinds:
random bytes, deep nesting, duplicate keys, lone surrogates, huge numbers, wrong types, unknown
tools and odd names. Each must exit non-zero with a clear line on stderr (no traceback), and a
refused answer must leave the call unchanged. One kernel limit shapes the cases: a single
command-line argument holds at most 128 KiB, so over-limit (1 MiB) payloads are only tried
through the facade and the deepest nesting here is 60 000 levels (the protocol limit is 10 000).
"""

from __future__ import annotations

import asyncio
import json
import uuid

from helpers.servers import DedicatedDevServer

from scope_tool import Request
from workflows import Phase, ToolCalls

from ._cli import CLI_ANSWERS, CLI_REQUESTS, run_cli
from ._processes import WorkerProcess
from ._refusals import workflow_task_failures


async def test_cli_refuses_hostile_calls(
    reliability_server: DedicatedDevServer,
    tool_worker: WorkerProcess,
    reliability_calls: ToolCalls,
) -> None:
    started: list[str] = []
    violations: list[str] = []
    for name, arguments in CLI_REQUESTS:
        call_id = f"cli-hostile-{uuid.uuid4().hex[:12]}"
        run = await run_cli(
            "call",
            name,
            arguments,
            "--id",
            call_id,
            "--wait",
            "--timeout",
            "60",
            address=reliability_server.address,
            task_queue=tool_worker.task_queue,
        )
        shown = f"{name!r} {str(arguments)[:60]!r}: exit {run.exit_code}, {run.stderr[-300:]!r}"
        if run.exit_code == 0 or not run.looks_clean():
            violations.append(shown)
        if "started call" in run.stdout:
            started.append(call_id)
            outcome = await asyncio.wait_for(reliability_calls.get(call_id).result(), 60)
            if outcome.phase is not Phase.INVALID:
                violations.append(f"{shown} ended {outcome.phase}")
    print(f"CLI hostile calls: {len(CLI_REQUESTS)} tried, {len(violations)} mishandled")
    assert violations == [], "\n".join(violations)
    assert await workflow_task_failures(reliability_calls.client, started) == ()
    assert tool_worker.alive


async def test_cli_refuses_hostile_answers(
    reliability_server: DedicatedDevServer,
    tool_worker: WorkerProcess,
    reliability_calls: ToolCalls,
) -> None:
    call_id = f"cli-answers-{uuid.uuid4().hex[:12]}"
    handle = await reliability_calls.start(
        Request(name="approve_write", arguments=json.dumps({"key": call_id})), call_id=call_id
    )
    for _ in range(400):
        baseline = await handle.status()
        if baseline.phase is Phase.AWAITING_INPUT:
            break
        await asyncio.sleep(0.05)
    assert baseline.phase is Phase.AWAITING_INPUT

    violations: list[str] = []
    for response in CLI_ANSWERS:
        run = await run_cli(
            "answer",
            call_id,
            response,
            address=reliability_server.address,
            task_queue=tool_worker.task_queue,
        )
        shown = f"{str(response)[:60]!r}: exit {run.exit_code}, {run.stderr[-300:]!r}"
        if run.exit_code == 0 or not run.looks_clean():
            violations.append(shown)
        assert (await handle.status()) == baseline, f"the call changed after {shown}"
    print(f"CLI hostile answers: {len(CLI_ANSWERS)} tried, {len(violations)} mishandled")

    # A well-formed answer through the same command still works afterwards.
    run = await run_cli(
        "answer",
        call_id,
        json.dumps({"approve": True, "key": call_id}),
        address=reliability_server.address,
        task_queue=tool_worker.task_queue,
    )
    assert run.exit_code == 0, run.stderr
    assert (await asyncio.wait_for(handle.result(), 60)).phase is Phase.COMPLETED
    assert await workflow_task_failures(reliability_calls.client, [call_id]) == ()
    assert tool_worker.alive
    assert violations == [], "\n".join(violations)
