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
import json
import urllib.request
from collections.abc import Sequence

from temporalio import activity
from temporalio.exceptions import ApplicationError

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
        await asyncio.to_thread(_post, notice.url, body, headers)


notify = Notifier().notify
"""The activity without signing or an allow-list."""


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
    with urllib.request.urlopen(request, timeout=_TIMEOUT_SECONDS) as response:
        status = response.status
    if not 200 <= status < 300:
        raise RuntimeError(f"webhook {url} answered HTTP {status}")
