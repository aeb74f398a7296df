"""Which host names the inbox answers to, and whether a change came from the inbox's own pages.

DNS rebinding: a page on ``evil.example`` can re-point its own name at ``127.0.0.1`` and then
talk to a loopback inbox *as its own origin*, reading pages and posting forms; the browser's
same-origin rule does not stop it, because to the browser it is all ``evil.example``. What gives
it away is the ``Host`` header, which still names ``evil.example``. So the inbox answers only to
the names in an :class:`AllowedHosts` list: the loopback names, the address it is bound to, and
the public names its operator configures (``--allowed-host``). The port is not compared; the
name is what an attacker controls.

Cross-site posts: a change (any method but GET, HEAD, OPTIONS) whose ``Origin`` (or, when a
browser sends no ``Origin``, ``Referer``) is not the inbox's own origin is refused. Own means the
same host and port as the request's ``Host`` header; the scheme is not compared, because a
TLS-terminating proxy in front makes the inbox see ``http`` where the browser sees ``https``.
A request with neither header is not a browser's cross-site post (browsers send ``Origin`` on
every cross-origin POST), so scripts with a Bearer token keep working.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from scope_tool.inbox.auth import InboxConfigError
from scope_tool.serving._hosts import (
    LOOPBACK_NAMES,
    answers_to,
    bound_names,
    host_name,
    is_address,
    normal,
)

__all__ = [
    "ANY_HOST",
    "LOOPBACK_NAMES",
    "AllowedHosts",
    "cross_origin_source",
    "host_name",
]

ANY_HOST = "*"
"""The allowed-host entry that turns the host check off (for a proxy that checks it itself)."""

_DEFAULT_PORTS = frozenset({80, 443})
_normal = normal
_is_address = is_address


@dataclass(frozen=True, slots=True, kw_only=True)
class AllowedHosts:
    """The host names the inbox answers to; build it with :meth:`parse`.

    Attributes:
        names: Lowercased host names and addresses (IPv6 without brackets).
        any_address: Any IP address literal is accepted too: the inbox is bound to every
            address (``0.0.0.0`` or ``::``), and an address cannot be re-pointed by DNS.
        any_host: The check is off (``*`` was configured). Never allowed without authentication.
    """

    names: frozenset[str] = LOOPBACK_NAMES
    any_address: bool = False
    any_host: bool = False

    @classmethod
    def parse(cls, configured: Iterable[str] = (), *, bind: str | None = None) -> AllowedHosts:
        """The loopback names, the bound address and the configured names.

        Args:
            configured: Public names the inbox is reached by (``inbox.example.com``), as given
                to ``--allowed-host``; ``*`` turns the check off.
            bind: The address the inbox listens on; a specific one is added to the names, a
                wildcard (``0.0.0.0``, ``::``) accepts any address literal.

        Raises:
            InboxConfigError: An entry is not a host name (it has a scheme, a path or spaces).
        """
        names = set(LOOPBACK_NAMES)
        any_address = any_host = False
        if bind is not None:
            bound, any_address = bound_names(bind)
            names |= bound
        for entry in configured:
            text = entry.strip()
            if text == ANY_HOST:
                any_host = True
                continue
            bare = text.strip("[]")
            name = _normal(bare.lower()) if _is_address(bare) else host_name(text)
            if name is None:
                raise InboxConfigError(
                    f"allowed host {entry!r} is not a host name; give names such as "
                    "inbox.example.com or 192.168.1.20 (no scheme, path or spaces), or * for any"
                )
            names.add(name)
        return cls(names=frozenset(names), any_address=any_address, any_host=any_host)

    def allows(self, host_header: str) -> bool:
        """Whether a request whose ``Host`` header says ``host_header`` is for this inbox."""
        if self.any_host:
            return True
        return answers_to(host_header, names=self.names, any_address=self.any_address)

    def refusal(self, host_header: str) -> str:
        """What to tell a request for a host this inbox does not answer to."""
        listed = ", ".join(sorted(self.names))
        shown = host_header if host_header else "(no Host header)"
        return (
            f"this inbox does not answer to host {shown!r} (it answers to {listed}"
            f"{' and any IP address' if self.any_address else ''}); a page that reached it under "
            "another name is refused, since that is how DNS rebinding works. If this is the "
            "inbox's public name, start it with --allowed-host NAME "
            "(or SCOPE_TOOL_INBOX_ALLOWED_HOSTS=NAME,...)"
        )


def _authority(hostname: str, port: int | None) -> tuple[str, int | None]:
    return _normal(hostname.rstrip(".").lower()), None if port in _DEFAULT_PORTS else port


def cross_origin_source(origin: str | None, referer: str | None, host_header: str) -> str | None:
    """The ``Origin`` (or ``Referer``) of a change that did not come from the inbox's own page.

    Args:
        origin: The request's ``Origin`` header, if any.
        referer: The request's ``Referer`` header, consulted only without ``Origin``.
        host_header: The request's ``Host`` header (already checked against the allowed hosts).

    Returns:
        The offending header value, or ``None`` when the request is same-origin or carries
        neither header (not a browser's cross-site post).
    """
    source = origin if origin is not None else referer
    if source is None:
        return None
    try:
        parts = urlsplit(source.strip())
        port = parts.port
        own = urlsplit("//" + host_header.strip())
        own_port = own.port
    except ValueError:
        return source
    if parts.scheme not in ("http", "https") or not parts.hostname or not own.hostname:
        return source  # "null" (a sandboxed or file page), or something unreadable
    if _authority(parts.hostname, port) != _authority(own.hostname, own_port):
        return source
    return None
