"""The successful outcome of a tool call: a :class:`Result`."""

from __future__ import annotations

from dataclasses import dataclass, field

from scope_tool._input_request import InputRequest
from scope_tool._json_form import known_members
from scope_tool._output import Output
from scope_tool.errors import InvalidInputRequestError, InvalidOutputError, InvalidResultError

__all__ = ["Result"]

_ZERO_OUTPUT = Output()


@dataclass(frozen=True, slots=True)
class Result:
    """Either a completed :class:`Output` or a request for external input, never both.

    Suspension is a result, not an error: a resumable tool returns
    ``Result(input_request=...)`` and the driving runtime owns committing it and routing the
    answer back. ``Result()`` completes with the empty output.

    Attributes:
        output: The completed output (the zero output when requesting input).
        input_request: The request for input, or None when the call completed.

    Raises:
        InvalidResultError: both a non-empty output and an input request, or wrong types.
    """

    output: Output = field(default=_ZERO_OUTPUT)
    input_request: InputRequest | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.output, Output):
            raise InvalidResultError(f"output must be an Output, not {type(self.output).__name__}")
        if self.input_request is not None:
            if not isinstance(self.input_request, InputRequest):
                raise InvalidResultError(
                    "input_request must be an InputRequest or None, "
                    f"not {type(self.input_request).__name__}"
                )
            if self.output != _ZERO_OUTPUT:
                raise InvalidResultError("an input request carries no completed output")

    @property
    def completed(self) -> bool:
        """True when the call completed (no input request)."""
        return self.input_request is None

    def to_json(self) -> bytes:
        """``{"output":…}`` when completed, ``{"input_request":…}`` otherwise (exact bytes)."""
        if self.input_request is not None:
            return b'{"input_request":' + self.input_request.to_json() + b"}"
        return b'{"output":' + self.output.to_json() + b"}"

    @classmethod
    def from_json(cls, data: bytes | str) -> Result:
        """Decode strictly and atomically (inverse of :meth:`to_json`).

        Raises:
            InvalidResultError: not one I-JSON object, unknown or conflicting members, or an
                invalid output / input request (the cause is chained).
        """
        members = known_members(
            data, allowed=("output", "input_request"), what="result JSON", error=InvalidResultError
        )
        try:
            output = Output.from_json(members["output"]) if "output" in members else _ZERO_OUTPUT
            request = (
                InputRequest.from_json(members["input_request"])
                if "input_request" in members
                else None
            )
        except (InvalidOutputError, InvalidInputRequestError) as exc:
            raise InvalidResultError(f"result JSON: {exc}") from exc
        return cls(output=output, input_request=request)
