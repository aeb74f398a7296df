"""The inbox web app: calls waiting for a person, one page per call, answers through the update.

Routes: ``/`` (the waiting list) and ``/calls/{id}`` (one call, its generated answer form) are
the pages (:mod:`.pages`); ``/api/pending``, ``/api/calls/{id}`` and
``POST /api/calls/{id}/answer`` are the JSON API (:mod:`.api`). Every route but ``/static``
needs an identity (:mod:`.auth`), which is what is recorded as ``answered_by``; this module
puts that guard in front of each endpoint and turns ``?token=`` links into cookies.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from urllib.parse import quote, urlencode

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from scope_tool_inbox.api import InboxApi
from scope_tool_inbox.auth import (
    AS_COOKIE,
    TOKEN_COOKIE,
    AuthenticationError,
    InboxAuth,
    verify_token,
)
from scope_tool_inbox.csrf import FormTokens
from scope_tool_inbox.pages import InboxPages
from scope_tool_inbox.reading import CallReader
from workflows import ToolCalls

__all__ = ["create_app"]

_STATIC = Path(__file__).parent / "static"

Endpoint = Callable[[Request], Awaitable[Response]]
IdentifiedEndpoint = Callable[[Request, str], Awaitable[Response]]


def create_app(
    calls: ToolCalls, *, auth: InboxAuth, refresh_seconds: float = 2.0, limit: int = 100
) -> Starlette:
    """Build the inbox as an ASGI app (serve it with uvicorn, or test it with httpx).

    Args:
        calls: The client facade the inbox reads and answers through.
        auth: How people are identified (see :class:`~scope_tool_inbox.auth.InboxAuth`).
        refresh_seconds: How often open pages poll the API for changes.
        limit: At most this many waiting calls are listed.
    """
    if refresh_seconds <= 0:
        raise ValueError(f"refresh_seconds must be positive, got {refresh_seconds}")
    if limit <= 0:
        raise ValueError(f"limit must be positive, got {limit}")
    reader = CallReader(calls, limit=limit)
    pages = InboxPages(
        reader,
        form_tokens=FormTokens(auth.token_secret),
        refresh_ms=int(refresh_seconds * 1000),
    )
    api = InboxApi(reader)
    guard = _Guard(auth, pages)
    return Starlette(
        routes=[
            Route("/", guard(pages.waiting_list), methods=["GET"]),
            Route("/calls/{call_id:path}/answer", guard(pages.answer), methods=["POST"]),
            Route("/calls/{call_id:path}", guard(pages.call), methods=["GET"]),
            Route("/api/pending", guard(api.pending), methods=["GET"]),
            Route("/api/calls/{call_id:path}/answer", guard(api.answer), methods=["POST"]),
            Route("/api/calls/{call_id:path}", guard(api.call), methods=["GET"]),
            Mount("/static", StaticFiles(directory=_STATIC), name="static"),
        ]
    )


class _Guard:
    """Runs an endpoint only for an identified person; everyone else gets 401."""

    def __init__(self, auth: InboxAuth, pages: InboxPages) -> None:
        self._auth = auth
        self._pages = pages

    def __call__(self, endpoint: IdentifiedEndpoint) -> Endpoint:
        async def run(request: Request) -> Response:
            sign_in = self._sign_in_redirect(request)
            if sign_in is not None:
                return sign_in
            try:
                identity = self._auth.identify(request)
            except AuthenticationError as error:
                return self._unauthorized(request, str(error))
            return await endpoint(request, identity)

        return run

    def _sign_in_redirect(self, request: Request) -> Response | None:
        """``?token=`` (or ``?as=`` in dev mode) -> cookie, then the same URL without it."""
        params = request.query_params
        name = None
        if "token" in params and self._auth.token_secret is not None:
            try:
                verify_token(params["token"], secret=self._auth.token_secret)
            except AuthenticationError as error:
                return self._unauthorized(request, str(error))
            name, value = TOKEN_COOKIE, params["token"]
        elif "as" in params and not self._auth.authenticated and request.method == "GET":
            try:
                self._auth.identify(request)
            except AuthenticationError as error:
                return self._unauthorized(request, str(error))
            name, value = AS_COOKIE, params["as"]
        if name is None:
            return None
        kept = [(key, item) for key, item in params.multi_items() if key not in ("token", "as")]
        target = quote(request.url.path, safe="/") + (f"?{urlencode(kept)}" if kept else "")
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(
            name,
            value,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
            path="/",
        )
        return response

    def _unauthorized(self, request: Request, message: str) -> Response:
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": message, "reason": "unauthenticated"}, status_code=401)
        return self._pages.unauthorized(request, message)
