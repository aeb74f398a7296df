"""Tracing and metrics for workers and clients: OpenTelemetry spans and Prometheus metrics.

**Metrics** go through Temporal's own metric meter (``workflow.metric_meter()``,
``activity.metric_meter()``), so they are served on the same Prometheus endpoint as Temporal's
runtime metrics (``--metrics HOST:PORT``, see :func:`prometheus_runtime`) and are never emitted
twice when a workflow replays. Ours, each labelled as shown:

* ``scope_tool_calls{tool, phase}``: calls that finished, by their final phase;
* ``scope_tool_rounds{tool, phase}``: rounds run (phase: what the round led to);
* ``scope_tool_answer_wait_seconds{tool}``: histogram, from a question being asked to its answer
  being accepted (time a person took);
* ``scope_tool_answers_refused{tool, reason, via}``: answers refused (``via`` update or signal);
* ``scope_tool_notifications_failed{tool, event}``: webhook notices that failed every retry.

A call whose tool no worker has run is counted under ``tool="(unserved)"``
(:data:`scope_tool.wire.UNSERVED_TOOL`), never under the name it gave: a client chooses that name,
and each name would be a series of its own. Rounds run only where their tool is served.

**Tracing** uses ``temporalio.contrib.opentelemetry.TracingInterceptor`` (client, workflow and
activity spans, the context carried in Temporal headers, so a call started in one process and
run in another is one trace) plus one ``scope_tool.round`` span per round with the attributes
``scope_tool.tool``, ``scope_tool.call_id``, ``scope_tool.round`` and ``scope_tool.phase``.
OpenTelemetry is an optional dependency (``pip install 'scope-tool[otel]'``); the metrics need
nothing beyond temporalio.

Both are interceptors on the *client* (:func:`telemetry_interceptors`): a worker built from that
client inherits them, so ``build_worker`` needs no option of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from temporalio import activity, workflow
from temporalio.client import Interceptor as ClientInterceptor
from temporalio.exceptions import ApplicationError
from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig
from temporalio.worker import (
    ActivityInboundInterceptor,
    ExecuteActivityInput,
    ExecuteWorkflowInput,
    HandleSignalInput,
    HandleUpdateInput,
    Interceptor,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
)

from scope_tool.config.tracing import (
    TRACING_VARIABLE,
    client_tracing_interceptors,
    otel_missing,
    tracing_from_environment,
)
from scope_tool.wire import ANSWER, NOT_SERVED_HERE, ROUND_ACTIVITIES, RoundFailed, RoundResult
from scope_tool.wire._status import CallOutcome, CallStatus
from scope_tool.workers._core_logs import core_logging

__all__ = [
    "TRACING_VARIABLE",
    "ScopeToolMetrics",
    "connect_options",
    "install_otlp_tracing",
    "parse_metrics_address",
    "prometheus_runtime",
    "shutdown_telemetry",
    "telemetry_interceptors",
    "tracing_from_environment",
]

_ROUND_PHASES: Mapping[str, str] = {
    "completed": "COMPLETED",
    "input_requested": "AWAITING_INPUT",
    "invalid": "INVALID",
    "error": "ERRORED",
}


class ScopeToolMetrics(Interceptor, ClientInterceptor):
    """Records scope-tool's metrics (and, given a tracer, the per-round spans) in workers.

    It is a client interceptor too, only so that it can ride on a client into every worker
    built from it; it does nothing to client calls.

    Args:
        tracer: an OpenTelemetry tracer for the ``scope_tool.round`` spans, or None for none.
    """

    def __init__(self, *, tracer: Any = None) -> None:
        self._tracer = tracer

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        """Count rounds and trace each one."""
        return _RoundTelemetry(next, self._tracer)

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor]:
        """Count finished calls, answer waits, refusals and failed notifications."""
        return _CallMetrics


class _RoundTelemetry(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, tracer: Any) -> None:
        super().__init__(next)
        self._tracer = tracer

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        if activity.info().activity_type not in ROUND_ACTIVITIES or not input.args:
            return await super().execute_activity(input)
        round_input = input.args[0]
        tool = str(getattr(round_input, "tool", ""))
        if self._tracer is None:
            result = await super().execute_activity(input)
            _count_round(tool, result)
            return result
        attributes = {
            "scope_tool.tool": tool,
            "scope_tool.call_id": str(getattr(round_input, "call_id", "")),
            "scope_tool.round": int(getattr(round_input, "round", 0)),
        }
        with self._tracer.start_as_current_span("scope_tool.round", attributes=attributes) as span:
            try:
                result = await super().execute_activity(input)
            except ApplicationError as err:
                if err.type == NOT_SERVED_HERE:  # refused on the main queue: nothing ran
                    span.set_attribute("scope_tool.phase", NOT_SERVED_HERE)
                raise
            span.set_attribute("scope_tool.phase", _round_phase(result))
        _count_round(tool, result)
        return result


def _round_phase(result: RoundResult) -> str:
    if isinstance(result, RoundFailed):
        return "REJECTED" if result.failure_kind.value == "rejected" else "FAILED"
    return _ROUND_PHASES.get(result.kind, result.kind.upper())


def _count_round(tool: str, result: Any) -> None:
    phase = _round_phase(result) if hasattr(result, "kind") else "UNKNOWN"
    # A round runs on its tool's queue (``main@tool``...); it is counted under the main queue.
    main_queue = activity.info().task_queue.split("@", 1)[0]
    activity.metric_meter().with_additional_attributes({"task_queue": main_queue}).create_counter(
        "scope_tool_rounds", "rounds run, by tool and the phase the round led to"
    ).add(1, {"tool": tool, "phase": phase})


class _CallMetrics(WorkflowInboundInterceptor):
    """Reads the workflow's own ``status()`` before and after each answer; never changes it."""

    async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
        result = await super().execute_workflow(input)
        if isinstance(result, CallOutcome):
            status = _status()
            if status is not None:
                meter = workflow.metric_meter()
                meter.create_counter(
                    "scope_tool_calls", "calls finished, by tool and final phase"
                ).add(1, {"tool": _tool_label(status), "phase": result.phase.value})
                # scope_tool_notifications_failed is counted by each notice's own workflow
                # (scope_tool.workflows._notify_workflow): a call no longer waits for its notices.
        return result

    async def handle_signal(self, input: HandleSignalInput) -> None:
        if input.signal != ANSWER:
            return await super().handle_signal(input)
        before = _status()
        await super().handle_signal(input)
        _record_answer(before, _status(), via="signal")
        return None

    def handle_update_validator(self, input: HandleUpdateInput) -> None:
        try:
            super().handle_update_validator(input)
        except ApplicationError as error:
            status = _status()
            if input.update == ANSWER and error.type == "AnswerRejected" and status is not None:
                reason = str(error.details[0]) if error.details else "rejected"
                _refused(_tool_label(status), reason, "update")
            raise

    async def handle_update_handler(self, input: HandleUpdateInput) -> Any:
        if input.update != ANSWER:
            return await super().handle_update_handler(input)
        before = _status()
        result = await super().handle_update_handler(input)
        _record_answer(before, _status(), via="update")
        return result


