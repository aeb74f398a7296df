"""Outcomes of a call that did not complete: :class:`Failure` and :class:`CallError`.

The two differ in what they claim. A :class:`Failure` *is* the outcome of the current
invocation: its output is meant for the model, and its cause is a private diagnostic that
cannot change the outcome (so it is never chained). A :class:`CallError` claims nothing: it is a
transparent wrapper (its cause is the ``__cause__``) that carries evidence observed before an
ordinary error, for diagnostics only. :func:`classify_failure` finds the one definite outcome
behind an exception, following only explicit wrapping.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from scope_tool._output import Output
from scope_tool._read_only import ReadOnly
from scope_tool.errors import InvalidCallErrorError, InvalidFailureError, ToolError, _go_quote

__all__ = ["CallError", "Failure", "FailureKind", "classify_failure"]

_NO_OUTPUT = Output()


class FailureKind(StrEnum):
    """What an unsuccessful invocation was, independently of its diagnostic cause.

    Neither kind assigns retry or runtime control policy.
    """

    FAILED = "failed"
    """A definite unsuccessful outcome; it may describe acknowledged partial effects."""

    REJECTED = "rejected"
    """The invocation was refused permission to execute."""


class Failure(ToolError):
    """One complete unsuccessful outcome of the current invocation.

    ``output`` is public to the model. ``cause`` is diagnostic only: it is kept in
    :attr:`cause`, never set as ``__cause__`` and not shown in tracebacks, so it cannot leak an
    internal error or be mistaken for the outcome. Wrapping a failure (``raise X from
    failure``, :class:`CallError`) keeps it findable by :func:`classify_failure`.

    Args:
        kind: ``FailureKind.FAILED`` (needs a cause) or ``FailureKind.REJECTED`` (a policy
            decision may have none). The plain strings ``"failed"`` / ``"rejected"`` work too.
        output: The model-visible output of the failed call.
        cause: The internal diagnostic.

    Raises:
        InvalidFailureError: Unknown kind, ``failed`` without a cause, or a cause or output
            of the wrong type; the message says which.
    """

    kind: ReadOnly[FailureKind] = ReadOnly("Whether the call failed or was refused.")
    output: ReadOnly[Output] = ReadOnly("The model-visible output of the unsuccessful call.")
    cause: ReadOnly[BaseException | None] = ReadOnly(
        "The internal diagnostic; inspect it explicitly, it is not part of the chain."
    )

    def __init__(
        self,
        *,
        kind: FailureKind | str,
        output: Output = _NO_OUTPUT,
        cause: BaseException | None = None,
    ) -> None:
        checked_kind = _check_kind(kind)
        if cause is not None and not isinstance(cause, BaseException):
            raise InvalidFailureError(
                f"cause must be an exception or None, got {type(cause).__qualname__}"
            )
        if checked_kind is FailureKind.FAILED and cause is None:
            raise InvalidFailureError("failed outcome requires a cause")
        if not isinstance(output, Output):
            raise InvalidFailureError(f"output: must be an Output, got {type(output).__qualname__}")
        self._kind = checked_kind
        self._output = output
        self._cause = cause
        super().__init__(str(cause) if cause is not None else f"tool: {checked_kind.value}")
        # Opaque: even a bare ``raise Failure(...)`` inside ``except`` must not show the cause.
        self.__suppress_context__ = True

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_failure, (self._kind, self._output, self._cause))

    def __repr__(self) -> str:
        return f"Failure(kind={self._kind.value!r}, output={self._output!r})"


def _rebuild_failure(kind: FailureKind, output: Output, cause: BaseException | None) -> Failure:
    return Failure(kind=kind, output=output, cause=cause)


def _check_kind(kind: object) -> FailureKind:
    if isinstance(kind, str):
        try:
            return FailureKind(kind)
        except ValueError:
            pass
        raise InvalidFailureError(f"kind {_go_quote(str.__str__(kind))}")
    raise InvalidFailureError(f"kind {kind!r}")


class CallError(ToolError):
    """An ordinary error carrying evidence observed before it happened.

    Transparent: ``cause`` is the ``__cause__`` and ``str()`` is the cause's text, so callers
    keep seeing the original error. It assigns no outcome: it is not a :class:`Failure`, its
    evidence must not be sent to a model, and it implies nothing about retry safety.

    Args:
        cause: The original error (required).
        evidence: What was observed, for diagnostics and evaluation.

    Raises:
        InvalidCallErrorError: No cause, or a cause or evidence of the wrong type.
    """

    cause: ReadOnly[BaseException] = ReadOnly("The wrapped error (also ``__cause__``).")
    evidence: ReadOnly[Output] = ReadOnly(
        "Observed evidence; diagnostic only, never a model-visible result."
    )

    def __init__(self, *, cause: BaseException, evidence: Output = _NO_OUTPUT) -> None:
        if cause is None:
            raise InvalidCallErrorError("cause is required")
        if not isinstance(cause, BaseException):
            raise InvalidCallErrorError(
                f"cause must be an exception, got {type(cause).__qualname__}"
            )
        if not isinstance(evidence, Output):
            raise InvalidCallErrorError(
                f"evidence: must be an Output, got {type(evidence).__qualname__}"
            )
        self._cause = cause
        self._evidence = evidence
        super().__init__(str(cause))
        self.__cause__ = cause

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_call_error, (self.cause, self._evidence))


def _rebuild_call_error(cause: BaseException, evidence: Output) -> CallError:
    return CallError(cause=cause, evidence=evidence)


def classify_failure(exc: BaseException | None) -> Failure | None:
    """Find the one definite outcome behind an exception.

    Follows explicit wrapping only (``__cause__``, which includes :class:`CallError`), never
    the implicit ``__context__``, and returns the outermost :class:`Failure`. An exception
    group joins independent errors, so it establishes no outcome of its own: its enclosing
    owner must (``None``). A failure hidden in another failure's private ``cause`` is behind
    that outcome's boundary and is not found.

    Returns:
        The failure, or ``None`` when there is no definite outcome.
    """
    seen: set[int] = set()
    current = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, Failure):
            return current
        if isinstance(current, BaseExceptionGroup):
            return None
        seen.add(id(current))
        current = current.__cause__
    return None
