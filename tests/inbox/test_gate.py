"""The body is bounded before anything parses it.

The probe (issue #17 item 7): 1,500 form fields of 900 KiB each, every one under the per-field
cap, were all buffered before the form token and the call were checked (1.4 GB peak). Here the
same body is streamed from a generator that counts what the inbox pulls: the inbox answers 413
having read at most about :data:`MAX_BODY_BYTES`, and the call is untouched. The largest legal
answer still gets through.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import uuid
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from inbox.ask_tools import start_waiting
from scope_tool import MAX_INPUT_BYTES
from scope_tool.client import Phase, ToolCalls
from scope_tool.inbox import InboxAuth, InboxOptions, create_app, serve_inbox
from scope_tool.inbox.gate import MAX_BODY_BYTES, MAX_FORM_FIELDS

FIELD_BYTES = 900 << 10
FIELDS = 1500
CHUNK = 64 << 10
BASE = "http://127.0.0.1:8234"


class CountingBody:
    """The probe's form body (1,500 fields of 900 KiB), produced lazily; counts bytes pulled."""

    def __init__(self, fields: int = FIELDS, field_bytes: int = FIELD_BYTES) -> None:
        self.fields = fields
        self.field_bytes = field_bytes
        self.pulled = 0

    @property
    def total(self) -> int:
        return self.fields * (len("f0000=&") + self.field_bytes)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        filler = b"x" * CHUNK
        for index in range(self.fields):
            head = f"f{index:04d}=".encode()
            self.pulled += len(head)
            yield head
            left = self.field_bytes
            while left > 0:
                piece = filler[: min(CHUNK, left)]
                left -= len(piece)
                self.pulled += len(piece)
                yield piece
            self.pulled += 1
            yield b"&"


@pytest.fixture
def app(calls: ToolCalls, worker: Any) -> Any:
    return create_app(calls, auth=InboxAuth(dev_loopback=True))


def _client(app: Any) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 40000))
    return httpx.AsyncClient(transport=transport, base_url=BASE)


def _csrf(page: str) -> str:
    found = re.search(r'name="_csrf" value="([0-9a-f]+)"', page)
    assert found, "the call page has no form token"
    return found.group(1)


def test_the_limit_is_above_the_largest_legal_answer_percent_encoded() -> None:
    assert 3 * MAX_INPUT_BYTES < MAX_BODY_BYTES <= 8 << 20


async def test_a_streamed_oversize_form_is_refused_after_reading_about_the_limit(
    calls: ToolCalls, app: Any
) -> None:
    call_id = f"big-{uuid.uuid4()}"
    await start_waiting(calls, call_id, "Ship it?", {"type": "boolean"})
    body = CountingBody()
    async with _client(app) as http:
        response = await http.post(
            f"/calls/{call_id}/answer",
            headers={"Content-Type": "application/x-www-form-urlencoded"},
            content=body,
        )
    assert response.status_code == 413
    assert f"larger than {MAX_BODY_BYTES} bytes" in response.text
    assert body.pulled <= MAX_BODY_BYTES + CHUNK + 16  # not the 1.4 GB it offered
    assert body.total > 300 * MAX_BODY_BYTES
    after = await calls.get(call_id).status()
    assert after.phase is Phase.AWAITING_INPUT
    assert after.answers == ()


async def test_a_declared_oversize_body_is_refused_before_one_byte_is_read(app: Any) -> None:
    body = CountingBody()
    async with _client(app) as http:
        response = await http.post(
            "/api/calls/anything/answer",
            headers={"Content-Type": "application/json", "Content-Length": str(body.total)},
            content=body,
        )
    assert response.status_code == 413
    assert response.json()["reason"] == "too_large"
    assert body.pulled == 0


async def test_too_many_fields_are_refused_before_parsing(calls: ToolCalls, app: Any) -> None:
    call_id = f"fields-{uuid.uuid4()}"
    await start_waiting(calls, call_id, "Ship it?", {"type": "boolean"})
    many = "&".join(f"f{index}=" for index in range(MAX_FORM_FIELDS + 1))
    async with _client(app) as http:
        response = await http.post(
            f"/calls/{call_id}/answer",
            headers={"Content-Type": "application/x-www-form-urlencoded"},
            content=many,
        )
        assert response.status_code == 413
        assert f"at most {MAX_FORM_FIELDS}" in response.text
        boundary = "b0undary"
        parts = "".join(
            f'--{boundary}\r\nContent-Disposition: form-data; name="f{index}"\r\n\r\n\r\n'
            for index in range(MAX_FORM_FIELDS + 1)
        )
        multipart = await http.post(
            f"/calls/{call_id}/answer",
            headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
            content=parts + f"--{boundary}--\r\n",
        )
        assert multipart.status_code == 413
    assert (await calls.get(call_id).status()).answers == ()


async def test_the_largest_legal_answer_still_gets_through(calls: ToolCalls, app: Any) -> None:
    call_id = f"largest-{uuid.uuid4()}"
    status = await start_waiting(calls, call_id, "Paste the list", {"type": "array"})
    items = ["a"] * ((MAX_INPUT_BYTES - 64) // 4)  # '"a",' four bytes an item, ~1 MiB
    written = json.dumps(items, separators=(",", ":"))
    assert MAX_INPUT_BYTES - 128 < len(written) <= MAX_INPUT_BYTES
    async with _client(app) as http:
        page = (await http.get(f"/calls/{call_id}")).text
        form = {
            "_csrf": _csrf(page),
            "_request_id": status.pending.request_id,
            "_answer_json": written,
        }
        encoded = "&".join(f"{key}={quote(value, safe='')}" for key, value in form.items())
        assert len(encoded) > 2 * MAX_INPUT_BYTES  # quotes and commas percent-encoded
        sent = await http.post(
            f"/calls/{call_id}/answer",
            headers={"Content-Type": "application/x-www-form-urlencoded"},
            content=encoded,
        )
    assert sent.status_code == 303, sent.text[:500]
    handle = calls.get(call_id)
    # Too long for a status snapshot (STATUS_ANSWER_BYTES): it shows the size, the history
    # the exact text.
    assert (await handle.status()).answers[0].omitted_response_bytes == len(written)
    assert (await handle.history()).answers[0].response == written.encode()


async def test_the_served_inbox_answers_413_while_the_client_is_still_sending(
    calls: ToolCalls, worker: Any
) -> None:
    listening: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    serving = asyncio.create_task(
        serve_inbox(
            calls,
            InboxOptions(host="127.0.0.1", port=0, dev_loopback=True),
            on_listening=lambda _host, port: listening.set_result(port),
        )
    )
    try:
        port = await asyncio.wait_for(asyncio.shield(listening), timeout=10)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(
            f"POST /calls/x/answer HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            "Content-Type: application/x-www-form-urlencoded\r\n"
            "Transfer-Encoding: chunked\r\n\r\n".encode()
        )
        status_line = asyncio.create_task(reader.readline())
        chunk = b"x" * (1 << 20)
        sent = 0
        with contextlib.suppress(ConnectionError):
            while not status_line.done() and sent < 256 << 20:
                writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                await asyncio.wait_for(writer.drain(), timeout=10)
                sent += len(chunk)
                await asyncio.sleep(0)
        line = await asyncio.wait_for(status_line, timeout=10)
        writer.close()
        assert line.startswith(b"HTTP/1.1 413"), line
        assert sent < 64 << 20  # the server stopped reading near 4 MiB, not at 256 MiB
    finally:
        serving.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await serving
