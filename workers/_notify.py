"""The ``scope_tool.notify`` activity: POST a small JSON notice to a call's webhook.

It runs when a call starts waiting for input and when it ends. Failures are raised so Temporal
retries them (bounded by the workflow's retry policy); the workflow then notes a final failure
in the call's status and carries on, so a dead webhook never changes a call's outcome.
"""

from __future__ import annotations

import asyncio
import json
import urllib.request

from temporalio import activity

from workflows.wire import NOTIFY_ACTIVITY, NotifyInput

__all__ = ["notify"]

_TIMEOUT_SECONDS = 5.0


@activity.defn(name=NOTIFY_ACTIVITY)
async def notify(notice: NotifyInput) -> None:
    """POST ``{event, call_id, tool, phase, request_id, prompt}`` to ``notice.url``."""
    body = json.dumps(notice.to_json_dict(), separators=(",", ":")).encode("utf-8")
    await asyncio.to_thread(_post, notice.url, body)


def _post(url: str, body: bytes) -> None:
    request = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={"Content-Type": "application/json", "User-Agent": "scope-tool-notify/1"},
    )
    with urllib.request.urlopen(request, timeout=_TIMEOUT_SECONDS) as response:
        status = response.status
    if not 200 <= status < 300:
        raise RuntimeError(f"webhook {url} answered HTTP {status}")
