"""What every request must pass before the inbox routes it: a known host, a same-origin change,
and a bounded body.

:class:`RequestGate` is ASGI middleware around the whole app, so nothing behind it (routing,
authentication, form parsing, the call) ever sees a request that fails these checks:

1. The ``Host`` header names a host in the :class:`~.hosts.AllowedHosts` (else 400,
   ``unknown_host``): the defence against DNS rebinding.
2. A change (any method but GET, HEAD, OPTIONS) comes from the inbox's own origin, judged by
   ``Origin`` or else ``Referer`` (else 403, ``cross_origin``).
3. A change's body is at most :data:`MAX_BODY_BYTES` (else 413, ``too_large``): a declared
   ``Content-Length`` above it is refused before one byte is read, and a body sent without one
   (chunked) is counted as it arrives and refused as soon as it passes the limit. The body is
   then held (at most the limit) and handed to the app, which parses it knowing its size.
4. A form body has at most :data:`MAX_FORM_FIELDS` fields (else 413, ``too_many_fields``),
   counted on the raw bytes before anything parses them.

Refusals are JSON ``{"error", "reason"}`` under ``/api/`` and plain text elsewhere.
"""

from __future__ import annotations

import json

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from scope_tool import MAX_INPUT_BYTES
from scope_tool.inbox.hosts import AllowedHosts, cross_origin_source

__all__ = ["MAX_BODY_BYTES", "MAX_FORM_FIELDS", "SAFE_METHODS", "RequestGate"]

MAX_BODY_BYTES = 3 * MAX_INPUT_BYTES + (1 << 20)
"""4 MiB: the largest legal answer (``MAX_INPUT_BYTES``, 1 MiB) percent-encoded at worst
(``%XX``, three bytes a byte) in a browser's form post, plus 1 MiB for the rest of the form."""

MAX_FORM_FIELDS = 1000
"""Fields in one form post; a generated answer form has one per schema property it shows."""

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
"""Methods that change nothing and so need no origin check and carry no body to bound."""

_FORM_TYPES = frozenset({"application/x-www-form-urlencoded", "multipart/form-data"})


class _Refusal(Exception):
    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.message = message


class RequestGate:
    """ASGI middleware: refuse unknown hosts, cross-site changes and oversized bodies.

    Args:
        app: The inbox app behind the gate.
        allowed_hosts: The host names the inbox answers to.
        max_body_bytes: Largest body of a change, in bytes.
        max_form_fields: Most fields in one form post.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        allowed_hosts: AllowedHosts,
        max_body_bytes: int = MAX_BODY_BYTES,
        max_form_fields: int = MAX_FORM_FIELDS,
    ) -> None:
        if max_body_bytes <= 0 or max_form_fields <= 0:
            raise ValueError(
                f"body limits must be positive, got max_body_bytes={max_body_bytes}, "
                f"max_form_fields={max_form_fields}"
            )
        self._app = app
        self._hosts = allowed_hosts
        self._max_body_bytes = max_body_bytes
        self._max_form_fields = max_form_fields

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        try:
            self._check_host(headers)
            if scope["method"] in SAFE_METHODS:
                await self._app(scope, receive, send)
                return
            self._check_origin(headers)
            body = await self._read_body(headers, receive)
            self._check_fields(headers, body)
        except _Refusal as refusal:
            await _refuse(scope, send, refusal)
            return
        await self._app(scope, _replay(body, receive), send)

    def _check_host(self, headers: Headers) -> None:
        host = headers.get("host", "")
        if not self._hosts.allows(host):
            raise _Refusal(400, "unknown_host", self._hosts.refusal(host))

    def _check_origin(self, headers: Headers) -> None:
        source = cross_origin_source(
            headers.get("origin"), headers.get("referer"), headers.get("host", "")
        )
        if source is not None:
            raise _Refusal(
                403,
                "cross_origin",
                f"refused: this request came from another site ({source}); the inbox only takes "
                f"changes from its own pages at {headers.get('host', '')}",
            )

    async def _read_body(self, headers: Headers, receive: Receive) -> bytes:
        too_large = _Refusal(
            413,
            "too_large",
            f"the request body is larger than {self._max_body_bytes} bytes "
            f"(an answer is at most {MAX_INPUT_BYTES} bytes of JSON)",
        )
        declared = headers.get("content-length")
        if declared is not None:
            if not declared.strip().isdigit():
                raise _Refusal(400, "bad_request", f"Content-Length is not a number: {declared!r}")
            if int(declared) > self._max_body_bytes:
                raise too_large
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise _Refusal(400, "bad_request", "the client went away while sending")
            body.extend(message.get("body", b""))
            if len(body) > self._max_body_bytes:
                raise too_large
            if not message.get("more_body", False):
                return bytes(body)

    def _check_fields(self, headers: Headers, body: bytes) -> None:
        media_type, _, parameters = headers.get("content-type", "").partition(";")
        media_type = media_type.strip().lower()
        if media_type not in _FORM_TYPES or not body:
            return
        if media_type == "multipart/form-data":
            boundary = _parameter(parameters, "boundary")
            fields = body.count(b"--" + boundary.encode("latin-1")) - 1 if boundary else 0
        else:  # python-multipart splits on both separators
            fields = body.count(b"&") + body.count(b";") + 1
        if fields > self._max_form_fields:
            raise _Refusal(
                413,
                "too_many_fields",
                f"the form has {fields} fields; at most {self._max_form_fields} are accepted",
            )


def _parameter(parameters: str, name: str) -> str:
    for item in parameters.split(";"):
        key, _, value = item.partition("=")
        if key.strip().lower() == name:
            return value.strip().strip('"')
    return ""


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives the app the held body once, then passes on to the client's."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def _refuse(scope: Scope, send: Send, refusal: _Refusal) -> None:
    if str(scope.get("path", "")).startswith("/api/"):
        content = json.dumps({"error": refusal.message, "reason": refusal.reason}).encode()
        content_type = b"application/json"
    else:
        content = (refusal.message + "\n").encode("utf-8")
        content_type = b"text/plain; charset=utf-8"
    await send(
        {
            "type": "http.response.start",
            "status": refusal.status,
            "headers": [
                (b"content-type", content_type),
                (b"content-length", str(len(content)).encode("ascii")),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": content})
