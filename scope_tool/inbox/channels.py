"""Answers from outside the inbox: email links and Slack buttons (see docs/channels.md).

Email. ``GET /channels/email/{token}`` checks the link (:mod:`scope_tool.wire.links`) and shows
a confirmation page; it decides nothing, because mail scanners and link previews follow links.
Its form posts to the same address with a form token (:mod:`.csrf`) bound to the recipient and
to a session cookie of its own, and passes the same host and origin gate as every inbox form.
The POST answers as the link's recipient with an identity token the inbox issues for this one
answer (issuer ``email``), so the workflow verifies the person and records the channel.

Slack. ``POST /channels/slack/actions`` is a Slack app's interactivity request URL. It checks
Slack's v0 signature (HMAC-SHA256 over ``v0:{timestamp}:{body}`` with the signing secret,
``X-Slack-Signature``), refuses a timestamp more than five minutes off, maps the presser's Slack
user id to an answerer through ``SCOPE_TOOL_SLACK_USERS`` (an unmapped user is refused), checks
the button's link token, answers with an identity token issued for that person (issuer
``slack``) and replaces the message, through its ``response_url``, with who decided.

Refusals change nothing: a link or button used before, or for a question no longer pending, is
``finished``; a recipient the call does not allow is ``not_allowed``; an expired link says so and
points to the call's page in the inbox; a forged link or signature is ``not_verified``, a stale
timestamp ``stale_timestamp``, an unmapped Slack user ``unknown_user``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import re
import time
import urllib.request
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any, Final
from urllib.parse import parse_qs, quote

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.templating import Jinja2Templates

from scope_tool.client import (
    AnswerRejectedError,
    CallNotFoundError,
    CallStatus,
    ToolCalls,
    ToolCallsError,
    json_value,
    read_approval,
    read_prompt,
)
from scope_tool.config.channels import SlackReceiving
from scope_tool.inbox.auth import AuthenticationError, InboxAuth
from scope_tool.inbox.csrf import CSRF_FIELD, FormTokens, new_session_id
from scope_tool.wire.identity import issue_token
from scope_tool.wire.links import LinkClaims, LinkError, link_key, verify_link

__all__ = [
    "LINK_SESSION_COOKIE",
    "SLACK_TOLERANCE_SECONDS",
    "ChannelEndpoints",
    "slack_signature",
    "verify_slack_signature",
]

LINK_SESSION_COOKIE: Final = "scope_tool_link_session"
"""The confirmation page's own session cookie (``HttpOnly``, ``SameSite=Strict``)."""
SLACK_TOLERANCE_SECONDS: Final = 300
"""How far a Slack request's timestamp may be from the inbox's clock (Slack's advice: 5 min)."""
_SESSION: Final = re.compile(r"[A-Za-z0-9_-]{43}")
_ANSWER_TOKEN_LIFETIME: Final = timedelta(minutes=2)
_GONE: Final = frozenset({"finished", "stale_request", "not_waiting"})
_STATUS: Final = {
    "finished": 409,
    "not_allowed": 403,
    "not_verified": 403,
    "unknown_user": 403,
    "token_expired": 410,
    "stale_timestamp": 401,
    "bad_signature": 401,
    "not_configured": 503,
    "not_found": 404,
}


def slack_signature(signing_secret: str, timestamp: str, body: bytes) -> str:
    """Slack's v0 signature of a request: ``v0=`` + hex HMAC-SHA256 of ``v0:{ts}:{body}``."""
    base = b"v0:" + timestamp.encode("ascii") + b":" + body
    return "v0=" + hmac.new(signing_secret.encode("utf-8"), base, hashlib.sha256).hexdigest()


def verify_slack_signature(
    signing_secret: str,
    body: bytes,
    headers: Mapping[str, str],
    *,
    now: float | None = None,
    tolerance_seconds: float = SLACK_TOLERANCE_SECONDS,
) -> str | None:
    """Why a request is not genuinely from Slack now (``None``: it is).

    Returns ``"stale_timestamp"`` for a missing or far-off ``X-Slack-Request-Timestamp``, and
    ``"bad_signature"`` for a missing or wrong ``X-Slack-Signature``. Constant-time compare.
    """
    stamp = headers.get("x-slack-request-timestamp", "")
    sent = headers.get("x-slack-signature", "")
    current = time.time() if now is None else now
    if not stamp.isdigit() or abs(current - int(stamp)) > tolerance_seconds:
        return "stale_timestamp"
    if not sent.isascii() or not hmac.compare_digest(
        slack_signature(signing_secret, stamp, body), sent
    ):
        return "bad_signature"
    return None


