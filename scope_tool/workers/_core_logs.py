"""The Temporal core's log lines in a worker's terminal: plain, and one every few seconds.

temporalio's Rust core writes its own log to stderr, coloured, one line per retried poll: while
the server restarts, a worker's terminal fills with ``WARN temporalio_client::retry ...
ConnectionRefused`` lines, several a second. The worker process runs on a runtime that forwards
those lines to the Python logger :data:`CORE_LOGGER_NAME` instead, whose :class:`OneLineEvery`
handler writes one plain line and then holds the rest back for :data:`REPEAT_EVERY` seconds,
counting them. ``SCOPE_TOOL_DEBUG=1`` writes every line (still plain). The CLI keeps the same
lines off its terminal altogether (``scope_tool.cli._runtime``): a command prints its own result;
a worker's log is what an operator reads.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import time
from typing import Final, TextIO

from temporalio.runtime import LogForwardingConfig, LoggingConfig, TelemetryFilter

__all__ = ["CORE_LOGGER_NAME", "REPEAT_EVERY", "OneLineEvery", "core_logging"]

CORE_LOGGER_NAME: Final = "scope_tool.workers.temporal_core"

REPEAT_EVERY: Final = 5.0
"""Seconds between two core log lines of the same level in the worker's terminal."""

_WIDTH: Final = 300
_ESCAPES: Final = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_REFUSED: Final = re.compile(r"ConnectionRefused|Connection refused|tcp connect error", re.I)


class OneLineEvery(logging.Handler):
    """Writes a log record as one plain line, then at most one per ``every`` seconds per level.

    The lines held back are counted and the count ends the next line written. A lost
    connection to the server (the usual flood) is said in words rather than as the gRPC status.
    """

    def __init__(self, stream: TextIO | None = None, *, every: float = REPEAT_EVERY) -> None:
        super().__init__()
        self._stream = stream
        self.every = every
        self._written_at: dict[int, float] = {}
        self._held: dict[int, int] = {}

    def emit(self, record: logging.LogRecord) -> None:
        try:
            now = time.monotonic()
            written = self._written_at.get(record.levelno)
            if written is not None and now - written < self.every:
                self._held[record.levelno] = self._held.get(record.levelno, 0) + 1
                return
            held = self._held.pop(record.levelno, 0)
            self._written_at[record.levelno] = now
            line = f"scope-tool: temporal: {_plain(record)}"
            if held:
                line += f" ({held} similar line{'s' if held != 1 else ''} held back)"
            stream = self._stream if self._stream is not None else sys.stderr
            stream.write(line + "\n")
            stream.flush()
        except Exception:
            self.handleError(record)


def _plain(record: logging.LogRecord) -> str:
    message = _ESCAPES.sub("", record.getMessage())
    if _REFUSED.search(message):
        return "cannot reach the Temporal server (connection refused); retrying"
    text = " ".join(message.split())
    if len(text) > _WIDTH:
        text = text[: _WIDTH - 1] + "…"
    return f"{record.levelname}: {text}"


def core_logging() -> LoggingConfig:
    """The runtime's logging: core WARN (other crates ERROR) forwarded to :data:`CORE_LOGGER_NAME`,
    which writes through :class:`OneLineEvery` (every line with ``SCOPE_TOOL_DEBUG`` set)."""
    logger = logging.getLogger(CORE_LOGGER_NAME)
    logger.propagate = False
    logger.setLevel(logging.WARNING)
    if not logger.handlers:
        logger.addHandler(
            OneLineEvery(every=0.0 if os.environ.get("SCOPE_TOOL_DEBUG") else REPEAT_EVERY)
        )
    return LoggingConfig(
        filter=TelemetryFilter(core_level="WARN", other_level="ERROR"),
        forwarding=LogForwardingConfig(
            logger=logger, append_target_to_name=False, prepend_target_on_message=False
        ),
    )
