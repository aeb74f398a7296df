"""Tracing and metrics against the session's dev server.

Spans go to OpenTelemetry's in-memory exporter; metrics are scraped from the Prometheus endpoint
of a Temporal runtime, where Temporal's own worker metrics and scope-tool's land together.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from e2e._cli import free_port
from helpers.waiting import wait_for_phase, wait_until_async
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from runtime.example_tools import REGISTRY
from temporalio.client import Client

from scope_tool import Request
from scope_tool.client import DATA_CONVERTER, AnswerRejectedError, Phase, ToolCalls
from scope_tool.wire import UNSERVED_TOOL
from scope_tool.workers import build_worker
from scope_tool.workers.telemetry import (
    parse_metrics_address,
    prometheus_runtime,
    telemetry_interceptors,
)


@pytest.fixture(scope="session")
def spans() -> Iterator[InMemorySpanExporter]:
    """The process's tracer provider (set once per process), exporting to memory."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    yield exporter
    provider.shutdown()


@pytest.fixture(scope="session")
async def metrics_address() -> str:
    return f"127.0.0.1:{free_port()}"


@pytest.fixture(scope="session")
async def traced_client(
    temporal_address: str, metrics_address: str, spans: InMemorySpanExporter
) -> Client:
    """A client with tracing and metrics; workers built from it inherit both."""
    return await Client.connect(
        temporal_address,
        data_converter=DATA_CONVERTER,
        interceptors=telemetry_interceptors(tracing=True),
        runtime=prometheus_runtime(metrics_address),
    )


def _scrape(address: str) -> str:
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=10) as response:
        return response.read().decode("utf-8")


async def _has(address: str, name: str, count: float = 1, **labels: str) -> bool:
    return _sample(_scrape(address), name, **labels) >= count


def _sample(text: str, name: str, **labels: str) -> float:
    """The sum of the samples of ``name`` whose labels include ``labels``."""
    total = 0.0
    for line in text.splitlines():
        match = re.match(rf"^{re.escape(name)}\{{(.*)\}} (\S+)$", line)
        if not match:
            continue
        found = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', match.group(1)))
        if all(found.get(key) == value for key, value in labels.items()):
            total += float(match.group(2))
    return total


async def test_one_call_is_one_trace_with_a_span_per_round(
    traced_client: Client, task_queue: str, spans: InMemorySpanExporter, tmp_path: Path
) -> None:
    calls = ToolCalls(traced_client, task_queue=task_queue)
    call_id = f"plan-{uuid.uuid4()}"
    arguments = json.dumps({"ledger": str(tmp_path / "ledger"), "service": "api"})
    async with build_worker(traced_client, REGISTRY, task_queue=task_queue):
        handle = await calls.start(
            Request(name="deploy_plan", arguments=arguments), call_id=call_id
        )
        await wait_for_phase(handle, Phase.AWAITING_INPUT)
        await handle.answer({"approve": True})
        second = await wait_for_phase(handle, Phase.AWAITING_INPUT)
        while second.round != 2:
            second = await wait_for_phase(handle, Phase.AWAITING_INPUT)
        await handle.answer('"confirm"')
        assert (await handle.result()).phase is Phase.COMPLETED

    finished = spans.get_finished_spans()
    [start] = [
        s
        for s in finished
        if s.name == "StartWorkflow:scope_tool.ToolCall"
        and s.attributes.get("temporalWorkflowID") == call_id
    ]
    in_trace = [s for s in finished if s.context.trace_id == start.context.trace_id]
    names = {s.name for s in in_trace}
    assert {
        "RunWorkflow:scope_tool.ToolCall",
        "StartActivity:scope_tool.call_tool_here",
        "RunActivity:scope_tool.call_tool_here",
        "scope_tool.round",
    } <= names
    rounds = sorted(
        (s for s in in_trace if s.name == "scope_tool.round"),
        key=lambda s: s.attributes["scope_tool.round"],
    )
    assert [
        (s.attributes["scope_tool.round"], s.attributes["scope_tool.phase"]) for s in rounds
    ] == [(1, "AWAITING_INPUT"), (2, "AWAITING_INPUT"), (3, "COMPLETED")]
    assert {s.attributes["scope_tool.call_id"] for s in rounds} == {call_id}
    assert {s.attributes["scope_tool.tool"] for s in rounds} == {"deploy_plan"}
    run_activity_ids = {
        s.context.span_id for s in in_trace if s.name == "RunActivity:scope_tool.call_tool_here"
    }
    assert all(s.parent is not None and s.parent.span_id in run_activity_ids for s in rounds)


