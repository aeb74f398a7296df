"""Which ``Host`` a loopback service answers to: the one DNS-rebinding rule of every server here.

A page on ``evil.example`` can re-point its own name at ``127.0.0.1`` and then talk to a
loopback service *as its own origin*; the browser's same-origin rule does not stop it. The
``Host`` header gives it away, since it still names ``evil.example``. So a service answers only
to the loopback names, the address it is bound to, and names its operator configures; any IP
address literal is fine when it is bound to every address (an address cannot be re-pointed by
DNS). The port is not compared; the name is what an attacker controls. The inbox
(:mod:`scope_tool.inbox.hosts`) and the codec server both use this rule.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Set
from urllib.parse import urlsplit

__all__ = [
    "LOOPBACK_NAMES",
    "WILDCARD_BINDS",
    "answers_to",
    "bound_names",
    "host_name",
    "is_address",
    "normal",
]

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
"""Names every local service answers to: this machine's own."""

WILDCARD_BINDS = frozenset({"", "0.0.0.0", "::"})
"""Bind addresses that mean every address."""


def host_name(authority: str) -> str | None:
    """The host name of a ``Host`` header or URL authority, lowercased, without port or brackets.

    Returns:
        ``None`` when the text is not a usable authority (empty, a path, a bad port).
    """
    text = authority.strip()
    if not text or any(char in text for char in "/?#@ \\"):
        return None
    try:
        parts = urlsplit("//" + text)
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError:
        return None
    name = (parts.hostname or "").rstrip(".")
    return normal(name) if name else None


def normal(name: str) -> str:
    """One spelling per address (``0:0::1`` is ``::1``); names as they are."""
    try:
        return str(ipaddress.ip_address(name))
    except ValueError:
        return name


def is_address(name: str) -> bool:
    """Whether ``name`` is an IP address literal (no brackets)."""
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def answers_to(host_header: str, *, names: Set[str], any_address: bool) -> bool:
    """Whether a request whose ``Host`` says ``host_header`` is for a service with these names."""
    name = host_name(host_header)
    if name is None:
        return False
    return name in names or (any_address and is_address(name))


def bound_names(bind: str) -> tuple[frozenset[str], bool]:
    """The loopback names plus ``bind`` (or, for a wildcard bind, any address literal)."""
    bound = bind.strip().strip("[]").lower()
    if bound in WILDCARD_BINDS:
        return LOOPBACK_NAMES, True
    return LOOPBACK_NAMES | {normal(bound.rstrip("."))}, False
