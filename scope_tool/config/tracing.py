"""Client-side tracing switch: ``SCOPE_TOOL_TRACING=1`` adds Temporal's OpenTelemetry interceptor.

With it on, ``ToolCalls.connect`` (and so every ``scope-tool`` command and the inbox) opens a span
for each start, answer and query and carries its context in Temporal headers, so the worker's
spans join the caller's trace. Exporting the spans is the application's own OpenTelemetry setup
(``python -m scope_tool.workers`` sets up OTLP itself, see ``scope_tool.workers.telemetry``). OpenTelemetry is the
optional ``[otel]`` extra; asking for tracing without it is a clear error.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Final

from temporalio.client import Interceptor

from scope_tool.wire.errors import TelemetryConfigError

__all__ = [
    "TRACING_VARIABLE",
    "client_tracing_interceptors",
    "otel_missing",
    "tracing_from_environment",
]

TRACING_VARIABLE: Final = "SCOPE_TOOL_TRACING"


def tracing_from_environment(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``SCOPE_TOOL_TRACING`` asks for tracing (``1``, ``true``, ``yes``, ``on``)."""
    value = (os.environ if environ is None else environ).get(TRACING_VARIABLE, "")
    return value.strip().lower() in ("1", "true", "yes", "on")


def client_tracing_interceptors(*, tracing: bool | None = None) -> list[Interceptor]:
    """``[TracingInterceptor()]`` when tracing is on (default: from the environment), else ``[]``.

    Raises:
        TelemetryConfigError: tracing is on and OpenTelemetry is not installed.
    """
    if not (tracing_from_environment() if tracing is None else tracing):
        return []
    try:
        from temporalio.contrib.opentelemetry import TracingInterceptor
    except ImportError as error:
        raise otel_missing(error) from None
    return [TracingInterceptor()]


def otel_missing(error: ImportError) -> TelemetryConfigError:
    """The error for tracing asked for without the ``[otel]`` extra, with how to install it."""
    return TelemetryConfigError(
        f"{TRACING_VARIABLE} is on but OpenTelemetry is not installed:"
        f" pip install 'scope-tool[otel]' ({error})"
    )
