"""Who is answering: identity from a trusted proxy header or a signed token, never from a form.

An answer is recorded with ``answered_by`` and the workflow checks it against the call's
``allowed_answerers``, so the identity must come from something the person cannot type: either a
header that a reverse proxy sets after its own login (``X-Forwarded-User``), or a token signed
with a secret only the operator holds (HMAC-SHA256, minted by :func:`mint_login_token`). The one
unauthenticated mode, ``dev_loopback``, is only allowed on a loopback address, where the only
people who can reach the page are already on the machine.

A token reaches the inbox as ``Authorization: Bearer TOKEN`` (API clients) or once as
``?token=TOKEN`` in a link, after which the inbox keeps it in an ``HttpOnly``, ``SameSite=Strict``
cookie and redirects to the same page without it (so the token leaves the address bar).
"""

from __future__ import annotations

import binascii
import hmac
import ipaddress
import json
import time
from dataclasses import dataclass
from datetime import timedelta

from starlette.requests import HTTPConnection

from scope_tool.errors import ToolError
from scope_tool.wire.signing import b64url_decode, b64url_encode, hmac_signature

__all__ = [
    "AS_COOKIE",
    "DEV_IDENTITY",
    "TOKEN_COOKIE",
    "AuthenticationError",
    "InboxAuth",
    "InboxConfigError",
    "is_loopback_host",
    "mint_login_token",
    "verify_login_token",
]

DEV_IDENTITY = "dev"
"""The identity every request gets in ``dev_loopback`` mode unless it says ``?as=NAME``."""

TOKEN_COOKIE = "scope_tool_inbox_token"
"""Cookie holding the signed token once a ``?token=`` link has been opened."""

AS_COOKIE = "scope_tool_inbox_as"
"""Cookie holding the ``?as=NAME`` choice in ``dev_loopback`` mode."""

MIN_SECRET_BYTES = 16
_MAX_NAME_CHARS = 200


class InboxConfigError(ToolError, ValueError):
    """The inbox was configured in a way that would let anyone answer (or cannot work at all)."""


class AuthenticationError(ToolError):
    """A request did not prove who sent it; the inbox answers 401 and changes nothing."""


def _check_name(name: str) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"identity must be a non-empty name, got {name!r}")
    if len(name) > _MAX_NAME_CHARS:
        raise ValueError(f"identity is longer than {_MAX_NAME_CHARS} characters: {name[:40]!r}...")
    if any(ord(char) < 0x20 or ord(char) == 0x7F for char in name):
        raise ValueError(f"identity contains control characters: {name!r}")
    return name


def _check_secret(secret: str) -> bytes:
    raw = secret.encode("utf-8")
    if len(raw) < MIN_SECRET_BYTES:
        raise InboxConfigError(
            f"token secret is {len(raw)} bytes; use at least {MIN_SECRET_BYTES} random bytes "
            "(for example: python -c 'import secrets; print(secrets.token_urlsafe(32))')"
        )
    return raw


def mint_login_token(
    name: str, *, secret: str, valid_for: timedelta | None = None, now: float | None = None
) -> str:
    """Sign a login token saying "this is NAME", for a person to open the inbox with.

    A login token only opens this inbox (checked by :func:`verify_login_token`); the identity
    token of a ``require_verified`` call is another thing (:mod:`scope_tool.wire.identity`).

    Args:
        name: The identity recorded as ``answered_by`` (must match ``allowed_answerers``).
        secret: The inbox's ``--token-secret`` (at least 16 bytes).
        valid_for: How long the token is accepted; ``None`` means until the secret changes.
        now: Unix time to count ``valid_for`` from (tests pin it).

    Returns:
        ``PAYLOAD.SIGNATURE``, URL-safe, to put in a link (``?token=``) or a Bearer header.

    Raises:
        ValueError: The name is empty, too long or has control characters, or the secret is short.
    """
    key = _check_secret(secret)
    _check_name(name)
    expires: int | None = None
    if valid_for is not None:
        if valid_for <= timedelta(0):
            raise ValueError(f"valid_for must be positive, got {valid_for}")
        expires = int((time.time() if now is None else now) + valid_for.total_seconds())
    payload = b64url_encode(
        json.dumps({"sub": name, "exp": expires}, separators=(",", ":")).encode("utf-8")
    )
    return f"{payload}.{hmac_signature(key, payload)}"


