"""Answer links: signed, short-lived tokens bound to one decision of one question for one person.

An email or chat message offers one link (or button) per decision. Each carries a token::

    sl1.<base64url(JSON claims)>.<base64url(HMAC-SHA256(key, "sl1." + claims))>

with claims ``{"call", "req", "dec", "to", "ch", "exp"}``: the call id, the request id of the
question, the decision (the exact JSON answer text it sends), the recipient (the answerer name
the message went to; empty for a chat button, whose presser is identified by the chat), the
channel (``email``, ``slack``) and the expiry (Unix seconds). The key is derived from the
identity secret (``SCOPE_TOOL_IDENTITY_SECRET``) with a label of its own, so a link token is
never an identity token nor the other way round, and the workers that mint links and the inbox
that checks them need no second secret.

Following a link decides nothing by itself: the inbox shows a confirmation page whose POST
answers, as the recipient, with an identity token it issues (issuer = the channel), so the
workflow verifies and records who answered and through which channel.

:func:`decisions` reads which decisions a question offers: approve / deny for a boolean or the
approval gate's schema, each choice of an enum of scalars; ``()`` for anything else (the message
then links to the inbox's form).
"""

from __future__ import annotations

import binascii
import hashlib
import hmac
import json
import time
from dataclasses import dataclass
from typing import Any, Final

from scope_tool.errors import ToolError
from scope_tool.wire._approval_prompt import read_approval
from scope_tool.wire._prompt import json_value
from scope_tool.wire.signing import b64url_decode, b64url_encode

__all__ = [
    "MAX_DECISIONS",
    "Decision",
    "LinkClaims",
    "LinkError",
    "decisions",
    "issue_link",
    "link_key",
    "verify_link",
]

_PREFIX: Final = "sl1."
_LABEL: Final = b"scope-tool answer link v1\0"
_MAX_TOKEN_CHARS: Final = 8192
MAX_DECISIONS: Final = 10
"""An enum with more choices than this gets a link to the inbox form instead of one per choice."""


class LinkError(ToolError, ValueError):
    """A link token is forged, malformed or expired; ``reason`` is ``not_verified`` or
    ``token_expired`` (the claims of an expired but genuine token are in ``claims``)."""

    def __init__(
        self, message: str, *, reason: str = "not_verified", claims: LinkClaims | None = None
    ) -> None:
        super().__init__(message)
        self.reason = reason
        self.claims = claims


@dataclass(frozen=True, slots=True, kw_only=True)
class LinkClaims:
    """What a genuine link token says."""

    call_id: str
    request_id: str
    decision: str
    recipient: str
    channel: str
    expires_at: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    """One decision a message offers: its label and the exact JSON answer text it sends."""

    label: str
    answer: str


def link_key(identity_secret: bytes) -> bytes:
    """The key link tokens are signed with, derived from the identity secret."""
    return hashlib.sha256(_LABEL + identity_secret).digest()


def issue_link(
    *,
    key: bytes,
    call_id: str,
    request_id: str,
    decision: str,
    recipient: str,
    channel: str,
    lifetime_seconds: float,
    now: float | None = None,
) -> str:
    """A link token for one decision (``key``: :func:`link_key` of the identity secret).

    Raises:
        LinkError: a non-positive lifetime or an empty channel.
    """
    if lifetime_seconds <= 0:
        raise LinkError(f"a link's lifetime must be positive, got {lifetime_seconds}")
    if not channel:
        raise LinkError("a link needs a channel name")
    issued = time.time() if now is None else now
    claims = {
        "call": call_id,
        "req": request_id,
        "dec": decision,
        "to": recipient,
        "ch": channel,
        "exp": int(issued + lifetime_seconds),
    }
    body = b64url_encode(json.dumps(claims, separators=(",", ":")).encode("utf-8"))
    signed = _PREFIX + body
    return f"{signed}.{_mac(key, signed)}"


