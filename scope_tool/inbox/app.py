"""The inbox web app: calls waiting for a person, one page per call, answers through the update.

Routes: ``/`` (the waiting list), ``/finished`` (calls that ended recently) and
``/calls/{id}`` (one call: arguments, its generated answer form, its audit trail) are the pages (:mod:`.pages`); ``/api/pending``, ``/api/calls/{id}`` and
``POST /api/calls/{id}/answer`` are the JSON API (:mod:`.api`). Every request first passes the
:class:`~.gate.RequestGate` (known host, same-origin changes, bounded body). Every route but
``/static`` needs an identity (:mod:`.auth`), which is what is recorded as ``answered_by``; this
module puts that guard in front of each endpoint, turns ``?token=`` links into cookies, keeps
the browser's session cookie (:mod:`.csrf`) and refuses a form post whose token is missing,
foreign or expired by showing the form again, values kept, with a fresh token.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from scope_tool.client import ToolCalls
from scope_tool.config.channels import SlackReceiving
from scope_tool.inbox.api import InboxApi
from scope_tool.inbox.auth import (
    AS_COOKIE,
    TOKEN_COOKIE,
    AuthenticationError,
    InboxAuth,
    InboxConfigError,
    verify_login_token,
)
from scope_tool.inbox.channels import ChannelEndpoints
from scope_tool.inbox.csrf import (
    CSRF_FIELD,
    FORM_TOKEN_LIFETIME,
    SESSION_COOKIE,
    FormTokens,
    new_session_id,
    session_id_of,
)
from scope_tool.inbox.gate import MAX_BODY_BYTES, MAX_FORM_FIELDS, RequestGate
from scope_tool.inbox.hosts import AllowedHosts
from scope_tool.inbox.pages import InboxPages
from scope_tool.inbox.reading import CallReader
from scope_tool.wire.identity import identity_secret_from_environment, secret_bytes

__all__ = ["create_app"]

_STATIC = Path(__file__).parent / "static"

Endpoint = Callable[[Request], Awaitable[Response]]
IdentifiedEndpoint = Callable[[Request, str], Awaitable[Response]]


def create_app(
    calls: ToolCalls,
    *,
    auth: InboxAuth,
    allowed_hosts: AllowedHosts | None = None,
    refresh_seconds: float = 2.0,
    limit: int = 100,
    form_token_lifetime: timedelta = FORM_TOKEN_LIFETIME,
    max_body_bytes: int = MAX_BODY_BYTES,
    clock: Callable[[], float] = time.time,
    web_ui_url: str | None = None,
    identity_secret: str | bytes | None = None,
    slack: SlackReceiving | None = None,
    slack_responder: Callable[[str, dict[str, Any]], None] | None = None,
) -> Starlette:
    """Build the inbox as an ASGI app (serve it with uvicorn, or test it with httpx).

    Args:
        calls: The client facade the inbox reads and answers through.
        auth: How people are identified (see :class:`~scope_tool.inbox.auth.InboxAuth`).
        allowed_hosts: The host names the inbox answers to; ``None`` means this machine's
            loopback names only. :func:`~scope_tool.inbox.serve_inbox` adds the bound
            address and the configured public names.
        refresh_seconds: How often open pages poll the API for changes.
        limit: At most this many waiting calls are listed.
        form_token_lifetime: How long an answer form is accepted after its page was opened.
        max_body_bytes: Largest request body of a change (see :data:`.gate.MAX_BODY_BYTES`).
        clock: Unix time now, for form-token expiry (tests move it).
        web_ui_url: The Temporal Web UI's address (``http://localhost:8233``); each call's
            page then links to the call there. ``None`` shows no link.
        identity_secret: The secret identity tokens are signed with (``scope_tool.wire.identity``);
            ``None`` reads ``SCOPE_TOOL_IDENTITY_SECRET``. With it, each answer carries a token
            for the authenticated person, so calls that require verified answerers take it.
            Without authentication (``dev_loopback``) no token is issued: nobody was verified.
            Answer links from email and Slack (``/channels/...``, :mod:`.channels`) are
            checked with it, and their answers carry tokens it signs.
        slack: the Slack app's signing secret and user table; ``None`` reads
            ``SCOPE_TOOL_SLACK_SIGNING_SECRET`` and ``SCOPE_TOOL_SLACK_USERS`` (unset: Slack off).
        slack_responder: posts the message update to a Slack ``response_url`` (default: an
            HTTPS POST to ``hooks.slack.com`` only).

    Raises:
        InboxConfigError: ``allowed_hosts`` turns the host check off (``*``) while the inbox
            runs without authentication: that is the DNS-rebinding hole the check closes.
    """
    if refresh_seconds <= 0:
        raise ValueError(f"refresh_seconds must be positive, got {refresh_seconds}")
    if limit <= 0:
        raise ValueError(f"limit must be positive, got {limit}")
    if max_body_bytes <= 0:
        raise ValueError(f"max_body_bytes must be positive, got {max_body_bytes}")
    hosts = allowed_hosts if allowed_hosts is not None else AllowedHosts()
    if hosts.any_host and not auth.authenticated:
        raise InboxConfigError(
            "allowed host '*' turns the host check off, which lets any web page that re-points "
            "its name at this machine (DNS rebinding) use the inbox; it needs identity_header or "
            "token_secret, never dev_loopback alone"
        )
    form_tokens = FormTokens(auth.token_secret, lifetime=form_token_lifetime, clock=clock)
    secret = (
        identity_secret_from_environment()
        if identity_secret is None
        else secret_bytes(identity_secret)
    )
    reader = CallReader(calls, limit=limit, identity_secret=secret if auth.authenticated else None)
    pages = InboxPages(
        reader,
        form_tokens=form_tokens,
        refresh_ms=int(refresh_seconds * 1000),
        web_ui_url=web_ui_url,
    )
    api = InboxApi(reader)
    channels = ChannelEndpoints(
        calls,
        templates=pages.templates,
        identity_secret=secret,
        slack=slack if slack is not None else SlackReceiving.from_env(),
        form_tokens=form_tokens,
        auth=auth,
        clock=clock,
        post_response=slack_responder,
    )
    guard = _Guard(auth, pages, form_tokens, max_body_bytes=max_body_bytes)
    return Starlette(
        middleware=[
            Middleware(
                RequestGate,
                allowed_hosts=hosts,
                max_body_bytes=max_body_bytes,
                max_form_fields=MAX_FORM_FIELDS,
            )
        ],
        routes=[
            Route("/", guard(pages.waiting_list), methods=["GET"]),
            # Answer links carry their own proof of who answers (a signed token), so they are
            # not behind the inbox's sign-in; the gate still checks host, origin and body.
            Route("/channels/email/{token}", channels.email_confirm, methods=["GET"]),
            Route("/channels/email/{token}", channels.email_answer, methods=["POST"]),
            Route("/channels/slack/actions", channels.slack_actions, methods=["POST"]),
            Route("/finished", guard(pages.finished), methods=["GET"]),
            Route(
                "/calls/{call_id:path}/answer",
                guard(guard.form_checked(pages.answer)),
                methods=["POST"],
            ),
            Route("/calls/{call_id:path}", guard(pages.call), methods=["GET"]),
            Route("/batch", guard(pages.batch), methods=["POST"]),
            Route("/api/pending", guard(api.pending), methods=["GET"]),
            Route("/api/calls/{call_id:path}/answer", guard(api.answer), methods=["POST"]),
            Route("/api/calls/{call_id:path}", guard(api.call), methods=["GET"]),
            Mount("/static", StaticFiles(directory=_STATIC), name="static"),
        ],
    )


def _set_cookie(request: Request, response: Response, name: str, value: str) -> None:
    response.set_cookie(
        name,
        value,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/",
    )


class _Guard:
    """Runs an endpoint only for an identified person (everyone else gets 401), in a session."""

    def __init__(
        self, auth: InboxAuth, pages: InboxPages, form_tokens: FormTokens, *, max_body_bytes: int
    ) -> None:
        self._auth = auth
        self._pages = pages
        self._form_tokens = form_tokens
        self._max_body_bytes = max_body_bytes

    def __call__(self, endpoint: IdentifiedEndpoint) -> Endpoint:
        async def run(request: Request) -> Response:
            sign_in = self._sign_in_redirect(request)
            if sign_in is not None:
                return sign_in
            try:
                identity = self._auth.identify(request)
            except AuthenticationError as error:
                return self._unauthorized(request, str(error))
            session_id = session_id_of(request)
            fresh = session_id is None
            if session_id is None:
                session_id = new_session_id()
            with self._form_tokens.session(session_id):
                response = await endpoint(request, identity)
            if fresh and not request.url.path.startswith("/api/"):
                _set_cookie(request, response, SESSION_COOKIE, session_id)
            return response

        return run

    def form_checked(self, endpoint: IdentifiedEndpoint) -> IdentifiedEndpoint:
        """Refuse a form post whose token is missing, foreign or expired, before ``endpoint``.

        The refusal is the call's page again (403) with the values kept, the reason, and a
        fresh token for this session, so the person checks the values and sends again. The form
        is parsed here once (the endpoint gets the same parsed form): the gate has bounded the
        whole body already, so no per-field cap applies, and a legal answer of up to
        ``MAX_INPUT_BYTES`` of JSON still fits when percent-encoding triples it.
        """

        async def checked(request: Request, identity: str) -> Response:
            form_data = await request.form(
                max_files=0, max_fields=MAX_FORM_FIELDS, max_part_size=self._max_body_bytes
            )
            sent = form_data.get(CSRF_FIELD)
            problem = self._form_tokens.problem(
                identity,
                session_id=session_id_of(request),
                sent=sent if isinstance(sent, str) else "",
            )
            if problem is None:
                return await endpoint(request, identity)
            values: dict[str, list[str]] = {}
            for key, item in form_data.multi_items():
                if isinstance(item, str) and key != CSRF_FIELD:
                    values.setdefault(key, []).append(item)
            return await self._pages.call(
                request,
                identity,
                values=values,
                refusal=self._form_tokens.explain(problem),
                status_code=403,
            )

        return checked

    def _sign_in_redirect(self, request: Request) -> Response | None:
        """``?token=`` (or ``?as=`` in dev mode) -> cookie, then the same URL without it."""
        params = request.query_params
        name = None
        if "token" in params and self._auth.token_secret is not None:
            try:
                verify_login_token(params["token"], secret=self._auth.token_secret)
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
        _set_cookie(request, response, name, value)
        # A new person in this browser starts a new session: forms made before are refused.
        _set_cookie(request, response, SESSION_COOKIE, new_session_id())
        return response

    def _unauthorized(self, request: Request, message: str) -> Response:
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": message, "reason": "unauthenticated"}, status_code=401)
        return self._pages.unauthorized(request, message)
