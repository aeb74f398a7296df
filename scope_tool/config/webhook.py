"""Webhook trust: signing notification bodies, verifying them, and allowed destinations.

Signing: with a shared secret (setting ``SCOPE_TOOL_NOTIFY_SECRET`` on the worker), every
notification carries two headers::

    Scope-Tool-Timestamp: 1767225600
    Scope-Tool-Signature: v1=<hex HMAC-SHA256(secret, b"<timestamp>." + body)>

A receiver recomputes the HMAC over the raw body it received, compares in constant time, and
refuses a timestamp too far from its clock (a replayed notice): :func:`verify` does exactly that
and is the recipe (docs/runtime.md shows it without scope-tool installed).

Destinations: ``SCOPE_TOOL_NOTIFY_ALLOWED`` is a comma-separated list of URL prefixes
(``https://hooks.example.com/scope/,http://127.0.0.1:8080/``). A ``notify_url`` must have the
same scheme, host and port as one of them and a path under its path. ``ToolCalls.start``
refuses any other URL before starting the call, and the worker refuses to POST to one (a
client with another setting cannot make it). Every facade reads the setting the same way, the
CLI's, ``ToolCalls.connect`` and ``ToolCalls(client)`` alike, unless given a list explicitly.

Paths are compared after resolving dot segments (``/hooks/../admin`` is ``/admin``, ``%2e``
counts as a dot), so a prefix cannot be climbed out of. Link-local and cloud metadata
destinations (``169.254.0.0/16``, ``fe80::/10``, ``fd00:ec2::254``, ``100.100.100.200``,
``metadata.google.internal``, and IPv4 ones written as IPv6 ``::ffff:...``) are refused even
without an allow-list: a notification from a worker inside a cloud must not reach its
instance credentials. An allow-list entry naming such a host explicitly allows it. IPv4 is
read in every spelling the resolver takes (``2852039166`` is ``169.254.169.254``). The worker
also checks the address it actually connected to (a name that resolves there is refused) and
never follows a redirect (a ``3xx`` is a failed notice), so neither can lead it elsewhere.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import posixpath
import re
import socket
import time
from collections.abc import Mapping, Sequence
from typing import Final
from urllib.parse import urlsplit

__all__ = [
    "ALLOWED_VARIABLE",
    "SIGNATURE_HEADER",
    "TIMESTAMP_HEADER",
    "check_destination",
    "is_metadata_address",
    "is_metadata_host",
    "parse_allowed",
    "sign",
    "verify",
]

SIGNATURE_HEADER: Final = "Scope-Tool-Signature"
TIMESTAMP_HEADER: Final = "Scope-Tool-Timestamp"
ALLOWED_VARIABLE: Final = "SCOPE_TOOL_NOTIFY_ALLOWED"
_VERSION: Final = "v1="
_METADATA_HOSTS: Final = frozenset({"metadata.google.internal", "metadata", "instance-data"})
_METADATA_ADDRESSES: Final = frozenset(
    ipaddress.ip_address(each) for each in ("100.100.100.200", "fd00:ec2::254")
)
_ENCODED_DOT = re.compile("%2e", re.IGNORECASE)
_LEGACY_IPV4 = re.compile(r"(?:0x[0-9a-f]+|[0-9]+)(?:\.(?:0x[0-9a-f]+|[0-9]+)){0,3}", re.IGNORECASE)


def sign(secret: str, body: bytes, *, timestamp: int | None = None) -> dict[str, str]:
    """The signature headers for ``body`` (``timestamp``: Unix seconds, now by default)."""
    if not secret:
        raise ValueError("the webhook secret must be a non-empty string")
    moment = int(time.time()) if timestamp is None else int(timestamp)
    digest = _digest(secret, body, str(moment))
    return {TIMESTAMP_HEADER: str(moment), SIGNATURE_HEADER: _VERSION + digest}


def verify(
    secret: str,
    body: bytes,
    headers: Mapping[str, str],
    *,
    tolerance_seconds: float = 300.0,
    now: float | None = None,
) -> bool:
    """Whether ``body`` with ``headers`` was signed with ``secret`` within ``tolerance_seconds``.

    ``headers`` is looked up case-insensitively. A missing header, a malformed signature, a
    timestamp outside the tolerance or any change to the body gives ``False``.
    """
    found = {name.lower(): value for name, value in headers.items()}
    stamp = found.get(TIMESTAMP_HEADER.lower(), "")
    signature = found.get(SIGNATURE_HEADER.lower(), "")
    if not secret or not stamp.isdigit() or not signature.startswith(_VERSION):
        return False
    current = time.time() if now is None else now
    if abs(current - int(stamp)) > tolerance_seconds:
        return False
    return hmac.compare_digest(signature[len(_VERSION) :], _digest(secret, body, stamp))


def _digest(secret: str, body: bytes, stamp: str) -> str:
    signed = stamp.encode("ascii") + b"." + body
    return hmac.new(secret.encode("utf-8"), signed, hashlib.sha256).hexdigest()


def parse_allowed(text: str | Sequence[str] | None) -> tuple[str, ...]:
    """The allow-list from its setting (comma-separated) or a sequence; empty means any URL.

    Raises:
        ValueError: an entry is not an ``http(s)://host[:port][/path]`` URL (named).
    """
    if text is None:
        return ()
    entries = text.split(",") if isinstance(text, str) else list(text)
    allowed: list[str] = []
    for entry in (each.strip() for each in entries):
        if not entry:
            continue
        parts = urlsplit(entry)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(
                f"notify allow-list entry {entry!r} must be an http:// or https:// URL prefix"
            )
        allowed.append(entry)
    return tuple(allowed)


def allowed_from_environment(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The allow-list ``SCOPE_TOOL_NOTIFY_ALLOWED`` sets (empty when unset).

    Raises:
        ValueError: an entry is malformed.
    """
    return parse_allowed((os.environ if environ is None else environ).get(ALLOWED_VARIABLE))


