"""Channel fixtures: the identity secret, a real SMTP server, a Slack webhook stand-in, the inbox
served on loopback, and an in-process worker whose announcer sends to them.

The ``ask`` tool of the inbox tests asks whatever its arguments say (tests/inbox/ask_tools.py).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from inbox.ask_tools import REGISTRY

from channels._servers import Mailbox, SlackHook, slack_webhook, smtp_server
from scope_tool.client import ToolCalls, ToolCallsError
from scope_tool.config.channels import EmailSettings, SlackSettings
from scope_tool.inbox import InboxOptions, serve_inbox
from scope_tool.wire.identity import SECRET_VARIABLE, install_identity_secret
from scope_tool.workers import build_worker
from scope_tool.workers._channels import Announcer

SECRET = "channel-test-identity-secret-0123"
LOGIN_SECRET = "channel-test-login-secret-0123456"
DIRECTORY = {"alice": "alice@example.test", "bob": "bob@example.test"}
SENDER = "scope-tool@example.test"


@pytest.fixture
def calls(temporal_client: Any, task_queue: str) -> ToolCalls:
    return ToolCalls(temporal_client, task_queue=task_queue)


@pytest.fixture
def identity_secret(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """``SCOPE_TOOL_IDENTITY_SECRET`` for this test: workers and the inbox read it."""
    monkeypatch.setenv(SECRET_VARIABLE, SECRET)
    yield SECRET
    install_identity_secret(None)


@pytest.fixture
def mailbox() -> Iterator[Mailbox]:
    with smtp_server() as box:
        yield box


@pytest.fixture
def slack_hook() -> Iterator[SlackHook]:
    with slack_webhook() as hook:
        yield hook


@pytest.fixture
async def inbox_url(calls: ToolCalls, identity_secret: str) -> AsyncIterator[str]:
    """The inbox on a free loopback port (token sign-in; links need no sign-in)."""
    listening: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    serving = asyncio.create_task(
        serve_inbox(
            calls,
            InboxOptions(host="127.0.0.1", port=0, token_secret=LOGIN_SECRET),
            on_listening=lambda _host, port: listening.set_result(port),
        )
    )
    try:
        port = await asyncio.wait_for(asyncio.shield(listening), timeout=10)
        yield f"http://127.0.0.1:{port}"
    finally:
        serving.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await serving


def email_settings(mailbox: Mailbox, inbox_url: str, **changes: Any) -> EmailSettings:
    return EmailSettings(
        host="127.0.0.1",
        port=mailbox.port,
        starttls=False,
        sender=SENDER,
        directory=DIRECTORY,
        inbox_url=inbox_url,
        **changes,
    )


@pytest.fixture
async def worker(
    temporal_client: Any,
    task_queue: str,
    calls: ToolCalls,
    mailbox: Mailbox,
    slack_hook: SlackHook,
    inbox_url: str,
    tmp_path: Path,
) -> AsyncIterator[Any]:
    """An in-process worker sending to the test's SMTP server and Slack stand-in."""
    announcer = Announcer(
        email=email_settings(mailbox, inbox_url),
        slack=SlackSettings(webhook_url=slack_hook.url, inbox_url=inbox_url),
        identity_secret=SECRET.encode(),
        ledger=tmp_path / "ledger",
    )
    async with build_worker(
        temporal_client, REGISTRY, task_queue=task_queue, announcer=announcer
    ) as running:
        yield running
        query = (
            f"TaskQueue = '{task_queue}' AND ExecutionStatus = 'Running'"
            " AND WorkflowType = 'scope_tool.ToolCall'"
        )
        async for execution in temporal_client.list_workflows(query):
            with contextlib.suppress(ToolCallsError):
                await calls.get(execution.id).cancel()
