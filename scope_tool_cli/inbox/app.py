"""The inbox web app: calls waiting for a person, one page per call, answers through the update.

Pages: ``/`` lists the calls awaiting input (newest question first); ``/calls/{id}`` shows one
call's question, its rounds so far and the answer form generated from the response schema.
A form answer is converted (:mod:`.form_values`) and sent with ``handle.answer`` and the pending
``request_id``, so the workflow's validator is the judge: a refusal (schema, stale question, not
an allowed answerer) comes back onto the same page next to the form, with the values kept.

JSON API: ``GET /api/pending``, ``GET /api/calls/{id}``, ``POST /api/calls/{id}/answer`` with
``{"response": ..., "request_id": optional}``. Every route but ``/static`` needs an identity
(:mod:`.auth`); the identity is what is recorded as ``answered_by``.

Cross-site requests cannot answer: form posts carry a token bound to the identity (HMAC) and a
foreign ``Origin`` is refused; the API takes only ``application/json`` bodies, which browsers
will not send cross-origin without a CORS preflight the inbox never grants.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote, urlencode, urlsplit

import jinja2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates
from temporalio.service import RPCError

from scope_tool_cli.inbox.auth import (
    AS_COOKIE,
    TOKEN_COOKIE,
    AuthenticationError,
    InboxAuth,
    verify_token,
)
from scope_tool_cli.inbox.form_values import (
    ANSWER_JSON_KEY,
    VIA_JSON,
    VIA_KEY,
    AnswerFormError,
    FieldProblem,
    answer_from_form,
)
from scope_tool_cli.inbox.forms import FormKind, build_answer_form
from scope_tool_cli.inbox.views import (
    call_fingerprint,
    call_json,
    call_path,
    pending_fingerprint,
    pending_json,
    prompt_view,
    relative_time,
)
from workflows import (
    AnswerRejectedError,
    CallNotFoundError,
    CallStatus,
    CallSummary,
    Phase,
    ToolCalls,
    ToolCallsError,
)

__all__ = ["create_app"]

_HERE = Path(__file__).parent
_CSRF_KEY = "_csrf"
_REQUEST_ID_KEY = "_request_id"
_STATUS_TIMEOUT_SECONDS = 10.0
_LIST_STATUS_TIMEOUT_SECONDS = 3.0
_UNREADABLE_RETRY_SECONDS = 30.0
_MAX_PARALLEL_QUERIES = 16
_MAX_API_BODY_BYTES = 2 << 20
"""Twice the protocol's MAX_INPUT_BYTES: room for the envelope, a cap for everything else."""
_REFUSAL_STATUS = {"not_allowed": 403, "stale_request": 409, "not_waiting": 409, "finished": 409}

Endpoint = Callable[[Request], Awaitable[Response]]


def create_app(
    calls: ToolCalls, *, auth: InboxAuth, refresh_seconds: float = 2.0, limit: int = 100
) -> Starlette:
    """Build the inbox as an ASGI app (serve it with uvicorn, or test it with httpx).

    Args:
        calls: The client facade the inbox reads and answers through.
        auth: How people are identified (see :class:`~scope_tool_cli.inbox.auth.InboxAuth`).
        refresh_seconds: How often open pages poll the API for changes.
        limit: At most this many waiting calls are listed.
    """
    if refresh_seconds <= 0:
        raise ValueError(f"refresh_seconds must be positive, got {refresh_seconds}")
    inbox = _Inbox(calls, auth=auth, refresh_seconds=refresh_seconds, limit=limit)
    return Starlette(
        routes=[
            Route("/", inbox.guarded(inbox.list_page), methods=["GET"]),
            Route(
                "/calls/{call_id:path}/answer", inbox.guarded(inbox.answer_form), methods=["POST"]
            ),
            Route("/calls/{call_id:path}", inbox.guarded(inbox.call_page), methods=["GET"]),
            Route("/api/pending", inbox.guarded(inbox.api_pending), methods=["GET"]),
            Route(
                "/api/calls/{call_id:path}/answer",
                inbox.guarded(inbox.api_answer),
                methods=["POST"],
            ),
            Route("/api/calls/{call_id:path}", inbox.guarded(inbox.api_call), methods=["GET"]),
            Mount("/static", StaticFiles(directory=_HERE / "static"), name="static"),
        ]
    )


