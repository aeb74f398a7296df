"""Benchmark: one ungated call through the Google ADK adapter against ADK calling the function.

One ADK turn (a scripted ``BaseLlm``: a function call, then a text) whose tool is ``echo``, run
by ``Runner.run_async`` with an in-memory session: through ``ScopeToolset`` (a durable call, a
worker in this process runs it) against ADK's own ``FunctionTool`` wrapping the same plain
function (``bench_functions.echo_text``). The same turn also runs with the durable call alone
(``ToolCalls.start_and_wait``, no ADK), so the table shows the adapter's overhead is the durable
call. No goal: the figure is measured, not judged.
"""

from __future__ import annotations

import json
import statistics
import time
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

import pytest
from bench_functions import echo_text
from bench_report import Figure, GoalKind
from bench_tools import registry as bench_registry
from google.adk.agents import LlmAgent
from google.adk.models import BaseLlm, LlmRequest, LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools import FunctionTool
from google.genai import types

from scope_tool import Request
from scope_tool.agents.google_adk import ScopeToolset
from scope_tool.client import Phase, ToolCalls, with_scope_tool_converter
from scope_tool.workers import build_worker

TURNS = 40
WARM_UP = 5


class EchoOnce(BaseLlm):
    """Calls ``echo`` once, then answers with what the tool returned."""

    model: str = "echo-once"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        last = llm_request.contents[-1]
        for part in last.parts or []:
            if part.function_response is not None:
                said = json.dumps(part.function_response.response)
                yield LlmResponse(
                    content=types.Content(role="model", parts=[types.Part(text=said)])
                )
                return
        call = types.FunctionCall(name="echo", args={"text": "hello"})
        yield LlmResponse(
            content=types.Content(role="model", parts=[types.Part(function_call=call)])
        )


async def echo(text: str) -> str:
    """Return the text (the plain function the engine's ``echo`` tool calls)."""
    return echo_text(text)


def turn_of(tools: list[Any]) -> Callable[[int], Awaitable[None]]:
    sessions = InMemorySessionService()  # type: ignore[no-untyped-call]
    agent = LlmAgent(name="bench", model=EchoOnce(), tools=tools)
    runner = Runner(app_name="bench", agent=agent, session_service=sessions)

    async def turn(index: int) -> None:
        session = await sessions.create_session(app_name="bench", user_id="u")
        message = types.Content(role="user", parts=[types.Part(text=f"echo {index}")])
        texts = [
            part.text
            async for event in runner.run_async(
                user_id="u", session_id=session.id, new_message=message
            )
            for part in (event.content.parts or [])
            if event.content
            if part.text
        ]
        assert texts == [json.dumps({"result": echo_text("hello")})], texts

    return turn


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000.0


@pytest.mark.timeout(900)
async def test_one_ungated_call_through_the_adk_adapter_vs_adk_calling_the_function(
    bench_server, bench_report, check_goal
):
    client = with_scope_tool_converter(bench_server.client)
    task_queue = f"bench-adk-{uuid.uuid4().hex[:8]}"
    calls = ToolCalls(client, task_queue=task_queue)
    token = uuid.uuid4().hex[:8]

    async def durable_alone(index: int) -> None:
        request = Request(name="echo", arguments=json.dumps({"text": "hello"}))
        _, status = await calls.start_and_wait(request, call_id=f"bench-adk-{token}-{index}")
        assert status.phase is Phase.COMPLETED, status

    paths = {
        "adapter": turn_of([ScopeToolset(calls, bench_registry, tool_filter=["echo"])]),
        "plain": turn_of([FunctionTool(echo)]),
        "durable call alone": durable_alone,
    }
    samples: dict[str, list[float]] = {name: [] for name in paths}
    async with build_worker(client, bench_registry, task_queue=task_queue):
        for index in range(WARM_UP + TURNS):
            order = list(paths.items())
            if index % 2:
                order.reverse()
            for name, run in order:
                started = time.perf_counter()
                await run(index)
                if index >= WARM_UP:
                    samples[name].append(time.perf_counter() - started)
    alone = median_ms(samples["durable call alone"])
    figure = bench_report.record(
        Figure(
            benchmark="agents: Google ADK, one ungated call",
            metric="ADK turn through ScopeToolset vs ADK FunctionTool (median wall time)",
            unit="ms",
            engine=median_ms(samples["adapter"]),
            baseline=median_ms(samples["plain"]),
            goal=GoalKind.NONE,
            note=f"{TURNS} turns each, alternating; the durable call alone: {alone:.1f} ms",
        )
    )
    print(
        f"\nADK turn: adapter {figure.engine:.1f} ms vs plain function {figure.baseline:.1f} ms"
        f" ({figure.ratio:.2f}x); the durable call alone {alone:.1f} ms"
    )
    check_goal(figure)
