"""Benchmark: the gateway's latency for a call that does not wait, against the upstream direct.

Engine: the official MCP client calls ``time_get_current_time`` through ``scope-tool mcp
--gateway`` (stdio), which starts a durable call that a ``--gateway`` worker runs against
``mcp-server-time`` over stdio. Baseline: the same client calls the same tool of
``mcp-server-time`` directly (its own stdio session). Both sessions stay open; calls are
sequential and alternate after a warm-up. Goal: the engine within 1.2x of the baseline.
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
    return {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(REPO_ROOT)}


def _start_worker(config: Path, connection: list[str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "scope_tool.workers", "--gateway", str(config), *connection],
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
    log = tmp_path / "worker.log"
    worker = _start_worker(config, connection, log)
    try:
        deadline = time.monotonic() + 120
        while "worker ready" not in log.read_text(errors="replace"):
            if worker.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the gateway worker did not start:\n{log.read_text()}")
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
        direct = StdioServerParameters(
            command=sys.executable, args=["-m", "mcp_server_time"], env=_environment()
        )
        samples: dict[str, list[float]] = {"engine": [], "baseline": []}
        async with Client(gateway) as through, Client(direct) as upstream:
            sides = (
                ("engine", through, "time_get_current_time"),
                ("baseline", upstream, "get_current_time"),
            )
            for iteration in range(WARM_UP_CALLS + bench_settings.sequential_calls):
                order = sides if iteration % 2 == 0 else sides[::-1]
                for name, client, tool in order:
                    started = time.perf_counter()
                    result = await client.call_tool(tool, ARGUMENTS)
                    elapsed = time.perf_counter() - started
                    assert not result.is_error, result
                    assert "UTC" in result.content[0].text
                    if iteration >= WARM_UP_CALLS:
                        samples[name].append(elapsed)
    finally:
        worker.terminate()
        worker.wait(timeout=30)
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
    median = figures[0]
    print(
        f"\ngateway call: median {median.engine:.1f} ms through the gateway,"
        f" {median.baseline:.1f} ms direct; ratio {median.ratio:.2f}"
        f" (added {median.engine - (median.baseline or 0):.1f} ms per call)"
    )
    for figure in figures:
        check_goal(figure)
