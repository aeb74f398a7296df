"""The untrusted side of the trust boundary: a :class:`Request`."""

from __future__ import annotations

from dataclasses import dataclass

from scope_tool.errors import InvalidRequestError

__all__ = ["Request"]


@dataclass(frozen=True, slots=True)
class Request:
    """An untrusted proposal to call the tool ``name`` with JSON ``arguments``.

    Nothing here is trusted: a model (or a user) produced it. Only
    ``Contract.prepare`` turns it into an executable ``Invocation``. There is no ID field:
    a provider's correlation ID belongs to its transport, not to the protocol.

    Attributes:
        name: The tool the proposal names (compared byte-wise with the contract's name).
        arguments: The JSON text of the arguments, kept exactly as proposed. Blank text
            (Go's Unicode white space) stands for ``{}``.
    """

    name: str
    arguments: str | bytes = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise TypeError(f"Request.name must be a str, not {type(self.name).__name__}")
        if not isinstance(self.arguments, str | bytes):
            raise TypeError(
                f"Request.arguments must be JSON text (str or bytes), "
                f"not {type(self.arguments).__name__}"
            )

    def validate(self) -> None:
        """Check the request's own shape (its name is not empty).

        Raises:
            InvalidRequestError: ``tool: invalid request: name must not be empty``.
        """
        if not self.name:
            raise InvalidRequestError("name must not be empty")