class _Inbox:
    def __init__(
        self, calls: ToolCalls, *, auth: InboxAuth, refresh_seconds: float, limit: int
    ) -> None:
        self._calls = calls
        self._auth = auth
        self._refresh_ms = int(refresh_seconds * 1000)
        self._limit = limit
        self._unreadable_until: dict[str, float] = {}
        secret = auth.token_secret.encode("utf-8") if auth.token_secret else secrets.token_bytes(32)
        self._csrf_secret = hashlib.sha256(b"scope-tool inbox csrf\0" + secret).digest()
        environment = jinja2.Environment(
            loader=jinja2.FileSystemLoader(_HERE / "templates"),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
        )
        environment.globals["relative_time"] = relative_time
        environment.globals["call_path"] = call_path
        self._templates = Jinja2Templates(env=environment)

    # -- identity ---------------------------------------------------------------------------

    def guarded(self, endpoint: Callable[[Request, str], Awaitable[Response]]) -> Endpoint:
        """Wrap an endpoint so it only runs for an identified person (else 401)."""

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
        return self._templates.TemplateResponse(
            request, "unauthorized.html", {"message": message}, status_code=401
        )

    def _csrf_token(self, identity: str) -> str:
        return hmac.new(self._csrf_secret, identity.encode("utf-8"), hashlib.sha256).hexdigest()

    def _foreign_origin(self, request: Request) -> str | None:
        """The ``Origin`` of a cross-site post, or None when same-site (or not sent).

        Only the host is compared, since a TLS-terminating proxy makes the scheme differ.
        """
        origin = request.headers.get("origin")
        if origin is None:
            return None
        host = urlsplit(origin).netloc if origin != "null" else ""
        return None if host and host == request.headers.get("host", "") else origin

    # -- reading calls ----------------------------------------------------------------------

    async def _status(self, call_id: str) -> CallStatus:
        async with asyncio.timeout(_STATUS_TIMEOUT_SECONDS):
            return await self._calls.get(call_id).status()

    async def _waiting(self) -> tuple[list[CallStatus], list[CallSummary]]:
        """Calls waiting now (newest question first), and those whose status cannot be read.

        A call whose worker is down does not answer its status query (the server waits up to
        half a minute), so one such call must not stall every page: statuses are read in
        parallel with a short timeout, and a call that timed out is not asked again for a while.
        """
        summaries = await self._calls.list(phase=Phase.AWAITING_INPUT, limit=self._limit)
        gate = asyncio.Semaphore(_MAX_PARALLEL_QUERIES)
        now = time.monotonic()

        async def read(call_id: str) -> CallStatus | None:
            if self._unreadable_until.get(call_id, 0.0) > now:
                return None
            async with gate:
                try:
                    async with asyncio.timeout(_LIST_STATUS_TIMEOUT_SECONDS):
                        status = await self._calls.get(call_id).status()
                except (ToolCallsError, TimeoutError):
                    self._unreadable_until[call_id] = time.monotonic() + _UNREADABLE_RETRY_SECONDS
                    return None
            self._unreadable_until.pop(call_id, None)
            return status

        statuses = await asyncio.gather(*(read(summary.call_id) for summary in summaries))
        unreadable = [
            summary for summary, status in zip(summaries, statuses, strict=True) if status is None
        ]
        waiting = [status for status in statuses if status is not None and status.pending]
        waiting.sort(key=_asked_at, reverse=True)
        live = {summary.call_id for summary in summaries}
        for call_id in [known for known in self._unreadable_until if known not in live]:
            del self._unreadable_until[call_id]
        return waiting, unreadable

    # -- pages ------------------------------------------------------------------------------

    async def list_page(self, request: Request, identity: str) -> Response:
        try:
            waiting, unreadable = await self._waiting()
            problem = ""
        except (ToolCallsError, RPCError) as error:
            waiting, unreadable, problem = [], [], str(error)
        rows = [
            {
                "status": status,
                "pending": status.pending,
                "prompt": prompt_view(status.pending.prompt),
            }
            for status in waiting
            if status.pending is not None
        ]
        fingerprint = pending_fingerprint(
            [status.pending.request_id for status in waiting if status.pending is not None]
        )
        return self._templates.TemplateResponse(
            request,
            "list.html",
            {
                "identity": identity,
                "rows": rows,
                "unreadable": unreadable,
                "problem": problem,
                "poll_url": "/api/pending",
                "page_url": "/",
                "fingerprint": fingerprint,
                "refresh_ms": self._refresh_ms,
            },
        )

    async def call_page(
        self,
        request: Request,
        identity: str,
        *,
        values: dict[str, list[str]] | None = None,
        refusal: str = "",
        problems: tuple[FieldProblem, ...] = (),
        status_code: int = 200,
    ) -> Response:
        call_id = request.path_params["call_id"]
        try:
            status = await self._status(call_id)
        except CallNotFoundError as error:
            return self._problem_page(request, identity, str(error), 404)
        except (ToolCallsError, TimeoutError) as error:
            message = (
                str(error) or "the call's status did not come back in time (is a worker running?)"
            )
            return self._problem_page(request, identity, message, 502)
        pending = status.pending
        form = build_answer_form(pending.response_schema) if pending is not None else None
        # Shown when the runtime reports it (a CallStatus field added later keeps working here).
        allowed = tuple(getattr(status, "allowed_answerers", ()) or ())
        answered = request.query_params.get("answered", "")
        return self._templates.TemplateResponse(
            request,
            "call.html",
            {
                "identity": identity,
                "status": status,
                "pending": pending,
                "prompt": prompt_view(pending.prompt) if pending is not None else None,
                "form": form,
                "values": values or {},
                "submitted": (values or {}).get("_form") == ["fields"],
                "problems": {problem.name: problem.message for problem in problems},
                "problem_list": problems,
                "refusal": refusal,
                "answered": answered,
                "allowed": allowed,
                "may_answer": not allowed or identity in allowed,
                "csrf": self._csrf_token(identity),
                "answer_url": call_path(call_id) + "/answer",
                "poll_url": "/api" + call_path(call_id),
                "page_url": call_path(call_id),
                "fingerprint": call_fingerprint(status),
                "refresh_ms": self._refresh_ms,
                "outcome_text": status.outcome.output.text() if status.outcome else None,
                "answer_text": {a.request_id: _pretty(a.response) for a in status.answers},
            },
            status_code=status_code,
        )

    def _problem_page(self, request: Request, identity: str, message: str, code: int) -> Response:
        return self._templates.TemplateResponse(
            request,
            "problem.html",
            {"identity": identity, "message": message},
            status_code=code,
        )

    async def answer_form(self, request: Request, identity: str) -> Response:
        call_id = request.path_params["call_id"]
        async with request.form(max_files=0, max_fields=2000) as form_data:
            values: dict[str, list[str]] = {}
            for key, item in form_data.multi_items():
                if isinstance(item, str):
                    values.setdefault(key, []).append(item)

        def again(
            refusal: str, code: int, problems: tuple[FieldProblem, ...] = ()
        ) -> Awaitable[Response]:
            return self.call_page(
                request,
                identity,
                values=values,
                refusal=refusal,
                problems=problems,
                status_code=code,
            )

        foreign = self._foreign_origin(request)
        if foreign is not None:
            return await again(f"refused: this form was posted from another site ({foreign})", 403)
        sent_csrf = (values.get(_CSRF_KEY) or [""])[0]
        if not hmac.compare_digest(sent_csrf, self._csrf_token(identity)):
            return await again(
                "the form's security token is stale (the inbox restarted or you signed in as "
                "someone else); check the values and send again",
                403,
            )
        request_id = (values.get(_REQUEST_ID_KEY) or [""])[0]
        try:
            status = await self._status(call_id)
        except CallNotFoundError as error:
            return self._problem_page(request, identity, str(error), 404)
        except (ToolCallsError, TimeoutError) as error:
            return await again(f"could not read the call: {error or 'timed out'}", 502)
        if status.pending is None or status.pending.request_id != request_id:
            return await again(
                "this question is no longer pending (someone else answered it, or it expired); "
                "nothing was sent",
                409,
            )
        form = build_answer_form(status.pending.response_schema)
        try:
            answer = answer_from_form(form, values)
        except AnswerFormError as error:
            return await again("some values need fixing; nothing was sent", 422, error.problems)
        if form.kind is FormKind.JSON or values.get(VIA_KEY) == [VIA_JSON]:
            # Sent as written: the workflow sees the person's exact JSON text.
            payload = (values.get(ANSWER_JSON_KEY) or [""])[0].encode("utf-8")
        else:
            payload = _json_bytes(answer)
        try:
            await self._calls.get(call_id).answer(
                payload, request_id=request_id, answered_by=identity
            )
        except AnswerRejectedError as error:
            return await again(_refusal_text(error), _REFUSAL_STATUS.get(error.reason, 422))
        except ToolCallsError as error:
            return await again(f"the answer could not be delivered: {error}", 502)
        target = f"{call_path(call_id)}?answered={quote(request_id, safe='')}"
        return RedirectResponse(target, status_code=303)

    # -- JSON API ---------------------------------------------------------------------------

    async def api_pending(self, request: Request, identity: str) -> Response:
        try:
            waiting, unreadable = await self._waiting()
        except (ToolCallsError, RPCError) as error:
            return JSONResponse({"error": str(error), "reason": "unavailable"}, status_code=502)
        entries = [pending_json(s, s.pending) for s in waiting if s.pending is not None]
        return JSONResponse(
            {
                "identity": identity,
                "calls": entries,
                "unreadable": [
                    {
                        "call_id": summary.call_id,
                        "tool": summary.tool,
                        "started_at": summary.started_at.isoformat(),
                        "url": call_path(summary.call_id),
                    }
                    for summary in unreadable
                ],
                "fingerprint": pending_fingerprint([entry["request_id"] for entry in entries]),
            }
        )

    async def api_call(self, request: Request, identity: str) -> Response:
        try:
            status = await self._status(request.path_params["call_id"])
        except CallNotFoundError as error:
            return JSONResponse({"error": str(error), "reason": "not_found"}, status_code=404)
        except (ToolCallsError, TimeoutError) as error:
            message = str(error) or "status timed out"
            return JSONResponse({"error": message, "reason": "unavailable"}, status_code=502)
        return JSONResponse(call_json(status))

    async def api_answer(self, request: Request, identity: str) -> Response:
        call_id = request.path_params["call_id"]
        foreign = self._foreign_origin(request)
        if foreign is not None:
            return _api_error(f"cross-site request from {foreign} refused", "forbidden", 403)
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return _api_error("send the answer as application/json", "bad_request", 415)
        raw = bytearray()
        async for chunk in request.stream():
            raw.extend(chunk)
            if len(raw) > _MAX_API_BODY_BYTES:
                message = f"the body is larger than {_MAX_API_BODY_BYTES} bytes"
                return _api_error(message, "too_large", 413)
        try:
            body = json.loads(raw)
        except ValueError as error:
            return _api_error(f"the body is not JSON ({error})", "bad_request", 400)
        if not isinstance(body, dict) or "response" not in body:
            return _api_error(
                'the body must be {"response": ..., "request_id": ...}', "bad_request", 400
            )
        request_id = body.get("request_id")
        if request_id is not None and not isinstance(request_id, str):
            return _api_error("request_id must be a string", "bad_request", 400)
        handle = self._calls.get(call_id)
        try:
            if request_id is None:
                status = await self._status(call_id)
                if status.pending is None:
                    return _api_error(
                        f"call {call_id!r} is not waiting for an answer ({status.phase})",
                        "not_waiting",
                        409,
                    )
                request_id = status.pending.request_id
            receipt = await handle.answer(
                _json_bytes(body["response"]), request_id=request_id, answered_by=identity
            )
        except AnswerRejectedError as error:
            return _api_error(
                _refusal_text(error), error.reason, _REFUSAL_STATUS.get(error.reason, 422)
            )
        except CallNotFoundError as error:
            return _api_error(str(error), "not_found", 404)
        except (ToolCallsError, TimeoutError) as error:
            return _api_error(str(error) or "timed out", "unavailable", 502)
        return JSONResponse(
            {
                "accepted": True,
                "call_id": call_id,
                "request_id": receipt.request_id,
                "round": receipt.round,
                "duplicate": receipt.duplicate,
                "answered_by": identity,
            }
        )


def _asked_at(status: CallStatus) -> datetime:
    return (
        status.pending.asked_at if status.pending is not None else datetime.min.replace(tzinfo=UTC)
    )


def _api_error(message: str, reason: str, code: int) -> JSONResponse:
    return JSONResponse({"error": message, "reason": reason}, status_code=code)


def _refusal_text(error: AnswerRejectedError) -> str:
    if error.reason == "not_allowed":
        return f"you are not allowed to answer this call: {error}"
    text = str(error)
    # The validator's message quotes the whole schema before the violation; the page already
    # shows the schema, so the person gets the violation itself.
    marker = "validate value: "
    if error.reason == "schema" and marker in text:
        return f"the call refused this answer (schema): {text.rsplit(marker, 1)[1]}"
    return f"the call refused this answer: {text}"


def _json_bytes(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _pretty(raw: bytes) -> str:
    try:
        return json.dumps(json.loads(raw), indent=2, ensure_ascii=False)
    except ValueError:
        return raw.decode("utf-8", "replace")