def _tool_label(status: CallStatus) -> str:
    """The call's ``tool`` label: bounded to tools a worker ran (``UNSERVED_TOOL`` otherwise)."""
    label = getattr(workflow.instance(), "metric_tool", None)
    return label() if callable(label) else status.tool


def _status() -> CallStatus | None:
    status = getattr(workflow.instance(), "status", None)
    if status is None:
        return None
    value = status()
    return value if isinstance(value, CallStatus) else None


def _record_answer(before: CallStatus | None, after: CallStatus | None, *, via: str) -> None:
    if before is None or after is None:
        return
    if len(after.answers) > len(before.answers) and before.pending is not None:
        waited = after.answers[-1].answered_at - before.pending.asked_at
        workflow.metric_meter().create_histogram_float(
            "scope_tool_answer_wait_seconds",
            "time from a question being asked to its answer being accepted",
            "s",
        ).record(max(waited.total_seconds(), 0.0), {"tool": _tool_label(after)})
    elif len(after.refused) > len(before.refused):
        _refused(_tool_label(after), after.refused[-1].reason, via)


def _refused(tool: str, reason: str, via: str) -> None:
    workflow.metric_meter().create_counter(
        "scope_tool_answers_refused", "answers refused, by reason and how they came"
    ).add(1, {"tool": tool, "reason": reason, "via": via})


