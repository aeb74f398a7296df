"""A worker SIGKILLed after the SMTP server accepted a message does not send it again.

The worker is a real ``python -m scope_tool.workers`` process configured by environment, as in
production. The SMTP server holds the worker's QUIT (the message is accepted, the session not
closed), the test SIGKILLs the worker there, a second worker takes the retried activity, finds
the ledger entry ``sent``, and sends nothing; the announcement completes.
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from pathlib import Path
from typing import Any

from helpers.waiting import wait_until
from helpers.workers import worker_process
from temporalio.client import Client

from channels._servers import Mailbox
from channels.conftest import SECRET, SENDER
from scope_tool import Request
from scope_tool.client import ToolCalls
from scope_tool.testing import wait_for_input


def _environment(mailbox: Mailbox, ledger: Path) -> dict[str, str]:
    return {
        "SCOPE_TOOL_IDENTITY_SECRET": SECRET,
        "SCOPE_TOOL_SMTP_HOST": "127.0.0.1",
        "SCOPE_TOOL_SMTP_PORT": str(mailbox.port),
        "SCOPE_TOOL_SMTP_STARTTLS": "0",
        "SCOPE_TOOL_EMAIL_FROM": SENDER,
        "SCOPE_TOOL_EMAIL_TO": "alice=alice@example.test",
        "SCOPE_TOOL_INBOX_PUBLIC_URL": "http://inbox.example.test",
        "SCOPE_TOOL_CHANNEL_LEDGER": str(ledger),
    }


async def test_a_worker_killed_after_sending_does_not_send_twice(
    temporal_address: str,
    temporal_client: Client,
    task_queue: str,
    mailbox: Mailbox,
    tmp_path: Path,
) -> None:
    mailbox.hold_quit = threading.Event()
    environment = _environment(mailbox, tmp_path / "ledger")
    calls = ToolCalls(temporal_client, task_queue=task_queue)
    call_id = f"crash-{uuid.uuid4().hex[:8]}"
    arguments = {"prompt": {"question": "Rotate the keys?"}, "schema": {"type": "boolean"}}
    async with worker_process(
        temporal_address,
        task_queue,
        tmp_path / "first.log",
        tools="inbox.ask_tools:REGISTRY",
        retry_safe=(),
        environment=environment,
    ) as first:
        handle = await calls.start(
            Request("ask", json.dumps(arguments)),
            call_id=call_id,
            allowed_answerers=("alice",),
            channels=("email",),
        )
        await wait_for_input(handle)
        # Accepted by the server, and the worker is waiting for QUIT's reply: kill it there.
        await asyncio.to_thread(mailbox.quit_reached.wait, 30)
        assert len(mailbox.messages) == 1
        first.kill()
    held, mailbox.hold_quit = mailbox.hold_quit, None
    held.set()

    announce = temporal_client.get_workflow_handle(f"{call_id}/announce/r1")
    async with worker_process(
        temporal_address,
        task_queue,
        tmp_path / "second.log",
        tools="inbox.ask_tools:REGISTRY",
        retry_safe=(),
        environment=environment,
    ):
        # The lost attempt times out (heartbeat, 5 s) and the retry runs on this worker.
        await asyncio.wait_for(announce.result(), timeout=60)
        described: Any = await announce.describe()
        assert described.status.name == "COMPLETED"
        history = [event async for event in announce.fetch_history_events()]
        attempts = [
            e.activity_task_started_event_attributes.attempt
            for e in history
            if e.HasField("activity_task_started_event_attributes")
        ]
        assert attempts
        assert max(attempts) >= 2
        await wait_until(lambda: mailbox.quit_reached.is_set())
        assert len(mailbox.messages) == 1, [m["Message-ID"] for m in mailbox.messages]
        await handle.cancel()