async def test_worker_metrics_are_scraped_from_one_prometheus_endpoint(
    traced_client: Client, metrics_address: str, task_queue: str, tmp_path: Path
) -> None:
    calls = ToolCalls(
        traced_client, task_queue=task_queue, notify_initial_interval=timedelta(milliseconds=50)
    )
    arguments = json.dumps({"ledger": str(tmp_path / "ledger"), "service": "api"})
    dead_url = f"http://127.0.0.1:{free_port()}/hook"
    async with build_worker(traced_client, REGISTRY, task_queue=task_queue):
        handle = await calls.start(
            Request(name="deploy_plan", arguments=arguments),
            call_id=f"plan-{uuid.uuid4()}",
            allowed_answerers=("alice",),
        )
        await wait_for_phase(handle, Phase.AWAITING_INPUT)
        with pytest.raises(AnswerRejectedError):
            await handle.answer({"approve": True}, answered_by="mallory")
        await handle.signal_answer({"approve": "yes"}, answered_by="alice")
        await wait_until_async(lambda: _refused(handle))
        await handle.answer({"approve": False}, answered_by="alice")
        assert (await handle.result()).phase is Phase.COMPLETED
        echoed = await calls.start(
            Request(name="echo", arguments='{"text": "hi"}'),
            call_id=f"echo-{uuid.uuid4()}",
            notify_url=dead_url,
        )
        assert (await echoed.result()).phase is Phase.COMPLETED

        async def counted() -> bool:
            text = _scrape(metrics_address)
            return _sample(text, "scope_tool_notifications_failed", task_queue=task_queue) >= 1

        # The finished notice is retried by its own workflow after the call ended, on this
        # worker: wait for it to fail before the worker stops.
        await wait_until_async(counted, within=30)
    await wait_until_async(
        lambda: _has(metrics_address, "temporal_workflow_completed", count=2, task_queue=task_queue)
    )
    text = _scrape(metrics_address)
    queue = {"task_queue": task_queue}
    assert _sample(text, "scope_tool_calls", tool="deploy_plan", phase="COMPLETED", **queue) == 1
    assert _sample(text, "scope_tool_calls", tool="echo", phase="COMPLETED", **queue) == 1
    assert (
        _sample(text, "scope_tool_rounds", tool="deploy_plan", phase="AWAITING_INPUT", **queue) == 1
    )
    assert _sample(text, "scope_tool_rounds", tool="deploy_plan", phase="COMPLETED", **queue) == 1
    assert _sample(text, "scope_tool_answer_wait_seconds_count", tool="deploy_plan", **queue) == 1
    # Human waits: buckets reach days (a person answers in hours, not in ten seconds).
    wait_buckets = {"1", "60", "3600", "86400", "604800"}
    for bound in wait_buckets:
        assert (
            _sample(
                text, "scope_tool_answer_wait_seconds_bucket", le=bound, tool="deploy_plan", **queue
            )
            == 1
        ), (bound, [line for line in text.splitlines() if "answer_wait_seconds_bucket" in line])
    assert (
        _sample(text, "scope_tool_answers_refused", reason="not_allowed", via="update", **queue)
        == 1
    )
    assert _sample(text, "scope_tool_answers_refused", reason="schema", via="signal", **queue) == 1
    assert (
        _sample(text, "scope_tool_notifications_failed", tool="echo", event="finished", **queue)
        == 1
    )
    # Temporal's own worker metrics come from the same endpoint.
    assert _sample(text, "temporal_workflow_completed", task_queue=task_queue) >= 2


async def test_calls_of_tools_no_worker_runs_share_one_metrics_label(
    traced_client: Client, metrics_address: str, task_queue: str
) -> None:
    """A client names its tool: unknown names must not each become a metrics series (#25.8)."""
    calls = ToolCalls(
        traced_client, task_queue=task_queue, notify_initial_interval=timedelta(milliseconds=50)
    )
    dead_url = f"http://127.0.0.1:{free_port()}/hook"
    invented = "nobody_serves_" + uuid.uuid4().hex[:8]  # a valid name no worker has
    not_a_name = "x/" * 1000  # 2 KB, no tool's name at all
    async with build_worker(traced_client, REGISTRY, task_queue=task_queue):
        for name in (invented, not_a_name):
            handle = await calls.start(
                Request(name=name, arguments="{}"),
                call_id=f"unknown-{uuid.uuid4()}",
                notify_url=dead_url,
            )
            assert (await handle.result()).phase is Phase.INVALID

        async def counted() -> bool:
            text = _scrape(metrics_address)
            failed = _sample(text, "scope_tool_notifications_failed", task_queue=task_queue)
            return failed >= 2

        await wait_until_async(counted, within=60)
    text = _scrape(metrics_address)
    queue = {"task_queue": task_queue}
    assert _sample(text, "scope_tool_calls", tool=UNSERVED_TOOL, phase="INVALID", **queue) == 2
    assert _sample(text, "scope_tool_notifications_failed", tool=UNSERVED_TOOL, **queue) == 2
    ours = [line for line in text.splitlines() if line.startswith("scope_tool_")]
    assert not [line for line in ours if invented in line or "x/x/" in line]


