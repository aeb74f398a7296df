"""What a running tool may know of the round it runs in, and what it may report back.

The runtime that drives a round (a worker's activity) enters :func:`in_round` around the tool,
so a tool that talks to another system can name the call it acts for and leave a note the
runtime keeps with the round: an idempotency key before a side effect starts, progress while it
runs. Outside a runtime (a unit test, an agent calling a tool directly) there is no round and
:func:`current_round` is ``None``. No Temporal here: the worker turns reports into heartbeats.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Protocol

__all__ = ["Pin", "RoundContext", "RoundReport", "current_round", "in_round"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundReport:
    """A note about the round in flight; each report replaces the previous one whole.

    Attributes:
        idempotency_key: the key the tool passed to the system it calls, so an operator can
            ask that system whether the effect happened when the round's outcome is unknown.
        progress: how far the work is, in the tool's own units (``total`` when known).
        total: the end of ``progress``, if known.
        message: a short human note about the progress.
    """

    idempotency_key: str | None = None
    progress: float | None = None
    total: float | None = None
    message: str | None = None


class Pin(Protocol):
    """``RoundContext.pin_next_round``: pin the next round to this process."""

    def __call__(self, release: Callable[[str], None] | None = None) -> None: ...


def _no_pin(release: Callable[[str], None] | None = None) -> None:
    """Outside a runtime that pins: nothing to do."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundContext:
    """The round a tool runs in.

    Attributes:
        call_id: the durable call's id (stable across rounds, retries and restarts).
        round: the round's number, 1 first.
        report: keeps a :class:`RoundReport` with the round; safe from any thread, never
            blocks, never raises.
        pin_next_round: asks that the round re-entering the question this round asks run in
            this very worker process, because the tool keeps in memory what the answer resumes
            (an open session with another system). The runtime then sends the answer's round to
            a queue only this process polls; if the process is gone by then, the call ends
            "outcome unknown" (with the round's reported idempotency key), never re-run
            elsewhere. Call it before returning the question; it has no effect otherwise.
            ``release``, if given, is called in this process (from the runtime's loop; it must
            not block) when the call ends without the answer re-entering, with how it ended
            (``"withdrawn"``, ``"expired"``, ``"cancelled"``), so the tool lets go of what it
            held (the gateway cancels the upstream's question).
    """

    call_id: str
    round: int
    report: Callable[[RoundReport], None]
    pin_next_round: Pin = field(default_factory=lambda: _no_pin)


_CURRENT: ContextVar[RoundContext | None] = ContextVar("scope_tool_round", default=None)


def current_round() -> RoundContext | None:
    """The round the calling tool runs in, or ``None`` outside a runtime."""
    return _CURRENT.get()


@contextlib.contextmanager
def in_round(context: RoundContext) -> Iterator[None]:
    """Run the block (and every context copied from it) inside ``context``."""
    token = _CURRENT.set(context)
    try:
        yield
    finally:
        _CURRENT.reset(token)
