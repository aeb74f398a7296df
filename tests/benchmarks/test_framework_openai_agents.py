"""Benchmark: one ungated tool call in an OpenAI Agents SDK run, durable against plain.

A run is the SDK's ``Runner.run`` with its own ``ScriptedModel``: one ``echo`` function call,
then a final message (no network, tracing off). Engine: the call goes through
``scope_tool.agents.openai_agents.ScopeTools`` (its ``needs_approval`` starts the durable call,
the invocation attaches to its result). Baseline: the same SDK run calling the plain ``echo``
function (``function_tool``). The difference is the durable call: reported beside it is the
durable call alone (``ToolCalls.start_and_wait``) over the same runs.

The worker runs in this process; runs alternate engine and baseline.
"""

from __future__ import annotations

import json
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call
from bench_functions import echo_text
from bench_report import Figure, GoalKind
from bench_tools import registry as bench_registry

from scope_tool import Request
from scope_tool.agents.openai_agents import ScopeTools
from scope_tool.client import Phase, ToolCalls, with_scope_tool_converter
from scope_tool.workers import build_worker

RUNS = 40
WARM_UP = 5


@function_tool(name_override="echo")
def plain_echo(text: str) -> str:
    """Return the text unchanged."""
    return echo_text(text)


def one_call_model(index: int) -> ScriptedModel:
    return ScriptedModel(
        [
            [function_call("echo", {"text": f"t{index}"}, call_id="call_1")],
            [assistant_message("done")],
        ]
    )


async def timed(
    paths: dict[str, Callable[[int], Awaitable[Any]]], *, runs: int, warm_up: int
) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {name: [] for name in paths}
    for index in range(warm_up + runs):
        order = list(paths.items()) if index % 2 == 0 else list(reversed(paths.items()))
        for name, run in order:
            started = time.perf_counter()
            await run(index)
            if index >= warm_up:
                samples[name].append(time.perf_counter() - started)
    return samples


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000.0


@pytest.mark.timeout(900)
async def test_one_ungated_call_through_the_adapter_vs_the_sdk_calling_the_function(
    bench_server, bench_report
):
    set_tracing_disabled(True)
    client = with_scope_tool_converter(bench_server.client)
    task_queue = f"bench-openai-agents-{uuid.uuid4().hex[:8]}"
    calls = ToolCalls(client, task_queue=task_queue)
    token = uuid.uuid4().hex[:8]

    async def durable(index: int) -> None:
        tools = ScopeTools(calls, bench_registry, conversation_id=f"bench-{token}-{index}")
        agent = Agent(name="bench", model=one_call_model(index), tools=tools.tools)
        result = await Runner.run(agent, "echo")
        assert not result.interruptions, result
        assert result.final_output == "done", result

    async def plain(index: int) -> None:
        agent = Agent(name="bench", model=one_call_model(index), tools=[plain_echo])
        result = await Runner.run(agent, "echo")
        assert result.final_output == "done", result

    async def call_alone(index: int) -> None:
        request = Request(name="echo", arguments=json.dumps({"text": f"t{index}"}))
        _, status = await calls.start_and_wait(request, call_id=f"alone-{token}-{index}")
        assert status.phase is Phase.COMPLETED, status

    async with build_worker(client, bench_registry, task_queue=task_queue):
        samples = await timed(
            {"adapter": durable, "plain": plain, "call alone": call_alone},
            runs=RUNS,
            warm_up=WARM_UP,
        )
    alone = median_ms(samples["call alone"])
    figure = bench_report.record(
        Figure(
            benchmark="openai-agents: one ungated call",
            metric="Runner.run through ScopeTools vs the SDK calling the plain function (median)",
            unit="ms",
            engine=median_ms(samples["adapter"]),
            baseline=median_ms(samples["plain"]),
            goal=GoalKind.NONE,
            note=f"{RUNS} runs each after {WARM_UP} warm-up, alternating; ScriptedModel;"
            f" the durable call alone (start_and_wait): {alone:.1f} ms",
        )
    )
    print(
        f"\nopenai-agents one call: adapter {figure.engine:.1f} ms, plain {figure.baseline:.1f} ms,"
        f" ratio {figure.ratio:.1f}; durable call alone {alone:.1f} ms"
    )
