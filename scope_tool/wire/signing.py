"""Signed tokens' parts: unpadded URL-safe base64 and the HMAC-SHA256 signature over them.

Two token forms are built from these: the identity tokens of :mod:`scope_tool.wire.identity`
(``st1.CLAIMS.SIGNATURE``, checked by workers) and the inbox's own login tokens
(``PAYLOAD.SIGNATURE``). Both go into URLs and headers, so neither carries ``=`` padding.
"""

from __future__ import annotations

import base64
import hashlib
import hmac

__all__ = ["b64url_decode", "b64url_encode", "hmac_signature"]


def b64url_encode(data: bytes) -> str:
    """``data`` as URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    """The bytes of unpadded URL-safe base64 text.

    Raises:
        binascii.Error: ``text`` is not base64.
    """
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def hmac_signature(secret: bytes, signed_part: str) -> str:
    """HMAC-SHA256 of the ASCII ``signed_part`` under ``secret``, as :func:`b64url_encode` text.

    Compare it with :func:`hmac.compare_digest`, never ``==``.
    """
    return b64url_encode(hmac.new(secret, signed_part.encode("ascii"), hashlib.sha256).digest())