def check_destination(url: str, allowed: Sequence[str]) -> None:
    """Refuse ``url`` unless it falls under a prefix of ``allowed`` (any URL when it is empty).

    Link-local and metadata destinations are refused unless an entry names their host.

    Raises:
        ValueError: the URL is outside the allow-list (the message names both), or a
            link-local or metadata destination not explicitly allowed.
    """
    target = urlsplit(url)
    if target.scheme.lower() not in ("http", "https"):
        # Only HTTP(S) connections check the address they reached (ftp: would not).
        raise ValueError(f"notify_url must be an http(s) URL, got scheme {target.scheme!r}")
    path = _resolved(target.path)
    for entry in allowed:
        prefix = urlsplit(entry)
        if (
            target.scheme == prefix.scheme
            and target.hostname == prefix.hostname
            and _port(target.scheme, target.port) == _port(prefix.scheme, prefix.port)
            and _under(path, _resolved(prefix.path))
        ):
            return
    if not allowed and _is_metadata(target.hostname or ""):
        raise ValueError(
            f"notify_url {url!r} is a link-local or cloud metadata address; such destinations"
            f" are refused unless {ALLOWED_VARIABLE} names the host explicitly"
        )
    if not allowed:
        return
    raise ValueError(
        f"notify_url {url!r} is not allowed: it must start with one of"
        f" {', '.join(allowed)} (setting SCOPE_TOOL_NOTIFY_ALLOWED)"
    )


def _port(scheme: str, port: int | None) -> int:
    if port is not None:
        return port
    return 443 if scheme == "https" else 80


def _under(path: str, prefix: str) -> bool:
    if prefix.endswith("/"):
        return path.startswith(prefix)
    return path == prefix or path.startswith(prefix + "/")


def _resolved(path: str) -> str:
    """``path`` with dot segments (``%2e`` too) resolved, as a server would; ``/`` at least."""
    text = _ENCODED_DOT.sub(".", path or "/")
    resolved = posixpath.normpath("/" + text.lstrip("/"))
    resolved = "/" + resolved.lstrip("/")  # normpath keeps a leading "//"
    if text.endswith("/") and not resolved.endswith("/"):
        resolved += "/"
    return resolved


def is_metadata_host(host: str) -> bool:
    """Whether a URL's host names a link-local or metadata destination, in any spelling.

    IPv4 is read as the resolver reads it (``inet_aton``: ``2852039166``, ``0251.0376.0251.0376``,
    ``0xa9fea9fe`` and ``169.254.43518`` are all ``169.254.169.254``), not only dotted-quad.
    """
    name = host.strip("[]").rstrip(".").lower()
    return name in _METADATA_HOSTS or is_metadata_address(name)


def is_metadata_address(address: str) -> bool:
    """Whether an IP address (any IPv4 spelling ``inet_aton`` takes, or IPv6) is refused."""
    try:
        parsed: ipaddress.IPv4Address | ipaddress.IPv6Address = ipaddress.ip_address(address)
    except ValueError:
        if not _LEGACY_IPV4.fullmatch(address):
            return False
        try:
            parsed = ipaddress.IPv4Address(socket.inet_aton(address))
        except OSError:
            return False
    if isinstance(parsed, ipaddress.IPv6Address) and parsed.ipv4_mapped is not None:
        parsed = parsed.ipv4_mapped
    return parsed.is_link_local or parsed in _METADATA_ADDRESSES


_is_metadata = is_metadata_host
