"""Cross-site request care: form tokens bound to the person, and the ``Origin`` check.

A page of the inbox carries a token that is an HMAC of the person's identity, so a form posted
from another site (which cannot read the page) or replayed by someone else is refused. A post
whose ``Origin`` names another host is refused as well; only the host is compared, since a
TLS-terminating proxy makes the scheme differ.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from urllib.parse import urlsplit

from starlette.requests import Request

__all__ = ["FormTokens", "foreign_origin"]


class FormTokens:
    """Signs and checks the per-person form token.

    Args:
        secret: Key material (the token secret when there is one, so tokens survive restarts);
            ``None`` draws a random key, and pages from before a restart are then refused once.
    """

    def __init__(self, secret: str | None) -> None:
        material = secret.encode("utf-8") if secret else secrets.token_bytes(32)
        self._key = hashlib.sha256(b"scope-tool inbox csrf\0" + material).digest()

    def token(self, identity: str) -> str:
        """The token to put in ``identity``'s forms."""
        return hmac.new(self._key, identity.encode("utf-8"), hashlib.sha256).hexdigest()

    def valid(self, identity: str, sent: str) -> bool:
        """Whether ``sent`` is ``identity``'s token (constant time)."""
        return hmac.compare_digest(sent, self.token(identity))


def foreign_origin(request: Request) -> str | None:
    """The ``Origin`` of a cross-site post, or None when same-site (or not sent)."""
    origin = request.headers.get("origin")
    if origin is None:
        return None
    host = urlsplit(origin).netloc if origin != "null" else ""
    return None if host and host == request.headers.get("host", "") else origin
