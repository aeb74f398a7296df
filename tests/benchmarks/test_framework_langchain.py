"""Benchmark: one ungated tool call through the LangChain adapter, against LangChain calling the
plain function, and against the durable call alone.

All three take the model's ``ToolCall`` the way ``create_agent`` and ``ToolNode`` pass it and
return what the model reads: a ``ToolMessage`` for the first two, the call's status for the
third. The adapter's cost over the plain function is the durable call (a workflow, one
activity, its history); its cost over the durable call alone is what the adapter itself adds,
which should be next to nothing.

The worker runs in this process (the durable paths share it, so the comparison is like for
like); the tool is the benchmark's ``echo`` (it returns its text at once).
"""

from __future__ import annotations

import json
import uuid

import pytest
from bench_functions import echo_text
from bench_report import Figure, GoalKind
from bench_tools import registry as bench_registry
from langchain_core.messages import ToolMessage
from langchain_core.tools import StructuredTool
from test_agent_turns import alternate, median_ms

from scope_tool import Request
from scope_tool.agents.langchain import scope_tools
from scope_tool.client import Phase, ToolCalls, with_scope_tool_converter
from scope_tool.workers import build_worker

CALLS = 40
WARM_UP = 5


async def plain_echo(text: str) -> str:
    """Return the text unchanged."""
    return echo_text(text)


@pytest.mark.timeout(900)
async def test_one_ungated_call_through_the_langchain_adapter(
    bench_server, bench_report, check_goal
):
    client = with_scope_tool_converter(bench_server.client)
    task_queue = f"bench-langchain-{uuid.uuid4().hex[:8]}"
    calls = ToolCalls(client, task_queue=task_queue)
    token = uuid.uuid4().hex[:8]
    [adapter] = [
        tool
        for tool in scope_tools(calls, bench_registry, conversation_id=f"bench-lc-{token}")
        if tool.name == "echo"
    ]
    plain = StructuredTool.from_function(coroutine=plain_echo, name="echo")

    def tool_call(index: int) -> dict[str, object]:
        return {
            "type": "tool_call",
            "id": f"call_{index}",
            "name": "echo",
            "args": {"text": f"t{index}"},
        }

    async def through_adapter(index: int) -> None:
        message = await adapter.ainvoke(tool_call(index))
        assert isinstance(message, ToolMessage), message
        assert message.content == f"t{index}", message

    async def plain_function(index: int) -> None:
        message = await plain.ainvoke(tool_call(index))
        assert isinstance(message, ToolMessage), message
        assert message.content == f"t{index}", message

    async def durable_call_alone(index: int) -> None:
        request = Request(name="echo", arguments=json.dumps({"text": f"t{index}"}))
        _, status = await calls.start_and_wait(request, call_id=f"bench-lc-bare-{token}-{index}")
        assert status.phase is Phase.COMPLETED, status

    async with build_worker(client, bench_registry, task_queue=task_queue):
        samples = await alternate(
            {
                "adapter": through_adapter,
                "plain": plain_function,
                "durable": durable_call_alone,
            },
            calls=CALLS,
            warm_up=WARM_UP,
        )
    against_plain = bench_report.record(
        Figure(
            benchmark="langchain: one ungated call",
            metric="adapter vs LangChain calling the plain function (median)",
            unit="ms",
            engine=median_ms(samples["adapter"]),
            baseline=median_ms(samples["plain"]),
            note=f"{CALLS} calls each after {WARM_UP} warm-up, alternating; the gap is the durable call",
        )
    )
    against_durable = bench_report.record(
        Figure(
            benchmark="langchain: one ungated call",
            metric="adapter vs the durable call alone (ToolCalls.start_and_wait, median)",
            unit="ms",
            engine=median_ms(samples["adapter"]),
            baseline=median_ms(samples["durable"]),
            goal=GoalKind.RATIO_AT_MOST,
            bound=1.1,
            note="what the adapter adds on top of the durable call",
        )
    )
    print(
        f"\nadapter {against_plain.engine:.1f} ms vs plain {against_plain.baseline:.3f} ms"
        f" ({against_plain.ratio:.0f}x); vs durable call {against_durable.baseline:.1f} ms"
        f" ({against_durable.ratio:.2f}x)"
    )
    check_goal(against_durable)
