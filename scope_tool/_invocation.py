"""The admitted side of the trust boundary: an :class:`Invocation`.

An untrusted :class:`~scope_tool.Request` becomes an :class:`Invocation` only by passing
:meth:`Contract.prepare <scope_tool.Contract.prepare>`. Making the type impossible to build
anywhere else is what lets a :class:`~scope_tool.Tool` trust its arguments without validating
them again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NoReturn

from scope_tool._read_only import ReadOnly
from scope_tool._sealed import Sealed

if TYPE_CHECKING:
    from scope_tool._input_request import Continuation

__all__ = ["Invocation", "admit_invocation"]


class Invocation(Sealed):
    """A complete JSON object admitted by one exact frozen contract.

    Only :meth:`Contract.prepare <scope_tool.Contract.prepare>` can create one; calling the
    class raises :class:`TypeError`. Instances are immutable. Each remembers the contract that
    admitted it, so a :class:`~scope_tool.Binding` refuses invocations prepared by any other
    contract (even one bound from an identical tool).
    """

    __slots__ = ("_arguments", "_continuation", "_owner")

    _arguments: bytes
    _continuation: Continuation | None
    _owner: object

    _made_by = "Contract.prepare(request) to admit a Request"

    arguments: ReadOnly[bytes] = ReadOnly(
        'The admitted JSON object, byte-exact (``b"{}"`` when the request was blank).'
    )
    continuation: ReadOnly[Continuation | None] = ReadOnly(
        "The answer supplied explicitly for this call, or ``None`` for a new call."
    )

    def __reduce__(self) -> NoReturn:
        # A copy made outside prepare would be an invocation nobody admitted.
        raise TypeError("Invocation cannot be copied or pickled; prepare the Request again")

    def __repr__(self) -> str:
        resumed = "" if self._continuation is None else ", continuation=..."
        return f"Invocation(arguments={self._arguments!r}{resumed})"


# The slots' own setters: they bypass the immutability guard without a per-call attribute lookup
# (prepare mints one invocation per admitted request).
_set_owner = Invocation.__dict__["_owner"].__set__
_set_arguments = Invocation.__dict__["_arguments"].__set__
_set_continuation = Invocation.__dict__["_continuation"].__set__
_new_object = object.__new__


def admit_invocation(
    owner: object, arguments: bytes, continuation: Continuation | None
) -> Invocation:
    """Mint an invocation. Package-internal: only ``Contract.prepare`` calls this."""
    invocation: Invocation = _new_object(Invocation)
    _set_owner(invocation, owner)
    _set_arguments(invocation, arguments)
    _set_continuation(invocation, continuation)
    return invocation
