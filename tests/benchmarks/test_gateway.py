"""Benchmark: the gateway's latency for a call that does not wait, against the upstream direct.

Engine: the official MCP client calls ``time_get_current_time`` through ``scope-tool mcp
--gateway`` (stdio), which starts a durable call that a ``--gateway`` worker runs against
``mcp-server-time`` over stdio. Baseline: the same client calls the same tool of
``mcp-server-time`` directly (its own stdio session). Both sessions stay open; calls are
sequential and alternate after a warm-up. Goal: the engine within 1.2x of the baseline.

A third side, in the same run, sets the gateway apart from durability itself: the same client
calls the benchmark's local ``echo`` tool through ``scope-tool mcp --tools`` (a durable call with
no upstream behind it), and the gateway is also reported against that (no goal).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from bench_latency import record_latency_figures
from mcp import Client, StdioServerParameters
from worker_process import REPO_ROOT

WARM_UP_CALLS = 10
ARGUMENTS = {"timezone": "UTC"}


def _environment() -> dict[str, str]:
    # The benchmark's tool modules (bench_tools) live beside this file.
    search = os.pathsep.join((str(REPO_ROOT), str(Path(__file__).parent)))
    return {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": search}


def _start_worker(serves: list[str], connection: list[str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "scope_tool.workers", *serves, *connection],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=_environment(),
            cwd=REPO_ROOT,
        )


@pytest.mark.timeout(1200)
async def test_gateway_call_latency(
    bench_server, bench_settings, bench_report, check_goal, tmp_path: Path
):
    config = tmp_path / "gateway.json"
    config.write_text(
        json.dumps(
            {"mcpServers": {"time": {"command": sys.executable, "args": ["-m", "mcp_server_time"]}}}
        )
    )
    queue = f"bench-gateway-{os.getpid()}"
    connection = ["--address", bench_server.address, "--task-queue", queue]
    local_connection = ["--address", bench_server.address, "--task-queue", f"{queue}-local"]
    log = tmp_path / "worker.log"
    local_log = tmp_path / "local-worker.log"
    worker = _start_worker(["--gateway", str(config)], connection, log)
    local_worker = _start_worker(["--tools", "bench_tools:registry"], local_connection, local_log)
    try:
        deadline = time.monotonic() + 120
        for process, path in ((worker, log), (local_worker, local_log)):
            while "worker ready" not in path.read_text(errors="replace"):
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"a benchmark worker did not start:\n{path.read_text()}")
                await asyncio.sleep(0.1)
        gateway = StdioServerParameters(
            command=sys.executable,
            args=[
                "-m",
                "scope_tool.cli",
                "mcp",
                "--gateway",
                str(config),
                *connection,
                "--state-key-file",
                str(tmp_path / "state.key"),
            ],
            env=_environment(),
            cwd=str(REPO_ROOT),
        )
        local = StdioServerParameters(
            command=sys.executable,
            args=[
                "-m",
                "scope_tool.cli",
                "mcp",
                "--tools",
                "bench_tools:registry",
                *local_connection,
                "--state-key-file",
                str(tmp_path / "local-state.key"),
            ],
            env=_environment(),
            cwd=str(REPO_ROOT),
        )
        direct = StdioServerParameters(
            command=sys.executable, args=["-m", "mcp_server_time"], env=_environment()
        )
        samples: dict[str, list[float]] = {"engine": [], "baseline": [], "durable": []}
        async with Client(gateway) as through, Client(direct) as upstream, Client(local) as durable:
            sides = (
                ("engine", through, "time_get_current_time", ARGUMENTS),
                ("baseline", upstream, "get_current_time", ARGUMENTS),
                ("durable", durable, "echo", {"text": "UTC"}),
            )
            for iteration in range(WARM_UP_CALLS + bench_settings.sequential_calls):
                order = sides if iteration % 2 == 0 else sides[::-1]
                for name, client, tool, arguments in order:
                    started = time.perf_counter()
                    result = await client.call_tool(tool, arguments)
                    elapsed = time.perf_counter() - started
                    assert not result.is_error, result
                    assert "UTC" in result.content[0].text
                    if iteration >= WARM_UP_CALLS:
                        samples[name].append(elapsed)
    finally:
        for process in (worker, local_worker):
            process.terminate()
            process.wait(timeout=30)
    figures = record_latency_figures(
        bench_report,
        samples,
        benchmark="gateway call (no wait)",
        bound=1.2,
        note=(
            f"{bench_settings.sequential_calls} sequential get_current_time calls each, after"
            f" {WARM_UP_CALLS} warm-up; baseline: the MCP client straight to mcp-server-time"
        ),
    )
    beside = record_latency_figures(
        bench_report,
        samples,
        benchmark="gateway call (no wait)",
        bound=None,
        note="the same gateway calls against a durable call of a local echo tool through"
        " `scope-tool mcp --tools`: what the gateway adds besides durability",
        baseline_name="durable",
    )
    median = figures[0]
    print(
        f"\ngateway call: median {median.engine:.1f} ms through the gateway,"
        f" {median.baseline:.1f} ms direct; ratio {median.ratio:.2f}"
        f" (added {median.engine - (median.baseline or 0):.1f} ms per call);"
        f" a local durable call {beside[0].baseline:.1f} ms, ratio {beside[0].ratio or 0:.2f}"
    )
    for figure in figures:
        check_goal(figure)
