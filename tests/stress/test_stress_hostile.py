"""Hostile input, full size: the facade properties with hundreds of generated examples, and
the command line with hypothesis-generated calls and answers (each one a process start).
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid

import pytest
from helpers.servers import DedicatedDevServer
from reliability._cli import CLI_ANSWERS, CLI_REQUESTS, run_cli
from reliability._figures import record_figures
from reliability._hostile_inputs import (
    EXPLICIT_REQUESTS,
    explicit_answers,
    hostile_answers,
    hostile_requests,
)
from reliability._processes import WorkerProcess
from reliability._refusals import (
    HostileTally,
    check_answer_refused,
    check_request_refused,
    run_property,
    workflow_task_failures,
)

from scope_tool import Request
from workflows import Phase, ToolCalls

GENERATED_REQUESTS = 400
GENERATED_ANSWERS = 600
GENERATED_CLI = 30
ARGUMENT_LIMIT = 131_000  # just below the kernel's 128 KiB (131,072 bytes) per argument


def _fits_command_line(text: str | bytes) -> bool:
    try:
        encoded = os.fsencode(text)
    except UnicodeError:
        return False
    return b"\x00" not in encoded and len(encoded) <= ARGUMENT_LIMIT


@pytest.mark.timeout(900)
async def test_facade_refuses_hostile_input(
    reliability_calls: ToolCalls, tool_worker: WorkerProcess
) -> None:
    loop = asyncio.get_running_loop()
    requests = HostileTally()
    await asyncio.to_thread(
        run_property,
        hostile_requests(),
        lambda pair: check_request_refused(reliability_calls, *pair, tally=requests),
        loop=loop,
        max_examples=GENERATED_REQUESTS,
        explicit=EXPLICIT_REQUESTS,
    )
    call_id = f"stress-answers-{uuid.uuid4().hex[:12]}"
    handle = await reliability_calls.start(
        Request(name="approve_write", arguments=json.dumps({"key": call_id})), call_id=call_id
    )
    for _ in range(400):
        baseline = await handle.status()
        if baseline.phase is Phase.AWAITING_INPUT:
            break
        await asyncio.sleep(0.05)
    answers = HostileTally()
    await asyncio.to_thread(
        run_property,
        hostile_answers(call_id),
        lambda pair: check_answer_refused(handle, baseline, *pair, tally=answers),
        loop=loop,
        max_examples=GENERATED_ANSWERS,
        explicit=explicit_answers(call_id),
    )
    failures = await workflow_task_failures(reliability_calls.client, [*requests.call_ids, call_id])
    record_figures(
        "hostile_facade",
        {
            "requests_tried": requests.total,
            "requests_mishandled": len(requests.violations),
            "answers_tried": answers.total,
            "answers_mishandled": len(answers.violations),
            "refusals": {**requests.counts, **answers.counts},
            "mishandled_examples": (requests.violations + answers.violations)[:10],
            "workflow_task_failed": len(failures),
            "worker_alive": tool_worker.alive,
        },
    )
    assert requests.violations == [], requests.report()
    assert answers.violations == [], answers.report()
    assert failures == ()
    assert tool_worker.alive
    assert "Traceback" not in tool_worker.log_text()


@pytest.mark.timeout(900)
async def test_cli_refuses_hostile_input(
    reliability_server: DedicatedDevServer,
    tool_worker: WorkerProcess,
    reliability_calls: ToolCalls,
) -> None:
    loop = asyncio.get_running_loop()
    violations: list[str] = []
    tried = {"calls": 0, "answers": 0}

    async def call_refused(pair: tuple[str | bytes, str | bytes]) -> None:
        name, arguments = pair
        if not (_fits_command_line(name) and _fits_command_line(arguments)):
            return
        if os.fsencode(name).startswith(b"-"):
            return
        tried["calls"] += 1
        run = await run_cli(
            "call",
            name,
            arguments,
            "--id",
            f"cli-{uuid.uuid4().hex}",
            "--wait",
            "--timeout",
            "60",
            address=reliability_server.address,
            task_queue=tool_worker.task_queue,
        )
        if run.exit_code == 0 or not run.looks_clean():
            violations.append(f"call {name[:40]!r} {arguments[:60]!r}: {run.stderr[-300:]!r}")

    await asyncio.to_thread(
        run_property,
        hostile_requests(),
        call_refused,
        loop=loop,
        max_examples=GENERATED_CLI,
        explicit=CLI_REQUESTS,
    )

    call_id = f"cli-stress-{uuid.uuid4().hex[:12]}"
    handle = await reliability_calls.start(
        Request(name="approve_write", arguments=json.dumps({"key": call_id})), call_id=call_id
    )
    for _ in range(400):
        baseline = await handle.status()
        if baseline.phase is Phase.AWAITING_INPUT:
            break
        await asyncio.sleep(0.05)

    async def answer_refused(text: str | bytes | None) -> None:
        if text is None or not _fits_command_line(text) or os.fsencode(text).startswith(b"-"):
            return
        tried["answers"] += 1
        run = await run_cli(
            "answer",
            call_id,
            text,
            address=reliability_server.address,
            task_queue=tool_worker.task_queue,
        )
        if run.exit_code == 0 or not run.looks_clean():
            violations.append(f"answer {text[:60]!r}: {run.stderr[-300:]!r}")
        after = await handle.status()
        if after != baseline:
            violations.append(f"answer {text[:60]!r} changed the call")

    answer_texts = hostile_answers(call_id).map(_as_text).filter(lambda text: text is not None)
    await asyncio.to_thread(
        run_property,
        answer_texts,
        answer_refused,
        loop=loop,
        max_examples=GENERATED_CLI,
        explicit=CLI_ANSWERS,
    )
    record_figures(
        "hostile_cli",
        {**tried, "mishandled": len(violations), "mishandled_examples": violations[:10]},
    )
    assert violations == [], "\n".join(violations[:15])
    assert tool_worker.alive


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
