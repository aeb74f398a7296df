"""Webhook notifications: sent when a call waits and when it ends; a dead webhook changes nothing."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
from helpers.waiting import wait_for_phase, wait_until, wait_until_async
from temporalio.client import WorkflowFailureError

from runtime.example_tools import ledger_lines
from scope_tool import Request
from scope_tool.client import Phase, ToolCalls


class _Receiver:
    def __init__(self) -> None:
        self.notices: list[dict[str, Any]] = []
        received = self.notices

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers["Content-Length"])
                received.append(json.loads(self.rfile.read(length)))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"


@pytest.fixture
def receiver() -> Iterator[_Receiver]:
    receiver = _Receiver()
    thread = threading.Thread(target=receiver.server.serve_forever, daemon=True)
    thread.start()
    yield receiver
    receiver.server.shutdown()
    receiver.server.server_close()


def _dead_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/nobody-listens"


async def test_notified_when_waiting_and_when_finished(
    calls: ToolCalls, worker: Any, receiver: _Receiver, tmp_path: Path
) -> None:
    request = Request(
        name="deploy_plan",
        arguments=json.dumps({"ledger": str(tmp_path / "ledger"), "service": "web"}),
    )
    handle = await calls.start(request, call_id=f"hook-{uuid.uuid4()}", notify_url=receiver.url)
    await wait_for_phase(handle, Phase.AWAITING_INPUT)
    await wait_until(lambda: len(receiver.notices) == 1)
    waiting = receiver.notices[0]
    assert waiting == {
        "event": "awaiting_input",
        "call_id": handle.call_id,
        "tool": "deploy_plan",
        "phase": "AWAITING_INPUT",
        "request_id": f"{handle.call_id}/r1",
        "prompt": {"question": "approve this plan?", "plan": {"service": "web", "replicas": 3}},
    }
    await handle.answer({"approve": False})
    outcome = await handle.result()
    assert outcome.phase is Phase.COMPLETED
    await wait_until(lambda: len(receiver.notices) == 2)  # delivered apart from the outcome
    assert receiver.notices[1] == {
        "event": "finished",
        "call_id": handle.call_id,
        "tool": "deploy_plan",
        "phase": "COMPLETED",
        "request_id": None,
        "prompt": None,
    }
    assert (await handle.status()).notify_errors == ()


async def test_a_dead_webhook_changes_nothing_and_delays_nothing(
    calls: ToolCalls, worker: Any, tmp_path: Path
) -> None:
    """Issue 17 item 6: result() used to come 15 s after the answer (the retry schedule)."""
    ledger = tmp_path / "ledger"
    request = Request(
        name="deploy_plan", arguments=json.dumps({"ledger": str(ledger), "service": "web"})
    )
    handle = await calls.start(request, call_id=f"dead-{uuid.uuid4()}", notify_url=_dead_url())
    await wait_for_phase(handle, Phase.AWAITING_INPUT)

    async def waiting_notice_failed() -> bool:
        return any(e.startswith("awaiting_input:") for e in (await handle.status()).notify_errors)

    await wait_until_async(waiting_notice_failed)  # recorded while the call still runs
    began = time.monotonic()
    await handle.answer({"approve": False})
    outcome = await handle.result()
    took = time.monotonic() - began
    assert took < 1.5, f"result() took {took:.2f} s after the answer"
    assert outcome.phase is Phase.COMPLETED
    assert outcome.output.text() == "the plan was not approved; nothing written"
    assert ledger_lines(ledger) == ["plan"]
    status = await handle.status()
    assert [error.split(":")[0] for error in status.notify_errors] == ["awaiting_input"]
    assert "refused" in status.notify_errors[0], status.notify_errors
    # The finished notice goes on being retried by its own workflow, and fails there.
    finished = calls.client.get_workflow_handle(f"{handle.call_id}/notify/finished/r2")
    with pytest.raises(WorkflowFailureError):
        await asyncio.wait_for(finished.result(), timeout=30)


async def test_a_cancelled_call_still_notifies_its_end(
    calls: ToolCalls, worker: Any, receiver: _Receiver, tmp_path: Path
) -> None:
    request = Request(
        name="deploy_plan",
        arguments=json.dumps({"ledger": str(tmp_path / "ledger"), "service": "web"}),
    )
    handle = await calls.start(request, call_id=f"hookc-{uuid.uuid4()}", notify_url=receiver.url)
    await wait_for_phase(handle, Phase.AWAITING_INPUT)
    await handle.cancel()
    assert (await handle.result()).phase is Phase.CANCELLED
    await wait_until(lambda: len(receiver.notices) == 2)
    assert [(n["event"], n["phase"]) for n in receiver.notices] == [
        ("awaiting_input", "AWAITING_INPUT"),
        ("finished", "CANCELLED"),
    ]
