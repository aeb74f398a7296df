"""Signed webhooks and allowed destinations (issue 17 item 6), against a real server."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
from helpers.waiting import wait_for_phase, wait_until, wait_until_async

from runtime.example_tools import REGISTRY
from scope_tool import Request
from scope_tool.client import CallNotFoundError, Phase, ToolCalls
from scope_tool.config.settings import Settings
from scope_tool.config.webhook import (
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    check_destination,
    parse_allowed,
    sign,
    verify,
)
from scope_tool.workers import build_worker

SECRET = "s3cret-shared-with-the-receiver"


class _Receiver:
    """Keeps each POST's raw body and headers, exactly as received."""

    def __init__(self) -> None:
        self.posts: list[tuple[bytes, dict[str, str]]] = []
        posts = self.posts

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                posts.append((body, dict(self.headers.items())))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def receiver() -> Iterator[_Receiver]:
    receiver = _Receiver()
    thread = threading.Thread(target=receiver.server.serve_forever, daemon=True)
    thread.start()
    yield receiver
    receiver.server.shutdown()
    receiver.server.server_close()


def _plan(tmp_path: Path) -> Request:
    arguments = json.dumps({"ledger": str(tmp_path / "ledger"), "service": "web"})
    return Request(name="deploy_plan", arguments=arguments)


async def test_notices_are_signed_and_a_tampered_body_fails(
    temporal_client: Any, task_queue: str, receiver: _Receiver, tmp_path: Path
) -> None:
    calls = ToolCalls(temporal_client, task_queue=task_queue)
    async with build_worker(temporal_client, REGISTRY, task_queue=task_queue, notify_secret=SECRET):
        handle = await calls.start(
            _plan(tmp_path), call_id=f"signed-{uuid.uuid4()}", notify_url=f"{receiver.base}/hook"
        )
        await wait_for_phase(handle, Phase.AWAITING_INPUT)
        await wait_until(lambda: len(receiver.posts) == 1)
    body, headers = receiver.posts[0]
    assert json.loads(body)["event"] == "awaiting_input"
    assert headers[SIGNATURE_HEADER].startswith("v1=")
    assert verify(SECRET, body, headers)
    assert not verify(SECRET, body.replace(b"AWAITING_INPUT", b"COMPLETED"), headers)
    assert not verify("another secret", body, headers)
    stamp = int(headers[TIMESTAMP_HEADER])
    assert not verify(SECRET, body, headers, now=stamp + 301)  # a replay, too late
    assert not verify(SECRET, body, {**headers, TIMESTAMP_HEADER: str(stamp + 1)})


def test_sign_and_verify_agree_and_refuse_what_they_should() -> None:
    body = b'{"event":"finished"}'
    headers = sign(SECRET, body, timestamp=1_767_225_600)
    assert verify(SECRET, body, headers, now=1_767_225_600)
    assert verify(SECRET, body, {k.lower(): v for k, v in headers.items()}, now=1_767_225_600)
    assert not verify(SECRET, body, {}, now=1_767_225_600)
    assert not verify(SECRET, body, {**headers, SIGNATURE_HEADER: "v1=00"}, now=1_767_225_600)
    with pytest.raises(ValueError, match="non-empty"):
        sign("", body)


def test_the_allow_list_matches_scheme_host_port_and_path() -> None:
    allowed = parse_allowed("https://hooks.example.com/scope/, http://127.0.0.1:8080/")
    check_destination("https://hooks.example.com/scope/calls", allowed)
    check_destination("https://hooks.example.com:443/scope/x", allowed)
    check_destination("http://127.0.0.1:8080/anything", allowed)
    for refused in (
        "https://hooks.example.com/other",
        "https://hooks.example.com.evil.example/scope/",
        "http://hooks.example.com/scope/",
        "http://127.0.0.1:8081/",
        "https://evil.example/?https://hooks.example.com/scope/",
    ):
        with pytest.raises(ValueError, match="is not allowed"):
            check_destination(refused, allowed)
    with pytest.raises(ValueError, match="must be an http"):
        parse_allowed("ftp://files.example.com/")
    check_destination("http://anywhere.example/", parse_allowed(None))


async def test_a_url_outside_the_allow_list_is_refused_at_start(
    temporal_client: Any, task_queue: str
) -> None:
    calls = ToolCalls(
        temporal_client, task_queue=task_queue, notify_allowed="https://hooks.example.com/scope/"
    )
    call_id = f"refused-{uuid.uuid4()}"
    with pytest.raises(ValueError, match="is not allowed"):
        await calls.start(
            Request(name="echo", arguments='{"text": "x"}'),
            call_id=call_id,
            notify_url="http://169.254.169.254/latest/meta-data",
        )
    with pytest.raises(CallNotFoundError):
        await calls.get(call_id).status()  # nothing was started


async def test_settings_carry_the_allow_list_to_the_facade(temporal_address: str) -> None:
    settings = Settings.from_env(
        {
            "SCOPE_TOOL_ADDRESS": temporal_address,
            "SCOPE_TOOL_NOTIFY_ALLOWED": "https://hooks.example.com/",
            "SCOPE_TOOL_NOTIFY_SECRET": SECRET,
        }
    )
    assert settings.notify_secret == SECRET
    assert settings.to_env()["SCOPE_TOOL_NOTIFY_ALLOWED"] == "https://hooks.example.com/"
    calls = await ToolCalls.from_settings(settings)
    with pytest.raises(ValueError, match="is not allowed"):
        await calls.start(
            Request(name="echo", arguments='{"text": "x"}'),
            call_id=f"refused-{uuid.uuid4()}",
            notify_url="http://127.0.0.1:9/",
        )


async def test_the_worker_refuses_a_url_outside_its_allow_list(
    temporal_client: Any, task_queue: str, receiver: _Receiver, tmp_path: Path
) -> None:
    """A client without the setting cannot make the worker POST elsewhere."""
    calls = ToolCalls(temporal_client, task_queue=task_queue)
    async with build_worker(
        temporal_client,
        REGISTRY,
        task_queue=task_queue,
        notify_allowed="https://hooks.example.com/",
    ):
        handle = await calls.start(
            _plan(tmp_path), call_id=f"wrefused-{uuid.uuid4()}", notify_url=f"{receiver.base}/x"
        )
        await wait_for_phase(handle, Phase.AWAITING_INPUT)

        async def noted() -> bool:
            return bool((await handle.status()).notify_errors)

        await wait_until_async(noted)
        errors = (await handle.status()).notify_errors
        assert "is not allowed" in errors[0], errors
        await handle.answer({"approve": False})
        assert (await handle.result()).phase is Phase.COMPLETED
    assert receiver.posts == []  # no request was ever made


def test_the_documented_stdlib_recipe_verifies_what_the_worker_signs() -> None:
    page = (Path(__file__).parents[2] / "docs" / "reliability.md").read_text(encoding="utf-8")
    section = page.split("### Webhooks a receiver can trust", 1)[1]
    recipe = section.split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict[str, Any] = {}
    exec(compile(recipe, "reliability.md recipe", "exec"), namespace)
    documented = namespace["verify"]
    body = b'{"event":"finished","phase":"COMPLETED"}'
    headers = sign(SECRET, body)
    assert documented(SECRET, body, headers)
    assert not documented(SECRET, body.replace(b"COMPLETED", b"FAILED"), headers)
    assert not documented("wrong", body, headers)
    assert not documented(SECRET, body, sign(SECRET, body, timestamp=1_000_000_000))
