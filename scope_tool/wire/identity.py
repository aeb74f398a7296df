"""Verified answerers: signed, expiring identity tokens (HMAC-SHA256 over a shared secret).

A call started with ``require_verified=True`` takes an answer only with an identity token: the
inbox issues one for the user it authenticated, and ``scope-tool token issue --for NAME`` for an
operator. The token's subject, not the ``answered_by`` a client claims, is who answered: it is
matched against ``allowed_answerers`` and recorded in status and history.

Trust model. The secret (``SCOPE_TOOL_IDENTITY_SECRET``) is known to the token issuers (inbox,
operator CLI) and to the workers, never to the model or an agent. The workflow cannot read
secrets from history (everything there is visible to whoever reads it), so the worker installs
the secret in this module when it starts (:func:`install_identity_secret`, called by
``scope_tool.workers.build_worker``) and the update validator verifies the token with it. Verification is
a pure function of the token, the secret and ``workflow.now()``. Validators do not run on
replay: the update handler takes the subject of a token its validator accepted (the accepted
update in history is the proof), and signals, which have no validator, refuse tokens. So
replaying a history never needs the secret, and rotating it never breaks running calls. A
client that can reach Temporal but not the secret cannot forge an identity; one that holds a
token can use it until it expires (keep the lifetime short).

Token form: ``st1.<base64url(JSON claims)>.<base64url(HMAC-SHA256(secret, "st1." + claims))>``
with claims ``{"sub": name, "iat": seconds, "exp": seconds, "iss": issuer}``.
"""

from __future__ import annotations

import binascii
import hmac
import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Final

from scope_tool.errors import ToolError
from scope_tool.wire.signing import b64url_decode, b64url_encode, hmac_signature

__all__ = [
    "DEFAULT_TOKEN_LIFETIME",
    "SECRET_VARIABLE",
    "IdentityError",
    "VerifiedIdentity",
    "identity_secret_from_environment",
    "install_identity_secret",
    "installed_identity_secret",
    "issue_token",
    "secret_bytes",
    "token_claims",
    "token_subject",
    "verify_token",
]

SECRET_VARIABLE: Final = "SCOPE_TOOL_IDENTITY_SECRET"
DEFAULT_TOKEN_LIFETIME: Final = timedelta(minutes=15)
_PREFIX: Final = "st1."
_MIN_SECRET_BYTES: Final = 16
_MAX_TOKEN_CHARS: Final = 4096
_MAX_LIFETIME: Final = timedelta(days=366)

_installed: bytes | None = None


class IdentityError(ToolError, ValueError):
    """A token could not be issued or verified; ``reason`` is ``not_verified`` or ``token_expired``."""

    def __init__(self, message: str, *, reason: str = "not_verified") -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True, slots=True, kw_only=True)
class VerifiedIdentity:
    """Who a valid token says answered, and who issued it (``inbox``, ``cli`` ...)."""

    name: str
    issuer: str
    expires_at: float


def secret_bytes(secret: str | bytes) -> bytes:
    """A secret as bytes, checked to be at least 16 bytes long.

    Raises:
        IdentityError: the secret is shorter.
    """
    raw = secret.encode("utf-8") if isinstance(secret, str) else bytes(secret)
    if len(raw) < _MIN_SECRET_BYTES:
        raise IdentityError(
            f"the identity secret must be at least {_MIN_SECRET_BYTES} bytes, got {len(raw)}"
        )
    return raw


def identity_secret_from_environment(environ: Mapping[str, str] | None = None) -> bytes | None:
    """``SCOPE_TOOL_IDENTITY_SECRET`` as bytes, or None when unset or empty.

    Raises:
        IdentityError: the variable is set but shorter than 16 bytes.
    """
    value = (os.environ if environ is None else environ).get(SECRET_VARIABLE, "")
    return secret_bytes(value) if value else None


def install_identity_secret(secret: str | bytes | None) -> None:
    """Make ``secret`` the one this process's workflows verify tokens with (None: none).

    A process-wide setting, not recorded in any history (see the module docstring).
    """
    global _installed
    _installed = secret_bytes(secret) if secret is not None else None


def installed_identity_secret() -> bytes | None:
    """The secret installed by :func:`install_identity_secret`, if any."""
    return _installed


_worker_identity: str | None = None


def install_worker_identity(identity: str | None) -> None:
    """Name this process's worker (its Temporal identity, ``PID@HOST``) in identity refusals.

    A worker without the secret refuses every token; the refusal then says which worker it
    was, so the one misconfigured replica can be found. Process-wide, never in any history
    (a validator's refusal is not recorded).
    """
    global _worker_identity
    _worker_identity = identity


