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
client with another setting cannot make it).
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Mapping, Sequence
from typing import Final
from urllib.parse import urlsplit

__all__ = [
    "SIGNATURE_HEADER",
    "TIMESTAMP_HEADER",
    "check_destination",
    "parse_allowed",
    "sign",
    "verify",
]

SIGNATURE_HEADER: Final = "Scope-Tool-Signature"
TIMESTAMP_HEADER: Final = "Scope-Tool-Timestamp"
_VERSION: Final = "v1="


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


def check_destination(url: str, allowed: Sequence[str]) -> None:
    """Refuse ``url`` unless ``allowed`` is empty or it falls under one of its prefixes.

    Raises:
        ValueError: the URL is outside the allow-list (the message names both).
    """
    if not allowed:
        return
    target = urlsplit(url)
    for entry in allowed:
        prefix = urlsplit(entry)
        if (
            target.scheme == prefix.scheme
            and target.hostname == prefix.hostname
            and _port(target.scheme, target.port) == _port(prefix.scheme, prefix.port)
            and _under(target.path or "/", prefix.path or "/")
        ):
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