class ChannelEndpoints:
    """The channel routes of the inbox app.

    Args:
        calls: the facade answers go through.
        templates: the inbox's templates.
        identity_secret: signs answer links (derived key) and the answers' identity tokens;
            ``None`` turns the channel routes off (503).
        slack: the Slack app's signing secret and user table; ``None`` turns Slack off.
        form_tokens: the inbox's form tokens (the confirmation form carries one).
        auth: the inbox's sign-in: a browser signed in as someone other than a link's
            recipient is refused ``not_allowed`` (with single sign-on in front of the inbox,
            a forwarded link does not answer for its first recipient).
        clock: Unix time now (tests move it).
        post_response: how the Slack message is updated (``response_url``, JSON body).
    """

    def __init__(
        self,
        calls: ToolCalls,
        *,
        templates: Jinja2Templates,
        identity_secret: bytes | None,
        slack: SlackReceiving | None,
        form_tokens: FormTokens,
        auth: InboxAuth | None = None,
        clock: Callable[[], float] = time.time,
        post_response: Callable[[str, dict[str, Any]], None] | None = None,
    ) -> None:
        self._calls = calls
        self._templates = templates
        self._secret = identity_secret
        self._key = link_key(identity_secret) if identity_secret is not None else None
        self._slack = slack
        self._forms = form_tokens
        self._auth = auth
        self._clock = clock
        self._post_response = post_response or _post_response

    # --- email -----------------------------------------------------------------------------

    def _page(
        self, request: Request, status: int, *, heading: str, message: str = "", **extra: Any
    ) -> Response:
        return self._templates.TemplateResponse(
            request,
            "channel.html",
            {"heading": heading, "message": message, **extra},
            status_code=status,
        )

    def _refusal(
        self, request: Request, reason: str, message: str, claims: LinkClaims | None = None
    ) -> Response:
        inbox = f"/calls/{quote(claims.call_id, safe='')}" if claims is not None else "/"
        return self._page(
            request,
            _STATUS.get(reason, 400),
            heading="Nothing was answered",
            message=message,
            reason=reason,
            inbox_url=inbox,
        )

    def _claims(self, request: Request) -> LinkClaims | Response:
        if self._key is None:
            return self._refusal(
                request,
                "not_configured",
                "this inbox cannot check answer links: SCOPE_TOOL_IDENTITY_SECRET is not set",
            )
        try:
            claims = verify_link(request.path_params["token"], key=self._key, now=self._clock())
        except LinkError as error:
            if error.reason == "token_expired" and error.claims is not None:
                return self._refusal(
                    request,
                    "token_expired",
                    f"{error}. Answer links are short-lived; answer this call in the inbox"
                    " instead.",
                    error.claims,
                )
            return self._refusal(request, "not_verified", str(error))
        if claims.channel != "email" or not claims.recipient:
            return self._refusal(request, "not_verified", "this is not an email answer link")
        return claims

    async def _status(self, request: Request, claims: LinkClaims) -> CallStatus | Response:
        try:
            return await self._calls.get(claims.call_id).status()
        except CallNotFoundError:
            return self._refusal(request, "not_found", f"there is no call {claims.call_id!r}")

    def _still_open(
        self, request: Request, claims: LinkClaims, status: CallStatus
    ) -> Response | None:
        if self._auth is not None and self._auth.authenticated:
            try:
                signed_in = self._auth.identify(request)
            except AuthenticationError:
                signed_in = None  # not signed in: the link alone says who answers
            if signed_in is not None and signed_in != claims.recipient:
                return self._refusal(
                    request,
                    "not_allowed",
                    f"this link was sent to {claims.recipient!r}, and this browser is signed in"
                    f" to the inbox as {signed_in!r}; {signed_in!r} can answer from the inbox",
                    claims,
                )
        gone = _gone(claims, status, claims.recipient)
        return self._refusal(request, *gone, claims) if gone is not None else None

    async def email_confirm(self, request: Request) -> Response:
        """``GET``: the confirmation page (decides nothing)."""
        claims = self._claims(request)
        if isinstance(claims, Response):
            return claims
        status = await self._status(request, claims)
        if isinstance(status, Response):
            return status
        closed = self._still_open(request, claims, status)
        if closed is not None:
            return closed
        pending = status.pending
        assert pending is not None
        session = session_id_of_link(request) or new_session_id()
        approval = read_approval(pending.prompt, pending.response_schema)
        question = (
            approval.question
            if approval is not None
            else read_prompt(pending.prompt).question or "Input is needed"
        )
        response = self._page(
            request,
            200,
            heading=f"Confirm your answer, {claims.recipient}",
            question=question,
            tool=status.tool,
            call_id=claims.call_id,
            arguments=await self._arguments(claims.call_id),
            decision=json.dumps(json_value(claims.decision.encode("utf-8")), ensure_ascii=False),
            csrf_field=CSRF_FIELD,
            csrf=self._forms.mint(_form_identity(claims), session_id=session),
            inbox_url=f"/calls/{quote(claims.call_id, safe='')}",
            confirm=True,
        )
        response.set_cookie(
            LINK_SESSION_COOKIE,
            session,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
            path="/channels/",
        )
        return response

    async def email_answer(self, request: Request) -> Response:
        """``POST``: the confirmed answer, as the link's recipient (verified, channel email)."""
        claims = self._claims(request)
        if isinstance(claims, Response):
            return claims
        form = await request.form(max_files=0, max_fields=4)
        sent = form.get(CSRF_FIELD)
        problem = self._forms.problem(
            _form_identity(claims),
            session_id=session_id_of_link(request),
            sent=sent if isinstance(sent, str) else "",
        )
        if problem is not None:
            return self._refusal(
                request,
                "not_verified",
                f"{self._forms.explain(problem)} (open the link from the email again)",
                claims,
            )
        status = await self._status(request, claims)
        if isinstance(status, Response):
            return status
        closed = self._still_open(request, claims, status)
        if closed is not None:
            return closed
        refusal = await self._answer(claims, claims.recipient, "email")
        if refusal is not None:
            return self._refusal(request, refusal[0], refusal[1], claims)
        return self._page(
            request,
            200,
            heading="Answered",
            message=f"{claims.recipient} answered {claims.decision} to call {claims.call_id!r}"
            " (verified, by email).",
            answered=True,
            inbox_url=f"/calls/{quote(claims.call_id, safe='')}",
        )

    async def _answer(
        self, claims: LinkClaims, person: str, channel: str
    ) -> tuple[str, str] | None:
        """Answer as ``person``; ``(reason, message)`` when refused (nothing changed)."""
        assert self._secret is not None
        token = issue_token(
            person, secret=self._secret, issuer=channel, lifetime=_ANSWER_TOKEN_LIFETIME
        )
        try:
            receipt = await self._calls.get(claims.call_id).answer(
                claims.decision,
                request_id=claims.request_id,
                answered_by=person,
                identity_token=token,
            )
        except AnswerRejectedError as refused:
            reason = "finished" if refused.reason in _GONE else str(refused.reason)
            return reason, refused.message
        except CallNotFoundError:
            return "not_found", f"there is no call {claims.call_id!r}"
        if receipt.duplicate:
            return "finished", "this question was already answered with this decision"
        # Temporal answers a repeated update id (same question, same text) with the first
        # update's receipt: whether this person's answer is the one taken, the call says.
        taken = next(
            (
                each
                for each in (await self._calls.get(claims.call_id).status()).answers
                if each.request_id == claims.request_id
            ),
            None,
        )
        if taken is None or (taken.answered_by, taken.channel) != (person, channel):
            who = f"{taken.answered_by} through {taken.channel}" if taken is not None else "?"
            return "finished", f"this question was already answered (by {who})"
        return None

    async def _arguments(self, call_id: str) -> str:
        """The call's exact arguments, from its history ("" when it cannot be read now)."""
        try:
            async with asyncio.timeout(10):
                history = await self._calls.get(call_id).history()
        except (TimeoutError, ToolCallsError):
            return ""
        return history.arguments.decode("utf-8", "replace")

    # --- Slack -----------------------------------------------------------------------------

    def _slack_refusal(self, reason: str, message: str) -> JSONResponse:
        return JSONResponse(
            {"ok": False, "reason": reason, "error": message}, status_code=_STATUS.get(reason, 400)
        )

    async def slack_actions(self, request: Request) -> Response:
        """Slack's interactivity request: a button press, verified, answered, message updated."""
        if self._slack is None or self._key is None:
            return self._slack_refusal(
                "not_configured",
                "Slack answers need SCOPE_TOOL_SLACK_SIGNING_SECRET, SCOPE_TOOL_SLACK_USERS and"
                " SCOPE_TOOL_IDENTITY_SECRET on the inbox",
            )
        body = await request.body()
        problem = verify_slack_signature(
            self._slack.signing_secret, body, request.headers, now=self._clock()
        )
        if problem == "stale_timestamp":
            return self._slack_refusal(
                problem, "the request's timestamp is missing or more than 5 minutes off"
            )
        if problem is not None:
            return self._slack_refusal(problem, "the request's Slack signature does not match")
        payload = _slack_payload(body)
        if payload is None:
            return self._slack_refusal("bad_request", "the request carries no action payload")
        user = payload.get("user")
        user_id = user.get("id") if isinstance(user, dict) else None
        person = self._slack.users.get(user_id) if isinstance(user_id, str) else None
        response_url = payload.get("response_url")
        respond = response_url if isinstance(response_url, str) else None
        if person is None:
            return await self._slack_tell(
                respond, "unknown_user", f"Slack user {user_id!r} is not mapped to an answerer"
            )
        actions = payload.get("actions")
        action = actions[0] if isinstance(actions, list) and actions else None
        value = action.get("value") if isinstance(action, dict) else None
        if not isinstance(value, str):
            return self._slack_refusal("bad_request", "the action carries no decision")
        try:
            claims = verify_link(value, key=self._key, now=self._clock())
        except LinkError as error:
            inbox = (
                f" (answer in the inbox: /calls/{quote(error.claims.call_id, safe='')})"
                if error.claims is not None
                else ""
            )
            return await self._slack_tell(respond, error.reason, f"{error}{inbox}")
        if claims.channel != "slack":
            return await self._slack_tell(respond, "not_verified", "not a Slack decision")
        try:
            status = await self._calls.get(claims.call_id).status()
        except CallNotFoundError:
            return await self._slack_tell(respond, "not_found", f"no call {claims.call_id!r}")
        gone = _gone(claims, status, person)
        if gone is not None:
            return await self._slack_tell(respond, *gone)
        refusal = await self._answer(claims, person, "slack")
        if refusal is not None:
            return await self._slack_tell(respond, *refusal)
        if respond is not None:
            await asyncio.to_thread(
                self._post_response,
                respond,
                {
                    "replace_original": True,
                    "text": f"{person} answered {claims.decision} to call {claims.call_id}"
                    f" ({claims.request_id}), verified, through Slack.",
                },
            )
        return JSONResponse({"ok": True, "answered_by": person, "call_id": claims.call_id})

    async def _slack_tell(self, respond: str | None, reason: str, message: str) -> JSONResponse:
        """Refuse, and tell the presser alone (an ephemeral reply) what happened."""
        if respond is not None:
            # The refusal stands whether or not Slack takes the reply.
            with contextlib.suppress(OSError):
                await asyncio.to_thread(
                    self._post_response,
                    respond,
                    {
                        "response_type": "ephemeral",
                        "replace_original": False,
                        "text": f"Not answered ({reason}): {message}",
                    },
                )
        return self._slack_refusal(reason, message)