def verify_login_token(token: str, *, secret: str, now: float | None = None) -> str:
    """Return the name a token was minted for, or raise if it is forged, damaged or expired.

    Raises:
        AuthenticationError: The signature does not match, the token is malformed or expired.
    """
    key = _check_secret(secret)
    payload, dot, signature = token.strip().partition(".")
    if not dot or not payload or not signature:
        raise AuthenticationError("the token is malformed (expected PAYLOAD.SIGNATURE)")
    if not hmac.compare_digest(hmac_signature(key, payload), signature):
        raise AuthenticationError("the token's signature does not match (forged or wrong secret)")
    try:
        claims = json.loads(b64url_decode(payload))
    except (binascii.Error, ValueError) as error:
        raise AuthenticationError(f"the token's payload is unreadable ({error})") from None
    if not isinstance(claims, dict) or not isinstance(claims.get("sub"), str):
        raise AuthenticationError("the token's payload names nobody")
    expires = claims.get("exp")
    if expires is not None:
        if not isinstance(expires, int) or isinstance(expires, bool):
            raise AuthenticationError("the token's expiry is not a time")
        if (time.time() if now is None else now) >= expires:
            raise AuthenticationError("the token has expired; ask for a new one")
    try:
        return _check_name(claims["sub"])
    except ValueError as error:
        raise AuthenticationError(f"the token's name is not usable ({error})") from None


def is_loopback_host(host: str) -> bool:
    """Whether binding to ``host`` only accepts connections from this machine."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True, slots=True, kw_only=True)
class InboxAuth:
    """How the inbox learns who is answering. At least one way must be configured.

    Attributes:
        identity_header: A header set by a trusted reverse proxy after its own login (for example
            ``X-Forwarded-User``). Only safe when the inbox is reachable through that proxy alone.
        token_secret: Secret for HMAC-signed tokens (see :func:`mint_login_token`).
        dev_loopback: No authentication, for a developer's own machine: everyone is ``"dev"``
            unless the URL says ``?as=NAME`` (remembered in a cookie), which lets one person try
            ``allowed_answerers`` as several people. Only accepted on a loopback address, and
            requests from any other address are refused.
    """

    identity_header: str | None = None
    token_secret: str | None = None
    dev_loopback: bool = False

    def __post_init__(self) -> None:
        if self.identity_header is not None and not self.identity_header.strip():
            raise InboxConfigError("identity_header must name a header, got an empty string")
        if self.token_secret is not None:
            _check_secret(self.token_secret)
        if not self.authenticated and not self.dev_loopback:
            raise InboxConfigError(
                "the inbox needs authentication: pass identity_header (a trusted proxy's header, "
                "e.g. X-Forwarded-User) or token_secret (signed tokens), or dev_loopback=True on "
                "a loopback address"
            )

    @property
    def authenticated(self) -> bool:
        """Whether a real identity source (header or token) is configured."""
        return self.identity_header is not None or self.token_secret is not None

    def check_bind(self, host: str) -> None:
        """Refuse to serve unauthenticated pages anywhere but on this machine.

        Raises:
            InboxConfigError: ``dev_loopback`` without a header or secret, on a non-loopback host.
        """
        if not self.authenticated and not is_loopback_host(host):
            raise InboxConfigError(
                f"refusing to serve the inbox without authentication on {host!r}: dev_loopback "
                "is only allowed on a loopback address (127.0.0.1, ::1, localhost); configure "
                "identity_header or token_secret to serve it to other machines"
            )

    def identify(self, connection: HTTPConnection) -> str:
        """The identity behind a request, to record as ``answered_by``.

        Order: the trusted header, then a Bearer token, then the token cookie, then (only in
        ``dev_loopback`` mode, and only with nothing else configured) ``?as=`` or ``"dev"``.

        Raises:
            AuthenticationError: No valid identity; the caller answers 401.
        """
        if self.identity_header is not None:
            value = connection.headers.get(self.identity_header)
            if value is not None and value.strip():
                try:
                    return _check_name(value.strip())
                except ValueError as error:
                    raise AuthenticationError(f"{self.identity_header}: {error}") from None
        if self.token_secret is not None:
            token = _bearer_token(connection) or connection.cookies.get(TOKEN_COOKIE)
            if token:
                return verify_login_token(token, secret=self.token_secret)
        if self.authenticated:
            raise AuthenticationError(self._how_to_sign_in())
        client = connection.client
        if client is not None and not is_loopback_host(client.host):
            raise AuthenticationError(
                f"dev_loopback mode only answers this machine, not {client.host}"
            )
        chosen = connection.query_params.get("as") or connection.cookies.get(AS_COOKIE)
        if chosen:
            try:
                return _check_name(chosen)
            except ValueError as error:
                raise AuthenticationError(f"?as=: {error}") from None
        return DEV_IDENTITY

    def _how_to_sign_in(self) -> str:
        ways = []
        if self.identity_header is not None:
            ways.append(f"the {self.identity_header} header from the proxy")
        if self.token_secret is not None:
            ways.append("a signed token (Authorization: Bearer TOKEN, or a ?token= link)")
        return "not signed in: this inbox needs " + " or ".join(ways)


def _bearer_token(connection: HTTPConnection) -> str | None:
    scheme, _, value = connection.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return None