def telemetry_interceptors(*, tracing: bool, metrics: bool = True) -> list[ClientInterceptor]:
    """The interceptors to pass to ``Client.connect`` (workers built from it inherit them).

    Args:
        tracing: add Temporal's ``TracingInterceptor`` and the ``scope_tool.round`` spans.
        metrics: record scope-tool's metrics (they go wherever the client's runtime sends its
            metrics; with no metrics configured they cost next to nothing and go nowhere).

    Raises:
        TelemetryConfigError: tracing is asked for and OpenTelemetry is not installed.
    """
    interceptors = client_tracing_interceptors(tracing=tracing)
    tracer = None
    if interceptors:
        from opentelemetry import trace

        tracer = trace.get_tracer("scope_tool")
    if metrics or tracer is not None:
        interceptors.append(ScopeToolMetrics(tracer=tracer))
    return interceptors


def install_otlp_tracing() -> Callable[[], None]:
    """Make this process export its spans over OTLP/HTTP; returns the flush-and-stop function.

    For processes that have no OpenTelemetry setup of their own (``python -m scope_tool.workers``). The
    exporter reads the standard ``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_HEADERS``
    and ``OTEL_SERVICE_NAME`` (default ``scope-tool-worker``).

    Raises:
        TelemetryConfigError: OpenTelemetry or its OTLP exporter is not installed.
    """
    try:
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import OTELResourceDetector, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as error:
        raise otel_missing(error) from None
    resource = Resource.create({"service.name": "scope-tool-worker"}).merge(
        OTELResourceDetector().detect()
    )
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    return provider.shutdown


def parse_metrics_address(text: str) -> str:
    """Check ``HOST:PORT`` for ``--metrics`` and return it.

    Raises:
        ValueError: not ``HOST:PORT`` with a port in 1-65535.
    """
    host, separator, port = text.rpartition(":")
    if not separator or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--metrics must be HOST:PORT (e.g. 0.0.0.0:9464), got {text!r}")
    return text


ANSWER_WAIT_BUCKETS: tuple[float, ...] = (
    1,
    10,
    60,
    300,
    900,
    3600,
    4 * 3600,
    8 * 3600,
    86400,
    3 * 86400,
    604800,
    30 * 86400,
)
"""Upper bounds (seconds) of ``scope_tool_answer_wait_seconds``: a person answers in seconds to
days, so the buckets reach a month instead of stopping at Temporal's default of 10 s."""


def prometheus_runtime(address: str | None) -> Runtime:
    """A worker's Temporal runtime: serving Prometheus metrics at ``http://ADDRESS/metrics``
    (none with ``address`` ``None``), the core's log lines plain and a few seconds apart
    (:func:`~scope_tool.workers._core_logs.core_logging`).

    Pass it as ``runtime=`` to ``Client.connect``; the worker's Temporal metrics and scope-tool's
    (see the module docstring) are both served there, durations in seconds.
    """
    metrics = (
        None
        if address is None
        else PrometheusConfig(
            bind_address=parse_metrics_address(address),
            durations_as_seconds=True,
            histogram_bucket_overrides={"scope_tool_answer_wait_seconds": ANSWER_WAIT_BUCKETS},
        )
    )
    return Runtime(telemetry=TelemetryConfig(logging=core_logging(), metrics=metrics))


def connect_options(*, metrics: str | None) -> dict[str, Any]:
    """``Client.connect`` keywords for a worker process: interceptors and its runtime (core log
    lines plain and a few seconds apart; with ``metrics``, Prometheus metrics); with
    ``SCOPE_TOOL_TRACING`` on, this process also exports over OTLP.

    Raises:
        ValueError: ``metrics`` is not ``HOST:PORT``.
        TelemetryConfigError: tracing is on and OpenTelemetry is not installed.
    """
    tracing = tracing_from_environment()
    options: dict[str, Any] = {
        "interceptors": telemetry_interceptors(tracing=tracing, metrics=metrics is not None)
    }
    options["runtime"] = prometheus_runtime(metrics)
    if tracing:
        _SHUTDOWN.append(install_otlp_tracing())
    return options


_SHUTDOWN: list[Callable[[], None]] = []


def shutdown_telemetry() -> None:
    """Flush and stop what :func:`connect_options` set up (the worker leaves via ``os._exit``)."""
    while _SHUTDOWN:
        _SHUTDOWN.pop()()
