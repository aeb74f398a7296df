"""Who holds a bearer token: the two token verifiers ``scope-tool mcp`` serves HTTP with.

Both implement the ``mcp`` SDK's ``TokenVerifier``, so the SDK's own bearer middleware, its
``WWW-Authenticate`` replies and its ``requestState`` principal binding do the rest:

* :class:`StaticTokens`: one team, a file (or ``SCOPE_TOOL_MCP_TOKENS``) of ``NAME TOKEN
  [ROLE,ROLE]`` lines. A token is looked up by its SHA-256, so no comparison leaks its bytes.
* :class:`JwtVerifier`: an OAuth 2.1 resource server. A JWT access token is accepted only when
  its signature verifies under a key the issuer publishes (JWKS), ``iss`` is the issuer, ``aud``
  names this server's resource URL, and ``exp`` is in the future. Only asymmetric algorithms are
  accepted (a public key can never be used as an HMAC secret).

The token itself never leaves this module's checks: nothing is forwarded to Temporal, a worker
or a tool (no token passthrough). What the rest of the server sees is the principal it names.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import jwt
from mcp.server.auth.provider import AccessToken

from scope_tool import Principal
from scope_tool.errors import InvalidPrincipalError
from scope_tool.mcp.errors import McpSettingsError

__all__ = ["ROLES_CLAIM", "JwtVerifier", "StaticTokens", "principal_of_token"]

ROLES_CLAIM: Final = "roles"
"""The claim (a list of strings) whose values become the principal's roles."""

_STATIC_ISSUER: Final = "scope-tool:static-tokens"
_MIN_TOKEN_CHARS: Final = 20
_ALGORITHMS: Final = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384")
_LEEWAY_SECONDS: Final = 30
_JWKS_MAX_AGE: Final = 300.0
_JWKS_MIN_REFRESH: Final = 30.0
"""An unknown ``kid`` refetches the key set at most this often (no fetch per forged token)."""
_FETCH_TIMEOUT: Final = 10.0
_MAX_DOCUMENT_BYTES: Final = 1 << 20


def principal_of_token(token: AccessToken) -> Principal | None:
    """The :class:`~scope_tool.Principal` a verified token names (``None``: not one of ours)."""
    claims = token.claims or {}
    roles = claims.get(ROLES_CLAIM, [])
    try:
        return Principal(
            user=_plain(token.subject or token.client_id),
            roles=tuple(_plain(role) for role in roles) if isinstance(roles, list) else (),
        )
    except (InvalidPrincipalError, TypeError, ValueError):
        return None


def _plain(text: object) -> str:
    """Names go into history and terminals: refuse control characters outright."""
    if not isinstance(text, str) or any(ord(each) < 32 or ord(each) == 127 for each in text):
        raise ValueError("control characters in a name")
    return text


@dataclass(frozen=True, slots=True)
class _Holder:
    user: str
    roles: tuple[str, ...]


class StaticTokens:
    """Static bearer tokens for one team: each token names one principal (and its roles)."""

    def __init__(self, entries: dict[bytes, _Holder]) -> None:
        self._by_digest = entries

    @classmethod
    def parse(cls, text: str, *, source: str) -> StaticTokens:
        """Read ``NAME TOKEN [ROLE,ROLE]`` lines (``#`` comments; ``;`` also ends a line).

        Raises:
            McpSettingsError: a line is malformed, a token is short or repeated (the message
                names the line, never the token).
        """
        entries: dict[bytes, _Holder] = {}
        lines = text.replace(";", "\n").splitlines()
        for number, raw in enumerate(lines, start=1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) not in (2, 3):
                raise McpSettingsError(f"{source} line {number}: expected NAME TOKEN [ROLE,ROLE]")
            name, token = parts[0], parts[1]
            roles = tuple(each for each in (parts[2] if len(parts) == 3 else "").split(",") if each)
            if len(token) < _MIN_TOKEN_CHARS:
                raise McpSettingsError(
                    f"{source} line {number}: the token of {name!r} is shorter than"
                    f" {_MIN_TOKEN_CHARS} characters (make one with `openssl rand -hex 32`)"
                )
            try:
                Principal(user=_plain(name), roles=tuple(_plain(role) for role in roles))
            except (InvalidPrincipalError, ValueError) as error:
                raise McpSettingsError(f"{source} line {number}: {error}") from None
            digest = hashlib.sha256(token.encode()).digest()
            if digest in entries:
                raise McpSettingsError(f"{source} line {number}: this token is already listed")
            entries[digest] = _Holder(user=name, roles=roles)
        if not entries:
            raise McpSettingsError(f"{source} lists no token")
        return cls(entries)

    @classmethod
    def from_file(cls, path: Path) -> StaticTokens:
        """:meth:`parse` a file; raises :class:`McpSettingsError` when it cannot be read."""
        try:
            text = path.read_text("utf-8")
        except OSError as error:
            raise McpSettingsError(f"cannot read --auth-tokens {str(path)!r}: {error}") from None
        return cls.parse(text, source=f"--auth-tokens {str(path)!r}")

    async def verify_token(self, token: str) -> AccessToken | None:
        """The holder of ``token``, or ``None`` (the SDK then answers 401)."""
        holder = self._by_digest.get(hashlib.sha256(token.encode("utf-8", "replace")).digest())
        if holder is None:
            return None
        return AccessToken(
            token="static",  # never the secret: nothing downstream needs it
            client_id=holder.user,
            subject=holder.user,
            scopes=[],
            claims={"iss": _STATIC_ISSUER, ROLES_CLAIM: list(holder.roles)},
        )


