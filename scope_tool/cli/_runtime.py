"""The Temporal runtime of a ``scope-tool`` process: the SDK core's own log lines kept off the terminal.

temporalio's Rust core writes its log lines (coloured ``WARN`` lines about retried polls, for
example while the server restarts under ``result --wait``) straight to the process's stderr. A
command-line user reads stderr for one thing: the command's own message. So CLI processes run on a
runtime whose core logs are forwarded to a Python logger that keeps only errors and writes nothing
unless ``SCOPE_TOOL_DEBUG=1`` asks for diagnostics. The worker process (``python -m scope_tool.workers``),
whose log an operator reads, writes them as one plain line every few seconds
(``scope_tool.workers._core_logs``).
"""

from __future__ import annotations

import logging
import os
import sys

from temporalio.runtime import (
    LogForwardingConfig,
    LoggingConfig,
    Runtime,
    TelemetryConfig,
    TelemetryFilter,
)

__all__ = ["CORE_LOGGER_NAME", "use_quiet_runtime"]

CORE_LOGGER_NAME = "scope_tool.cli.temporal_core"

_installed: list[Runtime] = []  # at most one: each Runtime starts its own thread pool


def use_quiet_runtime() -> None:
    """Make the default Temporal runtime forward core logs to Python instead of stderr.

    Must run before the process creates its first client (the default runtime is created lazily
    by the first ``Client.connect`` and cannot be replaced for clients already made). With
    ``SCOPE_TOOL_DEBUG`` set, the core's warnings go to stderr through the logger, as text.
    """
    if _installed:
        return
    logger = logging.getLogger(CORE_LOGGER_NAME)
    logger.propagate = False
    if not logger.handlers:
        if os.environ.get("SCOPE_TOOL_DEBUG"):
            handler: logging.Handler = logging.StreamHandler(sys.stderr)
            logger.setLevel(logging.WARNING)
        else:
            handler = logging.NullHandler()
            logger.setLevel(logging.CRITICAL)
        logger.addHandler(handler)
    telemetry = TelemetryConfig(
        logging=LoggingConfig(
            filter=TelemetryFilter(core_level="WARN", other_level="ERROR"),
            forwarding=LogForwardingConfig(logger=logger),
        )
    )
    _installed.append(Runtime(telemetry=telemetry))
    Runtime.set_default(_installed[0], error_if_already_set=False)