def _gone(claims: LinkClaims, status: CallStatus, person: str) -> tuple[str, str] | None:
    """Why the link's question can no longer be answered by ``person`` (``None``: it can)."""
    pending = status.pending
    if pending is None or pending.request_id != claims.request_id:
        done = next((each for each in status.answers if each.request_id == claims.request_id), None)
        who = (
            f": {done.answered_by or 'someone'} answered it"
            + (f" through {done.channel}" if done.channel else "")
            if done is not None
            else ""
        )
        return (
            "finished",
            f"this question of call {claims.call_id!r} is no longer waiting"
            f" ({status.phase.value}){who}; this link is used up",
        )
    allowed = status.allowed_answerers
    if allowed and person not in allowed:
        return "not_allowed", f"{person!r} may not answer call {claims.call_id!r}"
    return None


def session_id_of_link(request: Request) -> str | None:
    """The confirmation page's session id from its cookie (``None``: none or malformed)."""
    value = request.cookies.get(LINK_SESSION_COOKIE)
    return value if value is not None and _SESSION.fullmatch(value) else None


def _form_identity(claims: LinkClaims) -> str:
    # The form token binds the recipient and the exact link, so one link's form never
    # confirms another's decision.
    digest = hashlib.sha256(
        "\0".join((claims.call_id, claims.request_id, claims.decision)).encode("utf-8")
    ).hexdigest()
    return f"email:{claims.recipient}:{digest}"


def _slack_payload(body: bytes) -> dict[str, Any] | None:
    try:
        form = parse_qs(body.decode("utf-8"), strict_parsing=False)
        payload = json.loads(form["payload"][0])
    except (UnicodeDecodeError, KeyError, IndexError, ValueError):
        return None
    return payload if isinstance(payload, dict) else None


def _post_response(url: str, message: dict[str, Any]) -> None:
    """POST ``message`` to a Slack ``response_url`` (only https://hooks.slack.com/ ones)."""
    if not url.startswith("https://hooks.slack.com/"):
        return
    request = urllib.request.Request(
        url,
        data=json.dumps(message).encode("utf-8"),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=5.0) as reply:
        reply.read()
