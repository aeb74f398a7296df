"""Who a call acts for: :class:`Principal`, and :func:`acting_for` to run code on its behalf.

An agent acts for someone (a user in a tenant, with roles). The protocol leaves identity to the
caller and maps caller-owned context values to :mod:`contextvars`, so a principal travels with
the asyncio task that makes the call, never as a tool argument the model could forge: code that
runs a call wraps it in ``with acting_for(principal):`` and every :class:`~scope_tool.Guard` on
the way reads :func:`current_principal` into the :class:`~scope_tool.Authorization` it shows its
policy. ``contextvars`` follow ``asyncio`` tasks, so concurrent calls acting for different people
never see each other's principal.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Final

from scope_tool._text import checked_text
from scope_tool.errors import InvalidPrincipalError

__all__ = ["Principal", "acting_for", "current_principal"]

_MAX_TEXT: Final = 256
_MAX_ROLES: Final = 64

_CURRENT: ContextVar[Principal | None] = ContextVar("scope_tool_principal", default=None)


def _checked_text(value: object, what: str) -> str:
    return checked_text(
        value,
        what,
        error=InvalidPrincipalError,
        blank_is_empty=True,
        max_chars=_MAX_TEXT,
        one_line=True,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Principal:
    """The person (or service) an agent acts for when it calls a tool.

    Values are opaque to the protocol: it checks their shape only, and a policy decides what
    they mean. Roles are kept sorted and unique, so two principals with the same roles compare
    equal whatever order the roles were given in.

    Attributes:
        user: Who, e.g. ``"alice@example.com"``; non-blank, at most 256 characters.
        tenant: The organisation or workspace the user acts in, or ``None``.
        roles: Role names (each non-blank); any iterable of str is accepted.

    Raises:
        InvalidPrincipalError: a field is malformed (the message names it).
    """

    user: str
    tenant: str | None = None
    roles: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _checked_text(self.user, "principal user")
        if self.tenant is not None:
            _checked_text(self.tenant, "principal tenant")
        roles: Iterable[object] = self.roles
        if isinstance(roles, str | bytes) or not isinstance(roles, Iterable):
            raise InvalidPrincipalError(
                f"principal roles must be a collection of str, not {type(roles).__name__}"
            )
        checked = sorted({_checked_text(role, "principal role") for role in roles})
        if len(checked) > _MAX_ROLES:
            raise InvalidPrincipalError(f"a principal has at most {_MAX_ROLES} roles")
        object.__setattr__(self, "roles", tuple(checked))

    def has_role(self, role: str) -> bool:
        """Whether ``role`` is one of this principal's roles (exact match)."""
        return role in self.roles

    def to_json(self) -> bytes:
        """``{"user":…,"tenant":…,"roles":[…]}`` (tenant omitted when None): the wire form."""
        value: dict[str, Any] = {"user": self.user}
        if self.tenant is not None:
            value["tenant"] = self.tenant
        value["roles"] = list(self.roles)
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    @classmethod
    def from_json(cls, data: bytes | str) -> Principal:
        """Decode :meth:`to_json`'s form strictly (unknown members refused).

        Raises:
            InvalidPrincipalError: the text is not such an object, or a value is malformed.
        """
        try:
            value = json.loads(data)
        except ValueError as exc:
            raise InvalidPrincipalError(f"principal JSON: {exc}") from None
        if not isinstance(value, dict):
            raise InvalidPrincipalError("principal JSON must be an object")
        unknown = sorted(set(value) - {"user", "tenant", "roles"})
        if unknown:
            raise InvalidPrincipalError(f"principal JSON: unknown member {json.dumps(unknown[0])}")
        if "user" not in value:
            raise InvalidPrincipalError('principal JSON: missing member "user"')
        roles = value.get("roles", [])
        if not isinstance(roles, list):
            raise InvalidPrincipalError('principal JSON: "roles" must be an array')
        return cls(user=value["user"], tenant=value.get("tenant"), roles=tuple(roles))


def current_principal() -> Principal | None:
    """The principal the current task acts for, or ``None`` outside :func:`acting_for`."""
    return _CURRENT.get()


@contextlib.contextmanager
def acting_for(principal: Principal | None) -> Iterator[Principal | None]:
    """Run the ``with`` body (and the tasks it starts) acting for ``principal``.

    Nesting replaces the principal for the inner block and restores the outer one after it;
    ``None`` explicitly acts for nobody.

    Raises:
        InvalidPrincipalError: ``principal`` is neither a :class:`Principal` nor ``None``.
    """
    if principal is not None and not isinstance(principal, Principal):
        raise InvalidPrincipalError(
            f"acting_for needs a Principal or None, not {type(principal).__name__}"
        )
    token = _CURRENT.set(principal)
    try:
        yield principal
    finally:
        _CURRENT.reset(token)
