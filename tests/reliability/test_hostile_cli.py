"""Hostile input through the command line: ``scope-tool call`` and ``scope-tool answer``.

Fewer examples than through the facade (each one is a process start), but the same kinds:
random bytes, deep nesting, duplicate keys, lone surrogates, huge numbers, wrong types, unknown
tools and odd names. Each must exit non-zero with a clear line on stderr (no traceback), and a
refused answer must leave the call unchanged. One kernel limit shapes the cases: a single
command-line argument holds at most 128 KiB, so over-limit (1 MiB) payloads are only tried
through the facade and the deepest nesting here is 60 000 levels (the protocol limit is 10 000).

One suite, two sizes (``_sizes``): the explicit cases in ``make test``; ``make stress`` adds
hypothesis-generated calls and answers and records its figures.
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid

import pytest
from helpers.servers import DedicatedDevServer

from scope_tool import Request
from scope_tool.client import Phase, ToolCalls

from ._cli import CLI_ANSWERS, CLI_REQUESTS, run_cli
from ._figures import record_figures
from ._hostile_inputs import hostile_answers, hostile_requests
from ._processes import WorkerProcess
from ._refusals import run_property, workflow_task_failures
from ._sizes import SIZE

ARGUMENT_LIMIT = 131_000
"""Just below the kernel's 128 KiB (131,072 bytes) per command-line argument."""


def _fits_command_line(text: str | bytes) -> bool:
    try:
        encoded = os.fsencode(text)
    except UnicodeError:
        return False
    return (
        b"\x00" not in encoded and len(encoded) <= ARGUMENT_LIMIT and not encoded.startswith(b"-")
    )


@pytest.mark.timeout(SIZE.test_timeout_seconds)
async def test_cli_refuses_hostile_calls(
    reliability_server: DedicatedDevServer,
    tool_worker: WorkerProcess,
    reliability_calls: ToolCalls,
) -> None:
    started: list[str] = []
    violations: list[str] = []
    tried = 0

    async def call_refused(pair: tuple[str | bytes, str | bytes]) -> None:
        nonlocal tried
        name, arguments = pair
        if not (_fits_command_line(name) and _fits_command_line(arguments)):
            return  # generated values the shell cannot pass; the facade suite tries them
        tried += 1
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

    await asyncio.to_thread(
        run_property,
        hostile_requests(),
        call_refused,
        loop=asyncio.get_running_loop(),
        max_examples=SIZE.hostile_cli,
        explicit=CLI_REQUESTS,
        concurrency=4,
    )
    _report("hostile_cli_calls", tried, violations)
    assert tried >= len(CLI_REQUESTS)
    assert violations == [], "\n".join(violations[:15])
    assert await workflow_task_failures(reliability_calls.client, started) == ()
    assert tool_worker.alive


@pytest.mark.timeout(SIZE.test_timeout_seconds)
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
    tried = 0

    async def answer_refused(response: str | bytes | None) -> None:
        nonlocal tried
        if response is None or not _fits_command_line(response):
            return
        tried += 1
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
        if (await handle.status()) != baseline:
            violations.append(f"the call changed after {shown}")

    await asyncio.to_thread(
        run_property,
        hostile_answers(call_id).map(_as_text).filter(lambda text: text is not None),
        answer_refused,
        loop=asyncio.get_running_loop(),
        max_examples=SIZE.hostile_cli,
        explicit=CLI_ANSWERS,
    )
    _report("hostile_cli_answers", tried, violations)
    assert violations == [], "\n".join(violations[:15])

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


def _report(scenario: str, tried: int, violations: list[str]) -> None:
    """Print what was tried; at full size, record it for the README's figures."""
    print(f"{scenario}: {tried} tried, {len(violations)} mishandled")
    if SIZE.record_figures:
        record_figures(
            scenario, {"tried": tried, "mishandled": len(violations), "examples": violations[:10]}
        )


def _as_text(pair: tuple[object, str | None]) -> str | None:
    """The command-line form of a generated answer (None when it has no text form)."""
    response, request_id = pair
    if request_id is not None:
        return None  # the CLI answers the pending question; wrong ids are a facade case
    if isinstance(response, bytes):
        return response.decode("utf-8", "surrogateescape")
    if isinstance(response, str):
        return response
    try:
        return json.dumps(response)
    except (TypeError, ValueError, RecursionError):
        return None
