"""The inbox behind a trusted proxy (``X-Forwarded-User``), as the identity tests drive it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx

from scope_tool.client import ToolCalls
from scope_tool.inbox import AllowedHosts, InboxAuth, create_app


@asynccontextmanager
async def proxied_inbox(calls: ToolCalls) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client on an inbox that takes who answers from the proxy's header."""
    app = create_app(
        calls,
        auth=InboxAuth(identity_header="X-Forwarded-User"),
        allowed_hosts=AllowedHosts.parse(["inbox.test"]),
    )
    transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 40000))
    async with httpx.AsyncClient(transport=transport, base_url="http://inbox.test") as http:
        yield http