def installed_worker_identity() -> str | None:
    """The identity installed by :func:`install_worker_identity`, if any."""
    return _worker_identity


def issue_token(
    name: str,
    *,
    secret: str | bytes,
    issuer: str,
    lifetime: timedelta = DEFAULT_TOKEN_LIFETIME,
    now: float | None = None,
) -> str:
    """A token saying ``name`` answers, valid for ``lifetime`` from ``now`` (default: the clock).

    Raises:
        IdentityError: a blank name or issuer, a lifetime not in (0, 366 days], a short secret.
    """
    if not isinstance(name, str) or not name.strip() or len(name.encode("utf-8")) > 1024:
        raise IdentityError(f"a token needs a non-blank name of at most 1024 bytes, got {name!r}")
    if not issuer.strip():
        raise IdentityError("a token needs a non-blank issuer")
    if not timedelta(0) < lifetime <= _MAX_LIFETIME:
        raise IdentityError(f"a token's lifetime must be in (0, 366 days], got {lifetime}")
    issued = time.time() if now is None else now
    claims = {
        "sub": name,
        "iat": int(issued),
        "exp": int(issued + lifetime.total_seconds()),
        "iss": issuer,
    }
    body = b64url_encode(
        json.dumps(claims, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    )
    signed_part = _PREFIX + body
    return f"{signed_part}.{hmac_signature(secret_bytes(secret), signed_part)}"


def _claims(token: str) -> tuple[str, str, dict[str, object]]:
    if not isinstance(token, str) or len(token) > _MAX_TOKEN_CHARS or not token.startswith(_PREFIX):
        raise IdentityError("the identity token is not a scope-tool token (st1.…)")
    if not token.isascii():
        # Every genuine token is base64url text; anything else is refused here, before
        # hmac.compare_digest (TypeError on non-ASCII str) or the ASCII signing could raise.
        raise IdentityError("the identity token is malformed (it has non-ASCII characters)")
    parts = token.split(".")
    if len(parts) != 3:
        raise IdentityError("the identity token is malformed (expected st1.<claims>.<signature>)")
    try:
        claims = json.loads(b64url_decode(parts[1]))
    except (ValueError, binascii.Error, RecursionError):
        # RecursionError: claims nested deeper than the interpreter's limit (a hostile token).
        raise IdentityError("the identity token's claims are not base64url JSON") from None
    if not isinstance(claims, dict):
        raise IdentityError("the identity token's claims are not a JSON object")
    return f"{parts[0]}.{parts[1]}", parts[2], claims


def token_subject(token: str) -> str | None:
    """The name a token claims, unverified (for display and to fill ``answered_by``)."""
    try:
        _, _, claims = _claims(token)
    except IdentityError:
        return None
    sub = claims.get("sub")
    return sub if isinstance(sub, str) else None


def token_claims(token: str) -> tuple[str, str | None] | None:
    """``(subject, issuer)`` a token claims, unverified (the update handler's reading: its
    validator verified the token); ``None`` when it has no subject."""
    try:
        _, _, claims = _claims(token)
    except IdentityError:
        return None
    sub, iss = claims.get("sub"), claims.get("iss")
    if not isinstance(sub, str):
        return None
    return sub, iss if isinstance(iss, str) else None


def verify_token(
    token: str, *, secret: bytes | None, now: float, worker: str | None = None
) -> VerifiedIdentity:
    """Check a token's signature and expiry at ``now`` (seconds since the epoch).

    Deterministic: the workflow passes ``workflow.now()``.

    Raises:
        IdentityError: ``reason="not_verified"`` for a missing secret (naming ``worker``, the
            one that checked, when given), a malformed or forged token;
            ``reason="token_expired"`` for a genuine one past its expiry.
    """
    if secret is None:
        who = f"worker {worker}" if worker else "this worker"
        raise IdentityError(
            f"{who} cannot verify identities: {SECRET_VARIABLE} is not set in its environment"
        )
    signed_part, signature, claims = _claims(token)
    if not hmac.compare_digest(hmac_signature(secret, signed_part), signature):
        raise IdentityError(
            "the identity token's signature does not match (forged or other secret)"
        )
    sub, exp, iss = claims.get("sub"), claims.get("exp"), claims.get("iss")
    if not isinstance(sub, str) or not isinstance(exp, int) or not isinstance(iss, str):
        raise IdentityError("the identity token lacks its sub, exp or iss claim")
    if now >= exp:
        raise IdentityError(
            f"the identity token of {sub!r} expired {int(now - exp)} s ago; issue a new one",
            reason="token_expired",
        )
    return VerifiedIdentity(name=sub, issuer=iss, expires_at=float(exp))