def verify_link(token: str, *, key: bytes, now: float | None = None) -> LinkClaims:
    """The claims of a genuine, unexpired link token.

    Raises:
        LinkError: ``reason="not_verified"`` for a malformed or forged token;
            ``reason="token_expired"`` for a genuine one past its expiry (claims attached).
    """
    if not isinstance(token, str) or len(token) > _MAX_TOKEN_CHARS or not token.isascii():
        raise LinkError("the link is not a scope-tool answer link")
    parts = token.split(".")
    if len(parts) != 3 or parts[0] + "." != _PREFIX:
        raise LinkError("the link is malformed (expected sl1.<claims>.<signature>)")
    signed = f"{parts[0]}.{parts[1]}"
    if not hmac.compare_digest(_mac(key, signed), parts[2]):
        raise LinkError("the link's signature does not match (forged, altered, or another secret)")
    try:
        raw: Any = json.loads(b64url_decode(parts[1]))
    except (ValueError, binascii.Error, RecursionError):
        raise LinkError("the link's claims are not base64url JSON") from None
    fields = ("call", "req", "dec", "to", "ch")
    if (
        not isinstance(raw, dict)
        or not all(isinstance(raw.get(name), str) for name in fields)
        or not isinstance(raw.get("exp"), int)
    ):
        raise LinkError("the link lacks one of its claims")
    claims = LinkClaims(
        call_id=raw["call"],
        request_id=raw["req"],
        decision=raw["dec"],
        recipient=raw["to"],
        channel=raw["ch"],
        expires_at=raw["exp"],
    )
    current = time.time() if now is None else now
    if current >= claims.expires_at:
        raise LinkError(
            f"the link expired {int(current - claims.expires_at)} s ago",
            reason="token_expired",
            claims=claims,
        )
    return claims


def _mac(key: bytes, signed: str) -> str:
    return b64url_encode(hmac.new(key, signed.encode("ascii"), hashlib.sha256).digest())


def decisions(prompt: bytes, response_schema: bytes) -> tuple[Decision, ...]:
    """The decisions a message offers for a question, or ``()`` when its schema is not simple.

    * the approval gate (``scope_tool.require_approval``): Approve, Deny (an edit needs the form);
    * ``{"type": "boolean"}``: Approve (``true``), Deny (``false``);
    * an ``enum`` (or ``oneOf``/``anyOf`` of ``const``) of at most :data:`MAX_DECISIONS`
      strings, numbers, booleans or null: one per choice.
    """
    if read_approval(prompt, response_schema) is not None:
        return (
            Decision(label="Approve", answer='{"decision":"approve"}'),
            Decision(label="Deny", answer='{"decision":"deny"}'),
        )
    schema = json_value(response_schema)
    if not isinstance(schema, dict):
        return ()
    if schema.get("type") == "boolean" and not schema.keys() - {
        "type",
        "title",
        "description",
        "$schema",
    }:
        return (Decision(label="Approve", answer="true"), Decision(label="Deny", answer="false"))
    choices = _choices(schema)
    if choices is None or not 0 < len(choices) <= MAX_DECISIONS:
        return ()
    return tuple(
        Decision(
            label=choice if isinstance(choice, str) else json.dumps(choice),
            answer=json.dumps(choice, ensure_ascii=False, separators=(",", ":")),
        )
        for choice in choices
    )


def _choices(schema: dict[str, Any]) -> list[Any] | None:
    enum = schema.get("enum")
    if isinstance(enum, list) and not schema.keys() - {
        "enum",
        "type",
        "title",
        "description",
        "$schema",
    }:
        values = enum
    else:
        branches = schema.get("oneOf", schema.get("anyOf"))
        if not isinstance(branches, list) or not all(
            isinstance(each, dict) and "const" in each for each in branches
        ):
            return None
        values = [each["const"] for each in branches]
    if not all(isinstance(each, str | int | float | bool) or each is None for each in values):
        return None
    return list(values)
