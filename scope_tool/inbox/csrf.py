"""Cross-site request care: form tokens bound to a person, a browser session and a time.

Every answer form carries a token (the ``_csrf`` field) that is an HMAC over the person's
identity, the browser's session id and the time the page was made. The session id is a random
value the inbox keeps in the browser in an ``HttpOnly``, ``SameSite=Strict`` cookie
(:data:`SESSION_COOKIE`), so:

* a page on another site cannot post a valid form (it can read neither the page nor the cookie);
* a token copied out of one browser does not work in another, nor for another person;
* a token is good for :data:`FORM_TOKEN_LIFETIME` after its page was made, then refused as
  expired. A refused form comes back with the values kept and a fresh token, so the person
  checks the values and sends again.

The token's key is derived from the token secret when there is one (so forms survive a restart),
else drawn at random when the inbox starts (and pages from before a restart are refused once).

The pages ask for a token with :meth:`FormTokens.token` and check one with
:meth:`FormTokens.valid` by identity alone; the session is the current request's, bound by the
app around each endpoint with :meth:`FormTokens.session`.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import timedelta
from enum import StrEnum
from typing import assert_never
from urllib.parse import urlsplit

from starlette.requests import HTTPConnection, Request

__all__ = [
    "CSRF_FIELD",
    "FORM_TOKEN_LIFETIME",
    "SESSION_COOKIE",
    "FormTokenProblem",
    "FormTokens",
    "foreign_origin",
    "new_session_id",
    "session_id_of",
]

CSRF_FIELD = "_csrf"
"""The form field carrying the token."""

SESSION_COOKIE = "scope_tool_inbox_session"
"""Cookie holding the browser's random session id (``HttpOnly``, ``SameSite=Strict``)."""

FORM_TOKEN_LIFETIME = timedelta(hours=12)
"""How long a form is accepted after its page was made: a working day with a long lunch."""

_CLOCK_SKEW_SECONDS = 300
_STAMP_DIGITS = 12  # hex digits of the issue time in Unix seconds (enough for 8 million years)
_MAC_DIGITS = 64
_SESSION_PATTERN = re.compile(r"[A-Za-z0-9_-]{43}")

_current_session: ContextVar[str | None] = ContextVar("scope_tool_inbox_session", default=None)


class FormTokenProblem(StrEnum):
    """Why a form's token was refused (:meth:`FormTokens.explain` says it to the person)."""

    MISSING = "missing"
    MALFORMED = "malformed"
    FOREIGN = "foreign"
    EXPIRED = "expired"


def _span(seconds: float) -> str:
    return f"{seconds / 3600:g} h" if seconds >= 3600 else f"{seconds / 60:g} min"


def new_session_id() -> str:
    """A fresh random session id (32 bytes, URL-safe)."""
    return secrets.token_urlsafe(32)


def session_id_of(connection: HTTPConnection) -> str | None:
    """The session id the browser sent, or ``None`` when it sent none or a malformed one."""
    value = connection.cookies.get(SESSION_COOKIE)
    if value is not None and _SESSION_PATTERN.fullmatch(value):
        return value
    return None


class FormTokens:
    """Makes and checks form tokens (HMAC over identity, session id and issue time).

    Args:
        secret: Key material (the token secret when there is one, so tokens survive restarts);
            ``None`` draws a random key, and pages from before a restart are then refused once.
        lifetime: How long a token is accepted after it was made.
        clock: Unix time now (tests move it to see tokens expire).
    """

    def __init__(
        self,
        secret: str | None,
        *,
        lifetime: timedelta = FORM_TOKEN_LIFETIME,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if lifetime <= timedelta(0):
            raise ValueError(f"the form token lifetime must be positive, got {lifetime}")
        material = secret.encode("utf-8") if secret else secrets.token_bytes(32)
        self._key = hashlib.sha256(b"scope-tool inbox csrf v2\0" + material).digest()
        self._lifetime = lifetime.total_seconds()
        self._clock = clock

    def explain(self, problem: FormTokenProblem) -> str:
        """What went wrong, then what to do (the form shown with it is fresh)."""
        match problem:
            case FormTokenProblem.MISSING:
                cause = "the form carried no security token"
            case FormTokenProblem.MALFORMED:
                cause = "the form's security token is damaged"
            case FormTokenProblem.FOREIGN:
                cause = (
                    "the form's security token was made for another browser session or person "
                    "(or before the inbox restarted)"
                )
            case FormTokenProblem.EXPIRED:
                cause = (
                    "the form's security token has expired (a form is good for "
                    f"{_span(self._lifetime)} after its page was opened)"
                )
            case _:
                assert_never(problem)
        return f"{cause}; nothing was sent. This form is fresh: check the values and send again"

    def _mac(self, identity: str, session_id: str, stamp: str) -> str:
        message = "\0".join((identity, session_id, stamp)).encode("utf-8")
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()

    def mint(self, identity: str, *, session_id: str) -> str:
        """A token for ``identity``'s forms in the browser session ``session_id``.

        The token is hex: 12 digits of issue time (Unix seconds) then 64 of HMAC-SHA256.
        """
        stamp = f"{int(self._clock()):0{_STAMP_DIGITS}x}"
        return stamp + self._mac(identity, session_id, stamp)

    def problem(
        self, identity: str, *, session_id: str | None, sent: str
    ) -> FormTokenProblem | None:
        """Why ``sent`` is not a current token of ``identity`` in ``session_id`` (None: it is).

        The signature is checked before the time, so a forged token is never called expired.
        """
        if not sent:
            return FormTokenProblem.MISSING
        if len(sent) != _STAMP_DIGITS + _MAC_DIGITS or not all(
            char in "0123456789abcdef" for char in sent
        ):
            return FormTokenProblem.MALFORMED
        if session_id is None:
            return FormTokenProblem.FOREIGN
        stamp, mac = sent[:_STAMP_DIGITS], sent[_STAMP_DIGITS:]
        if not hmac.compare_digest(mac, self._mac(identity, session_id, stamp)):
            return FormTokenProblem.FOREIGN
        age = self._clock() - int(stamp, 16)
        if age >= self._lifetime or age < -_CLOCK_SKEW_SECONDS:
            return FormTokenProblem.EXPIRED
        return None

    @contextmanager
    def session(self, session_id: str) -> Iterator[None]:
        """Bind the current request's session id for :meth:`token` and :meth:`valid`."""
        bound = _current_session.set(session_id)
        try:
            yield
        finally:
            _current_session.reset(bound)

    def token(self, identity: str) -> str:
        """The token to put in ``identity``'s forms, for the current request's session.

        Raises:
            RuntimeError: Called outside :meth:`session` (a page served without the app's guard).
        """
        session_id = _current_session.get()
        if session_id is None:
            raise RuntimeError("form tokens are made inside FormTokens.session(...) only")
        return self.mint(identity, session_id=session_id)

    def valid(self, identity: str, sent: str) -> bool:
        """Whether ``sent`` is a current token of ``identity`` in the current request's session."""
        return self.problem(identity, session_id=_current_session.get(), sent=sent) is None


def foreign_origin(request: Request) -> str | None:
    """The ``Origin`` of a cross-site post, or None when same-site (or not sent)."""
    origin = request.headers.get("origin")
    if origin is None:
        return None
    host = urlsplit(origin).netloc if origin != "null" else ""
    return None if host and host == request.headers.get("host", "") else origin
