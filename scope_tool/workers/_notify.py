"""The ``scope_tool.notify`` activity: POST a small JSON notice to a call's webhook.

It runs inside a ``scope_tool.Notify`` child workflow the call abandons, once when a call starts
waiting for input and once when it ends. Failures are raised so Temporal retries them; a dead
webhook never changes or delays a call's outcome.

Operators control it on the worker: with a secret (``SCOPE_TOOL_NOTIFY_SECRET``) every body is
signed (``scope_tool.config.webhook``: HMAC-SHA256 over ``"<timestamp>." + body``), and with an
allow-list (``SCOPE_TOOL_NOTIFY_ALLOWED``) a URL outside it is refused without a request and
without retries, whatever the client that started the call allowed.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import urllib.request
from collections.abc import Sequence
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from scope_tool.config import webhook
from scope_tool.config.webhook import check_destination, parse_allowed, sign
from scope_tool.wire import NOTIFY_ACTIVITY, NotifyInput
from scope_tool.workflows._notify_workflow import NOTIFY_REFUSED

__all__ = ["Notifier", "notify"]

_TIMEOUT_SECONDS = 5.0


class Notifier:
    """The notify activity with the worker's signing secret and allowed destinations.

    Args:
        secret: signs every body (None: unsigned).
        allowed: URL prefixes notices may go to, or their comma-separated setting (empty: any).

    Raises:
        ValueError: an allow-list entry is not an http(s) URL, or the secret is empty.
    """

    def __init__(self, *, secret: str | None = None, allowed: str | Sequence[str] | None = None):
        if secret is not None and not secret:
            raise ValueError("the notify secret must be a non-empty string when given")
        self._secret = secret
        self._allowed = parse_allowed(allowed)

    @activity.defn(name=NOTIFY_ACTIVITY)
    async def notify(self, notice: NotifyInput) -> None:
        """POST ``{event, call_id, tool, phase, request_id, prompt}`` to ``notice.url``."""
        try:
            check_destination(notice.url, self._allowed)
        except ValueError as refused:
            raise ApplicationError(str(refused), type=NOTIFY_REFUSED, non_retryable=True) from None
        body = json.dumps(notice.to_json_dict(), separators=(",", ":")).encode("utf-8")
        headers = sign(self._secret, body) if self._secret is not None else {}
        try:
            await asyncio.to_thread(_post, notice.url, body, headers)
        except _RefusedPeer as refused:
            raise ApplicationError(str(refused), type=NOTIFY_REFUSED, non_retryable=True) from None


notify = Notifier().notify
"""The activity without signing or an allow-list."""


class _RefusedPeer(ValueError):
    """The connection reached a link-local or metadata address the URL did not name."""


def _check_peer(connection: http.client.HTTPConnection) -> None:
    """Refuse a connected socket whose address is link-local or metadata.

    The URL's host was checked as written (:func:`~scope_tool.config.webhook.check_destination`);
    a name can still resolve there, so the address actually connected to is checked too
    (no second lookup, so no DNS answer can change in between). A host that is itself such an
    address passed the check only because an allow-list entry names it: it is not re-refused.
    """
    if webhook.is_metadata_host(connection.host) or connection.sock is None:
        return
    address = str(connection.sock.getpeername()[0])
    if webhook.is_metadata_address(address.split("%", 1)[0]):
        connection.close()
        raise _RefusedPeer(
            f"notify_url host {connection.host!r} resolved to {address}, a link-local or cloud"
            " metadata address; refused (name the host in SCOPE_TOOL_NOTIFY_ALLOWED to allow it)"
        )


class _CheckedHTTP(http.client.HTTPConnection):
    def connect(self) -> None:
        super().connect()
        _check_peer(self)


class _CheckedHTTPS(http.client.HTTPSConnection):
    def connect(self) -> None:
        # Connect, check, then TLS: nothing is sent to a refused address, not even a hello.
        http.client.HTTPConnection.connect(self)
        _check_peer(self)
        server_hostname = self._tunnel_host or self.host  # type: ignore[attr-defined]
        self.sock = self._context.wrap_socket(  # type: ignore[attr-defined]
            self.sock, server_hostname=server_hostname
        )


class _HTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req: urllib.request.Request) -> Any:
        return self.do_open(_CheckedHTTP, req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req: urllib.request.Request) -> Any:
        return self.do_open(_CheckedHTTPS, req, context=self._context)  # type: ignore[attr-defined]


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A ``3xx`` is the webhook's answer, not a new destination (urllib would GET any
    ``Location``, outside the allow-list too)."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.OpenerDirector()
for _handler in (
    urllib.request.ProxyHandler(),
    urllib.request.UnknownHandler(),
    _HTTPHandler(),
    _HTTPSHandler(),
    _NoRedirects(),
    urllib.request.HTTPDefaultErrorHandler(),
    urllib.request.HTTPErrorProcessor(),
):
    # build_opener's handlers less ftp:, file: and data:, which would connect without the
    # connected-address check of _CheckedHTTP (third red-team pass of #25).
    _OPENER.add_handler(_handler)


def _post(url: str, body: bytes, signature: dict[str, str]) -> None:
    request = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "User-Agent": "scope-tool-notify/1",
            **signature,
        },
    )
    with _OPENER.open(request, timeout=_TIMEOUT_SECONDS) as response:
        status = response.status
    if not 200 <= status < 300:
        raise RuntimeError(f"webhook {url} answered HTTP {status}")