class _KeySet:
    """The issuer's published keys, fetched lazily, cached, refreshed for an unknown ``kid``."""

    def __init__(self, *, issuer: str, jwks_url: str | None) -> None:
        self._issuer = issuer
        self._jwks_url = jwks_url
        self._keys: dict[str, jwt.PyJWK] = {}
        self._fetched_at = float("-inf")
        self._lock = threading.Lock()

    def key(self, kid: str | None) -> jwt.PyJWK | None:
        with self._lock:
            age = time.monotonic() - self._fetched_at
            if age > _JWKS_MAX_AGE or (kid not in self._keys and age > _JWKS_MIN_REFRESH):
                self._refresh()
            if kid is None and len(self._keys) == 1:
                return next(iter(self._keys.values()))
            return self._keys.get(kid or "")

    def _refresh(self) -> None:
        self._fetched_at = time.monotonic()  # a failing issuer is asked again only later
        url = self._jwks_url or self._discover()
        document = _fetch_json(url)
        keys: dict[str, jwt.PyJWK] = {}
        for entry in document.get("keys", []) if isinstance(document, dict) else []:
            if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
                continue
            try:
                key = jwt.PyJWK.from_dict(entry)
            except jwt.PyJWTError:
                continue  # a key type we do not use (e.g. "oct"): skip it, keep the others
            keys[str(entry.get("kid", ""))] = key
        self._keys = keys

    def _discover(self) -> str:
        """RFC 8414 (then OpenID Connect) metadata of the issuer, for its ``jwks_uri``."""
        base = self._issuer.rstrip("/")
        scheme, _, rest = base.partition("://")
        host, _, path = rest.partition("/")
        candidates = [
            f"{scheme}://{host}/.well-known/oauth-authorization-server{'/' + path if path else ''}",
            f"{base}/.well-known/openid-configuration",
        ]
        for candidate in candidates:
            try:
                metadata = _fetch_json(candidate)
            except OSError:
                continue
            if isinstance(metadata, dict) and isinstance(metadata.get("jwks_uri"), str):
                if metadata.get("issuer", self._issuer) != self._issuer:
                    continue  # RFC 8414 section 3.3: metadata for another issuer is ignored
                self._jwks_url = str(metadata["jwks_uri"])
                return self._jwks_url
        raise OSError(f"issuer {self._issuer} publishes no jwks_uri")


def _fetch_json(url: str) -> Any:
    if not url.startswith(("https://", "http://")):
        raise OSError(f"not an http(s) URL: {url[:200]!r}")
    with urllib.request.urlopen(url, timeout=_FETCH_TIMEOUT) as response:
        return json.loads(response.read(_MAX_DOCUMENT_BYTES))


class JwtVerifier:
    """OAuth 2.1 resource-server check of a JWT access token (issuer, audience, expiry, keys).

    Args:
        issuer: the authorization server's issuer identifier (``iss`` must equal it).
        audience: this server's resource URL (``aud`` must name it; RFC 8707 / RFC 9068).
        jwks_url: where the issuer publishes its keys; ``None`` discovers ``jwks_uri`` from the
            issuer's metadata.
    """

    def __init__(self, *, issuer: str, audience: str, jwks_url: str | None = None) -> None:
        for what, url in (("--oauth-issuer", issuer), ("--oauth-jwks-url", jwks_url)):
            if url is not None and not url.startswith(("https://", "http://")):
                raise McpSettingsError(f"{what} must be an http(s) URL, got {url!r}")
        self.issuer = issuer
        self.audience = audience
        self._keys = _KeySet(issuer=issuer, jwks_url=jwks_url)

    async def verify_token(self, token: str) -> AccessToken | None:
        """The token's holder when every check passes, else ``None`` (the SDK answers 401)."""
        try:
            header = jwt.get_unverified_header(token)
            if header.get("alg") not in _ALGORITHMS:
                return None
            key = await asyncio.to_thread(self._keys.key, header.get("kid"))
            if key is None:
                return None
            claims: dict[str, Any] = jwt.decode(
                token,
                key=key.key,
                algorithms=list(_ALGORITHMS),
                audience=[self.audience, self.audience.rstrip("/")],
                issuer=self.issuer,
                leeway=_LEEWAY_SECONDS,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except (jwt.PyJWTError, OSError, ValueError, TypeError, RecursionError):
            return None
        if not isinstance(claims.get("sub"), str) or not claims["sub"]:
            return None  # the principal is ``sub``: never ``client_id`` or ``azp`` instead
        scopes = claims.get("scope", "")
        access = AccessToken(
            token="jwt",  # the bearer value is not kept: it is never passed on
            client_id=str(claims.get("client_id") or claims.get("azp") or claims["sub"]),
            subject=str(claims["sub"]),
            scopes=scopes.split() if isinstance(scopes, str) else [],
            expires_at=int(claims["exp"]),
            resource=self.audience,
            claims={"iss": self.issuer, ROLES_CLAIM: claims.get(ROLES_CLAIM, [])},
        )
        return access if principal_of_token(access) is not None else None