def test_metrics_address_is_checked() -> None:
    assert parse_metrics_address("0.0.0.0:9464") == "0.0.0.0:9464"
    for bad in ("9464", "host:", "host:port", "host:70000"):
        with pytest.raises(ValueError, match="--metrics must be HOST:PORT"):
            parse_metrics_address(bad)


async def _refused(handle: Any) -> bool:
    return bool((await handle.status()).refused)


class _Collector:
    """A minimal OTLP/HTTP trace receiver: keeps every span a process exports to it."""

    def __init__(self) -> None:
        import http.server
        import threading

        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        received = self.spans = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                for resource in request.resource_spans:
                    for scope in resource.scope_spans:
                        received.extend(scope.spans)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


async def test_a_worker_process_joins_the_callers_trace_and_serves_metrics(
    traced_client: Client,
    temporal_address: str,
    task_queue: str,
    spans: InMemorySpanExporter,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from helpers.workers import worker_process

    collector = _Collector()
    worker_metrics = f"127.0.0.1:{free_port()}"
    monkeypatch.setenv("SCOPE_TOOL_TRACING", "1")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint)
    calls = ToolCalls(traced_client, task_queue=task_queue)
    call_id = f"echo-{uuid.uuid4()}"
    try:
        async with worker_process(
            temporal_address,
            task_queue,
            tmp_path / "worker.log",
            environment={"SCOPE_TOOL_METRICS": worker_metrics},
        ):
            handle = await calls.start(
                Request(name="echo", arguments='{"text": "hi"}'), call_id=call_id
            )
            assert (await handle.result()).phase is Phase.COMPLETED
            queue = {"task_queue": task_queue}
            # Temporal counts a completed workflow once the server acknowledged the task,
            # which can be a moment after the result is visible to the caller.
            await wait_until_async(
                lambda: _has(worker_metrics, "temporal_workflow_completed", **queue)
            )
            text = _scrape(worker_metrics)
            assert _sample(text, "scope_tool_calls", tool="echo", phase="COMPLETED", **queue) == 1
            assert _sample(text, "scope_tool_rounds", tool="echo", phase="COMPLETED", **queue) == 1
            assert _sample(text, "temporal_workflow_completed", **queue) == 1
        # The worker flushed its spans on SIGTERM.
        [start] = [
            s
            for s in spans.get_finished_spans()
            if s.name == "StartWorkflow:scope_tool.ToolCall"
            and s.attributes.get("temporalWorkflowID") == call_id
        ]
        trace_id = start.context.trace_id.to_bytes(16, "big")
        joined = {s.name for s in collector.spans if s.trace_id == trace_id}
        assert {
            "RunWorkflow:scope_tool.ToolCall",
            "RunActivity:scope_tool.call_tool_here",
            "scope_tool.round",
        } <= joined, sorted(joined)
    finally:
        collector.close()


def test_tracing_without_opentelemetry_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from scope_tool.config.tracing import client_tracing_interceptors
    from scope_tool.wire.errors import TelemetryConfigError

    assert client_tracing_interceptors(tracing=False) == []
    monkeypatch.setitem(sys.modules, "temporalio.contrib.opentelemetry", None)
    with pytest.raises(TelemetryConfigError, match=r"pip install 'scope-tool\[otel\]'"):
        client_tracing_interceptors(tracing=True)
    with pytest.raises(TelemetryConfigError, match=r"pip install 'scope-tool\[otel\]'"):
        telemetry_interceptors(tracing=True)


def test_the_core_and_a_worker_load_without_opentelemetry() -> None:
    code = (
        "import sys, scope_tool.client, scope_tool.workers, scope_tool.workers.telemetry, scope_tool.workers.__main__,"
        " scope_tool.cli.__main__\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('opentelemetry'))\n"
        "assert not loaded, loaded\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
