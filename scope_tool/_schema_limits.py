"""Fixed limits on schema checking: nesting depth and work, both independent of the call stack.

Answers are checked in Temporal workflow code, by the update validator, the update handler and
the signal handler, each at a different Python stack depth. A verdict that depended on the
stack (python-jsonschema recursing into ``RecursionError``) could differ between them, so
every limit here is counted, never inferred from the stack:

* :data:`MAX_NESTING`: a schema document or a value nested deeper is refused up front,
  before any engine runs (a byte-level bracket count).
* :data:`MAX_EVALUATION_DEPTH`: the number of nested keyword applications one validation may
  reach (``items`` -> ``$ref`` -> ``anyOf`` -> ... each count one). Only a recursive schema can
  get there with a value within :data:`MAX_NESTING`; going deeper is a refusal.
* A *work budget* (:class:`Meter` ``max_steps``): the number of keyword applications a bounded
  check may spend, reported as "over budget", never as a refusal (``CompiledSchema.check``).

The engines recurse on the Python stack, at most :data:`FRAMES_PER_LEVEL` frames per counted
level. When the caller's stack has too little room left for the deepest allowed evaluation,
the check runs on a fresh thread, whose stack starts empty, so the counted limits, not the
caller's depth, decide the verdict.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Final, TypeVar

__all__ = [
    "FRAMES_PER_LEVEL",
    "MAX_EVALUATION_DEPTH",
    "MAX_NESTING",
    "Meter",
    "OverBudget",
    "TooDeep",
    "current_meter",
    "metered",
    "on_enough_stack",
]

MAX_NESTING: Final = 64
"""Deepest nesting (arrays/objects) of a schema document or of a value that is checked."""

MAX_EVALUATION_DEPTH: Final = 192
"""Most nested keyword applications one validation may reach before it is refused."""

FRAMES_PER_LEVEL: Final = 4
"""Python frames an engine spends per counted level, at most (python-jsonschema: the keyword
wrapper, the keyword function and ``descend``; one more through ``$ref``)."""

_HEADROOM: Final = FRAMES_PER_LEVEL * MAX_EVALUATION_DEPTH + 120

T = TypeVar("T")


class TooDeep(Exception):
    """Raised inside an engine when evaluation passes MAX_EVALUATION_DEPTH."""


class OverBudget(Exception):
    """Raised inside an engine when a bounded check spends more than its step budget."""


class Meter:
    """Counts one validation's nesting and steps; raises TooDeep / OverBudget past the limits.

    Not shared between threads: each validation makes its own.
    """

    __slots__ = ("depth", "failed_at", "max_steps", "steps")

    def __init__(
        self, *, max_steps: int | None = None, failed_at: dict[tuple[int, int], int] | None = None
    ) -> None:
        self.depth = 0
        self.steps = 0
        self.max_steps = max_steps
        # The fast engine notes where a long array failed, so explaining it is cheap.
        self.failed_at: dict[tuple[int, int], int] = {} if failed_at is None else failed_at

    def enter(self) -> None:
        """One keyword application starts, one level deeper."""
        self.depth += 1
        self.steps += 1
        if self.depth > MAX_EVALUATION_DEPTH:
            raise TooDeep
        if self.max_steps is not None and self.steps > self.max_steps:
            raise OverBudget

    def leave(self) -> None:
        self.depth -= 1


_ACTIVE = threading.local()


def current_meter() -> Meter | None:
    """The meter of the validation running on this thread (python-jsonschema's keyword hook)."""
    meter: Meter | None = getattr(_ACTIVE, "meter", None)
    return meter


def metered(meter: Meter, work: Callable[[], T], *, fresh_stack: bool = False) -> T:
    """Run ``work`` with ``meter`` active, with enough stack for the limits.

    ``fresh_stack`` always runs it on a new thread: for a value nested deeper than
    :data:`MAX_NESTING`, whose checking may recurse with the value (equality, messages), the
    verdict then never depends on how deep the caller's stack already was.
    """

    def run() -> T:
        previous = current_meter()
        _ACTIVE.meter = meter
        try:
            return work()
        finally:
            _ACTIVE.meter = previous

    return _on_new_thread(run) if fresh_stack else on_enough_stack(run)


def on_enough_stack(work: Callable[[], T]) -> T:
    """``work()`` here when the stack has room for the deepest allowed evaluation, else on a
    fresh thread (whose Python stack starts empty); its result or exception comes back."""
    try:
        sys._getframe(max(sys.getrecursionlimit() - _HEADROOM, 0))
    except ValueError:
        return work()  # fewer frames on the stack than that: room enough here
    return _on_new_thread(work)


def _on_new_thread(work: Callable[[], T]) -> T:
    outcome: list[T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            outcome.append(work())
        except BaseException as exc:  # handed back to the caller's thread below
            failure.append(exc)

    thread = threading.Thread(target=run, name="scope-tool-schema-check", daemon=True)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return outcome[0]
