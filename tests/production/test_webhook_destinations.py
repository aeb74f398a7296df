"""Where a webhook may be POSTed: one rule for every entry point (#25 item 12)."""

from __future__ import annotations

import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError

from scope_tool import Request
from scope_tool.client import ToolCalls
from scope_tool.config import webhook
from scope_tool.config.webhook import check_destination, parse_allowed
from scope_tool.wire import NotifyInput
from scope_tool.workers import Notifier


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://[::ffff:169.254.169.254]/",
        "http://[::ffff:a9fe:a9fe]/",
        "http://[fe80::1]/hook",
        "http://[fd00:ec2::254]/",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://100.100.100.200/",
    ],
)
def test_link_local_and_metadata_destinations_are_refused_by_default(url: str) -> None:
    with pytest.raises(ValueError, match="link-local or cloud metadata"):
        check_destination(url, ())


def test_an_allow_list_entry_naming_such_a_host_allows_it() -> None:
    check_destination("http://169.254.10.1/hook", parse_allowed("http://169.254.10.1/"))


@pytest.mark.parametrize(
    "url",
    [
        "https://hooks.example.com/hooks/../admin",
        "https://hooks.example.com/hooks/%2e%2e/admin",
        "https://hooks.example.com/hooks/.%2E/admin",
        "https://hooks.example.com/hooks/./../admin",
    ],
)
def test_dot_segments_are_resolved_before_the_prefix_is_matched(url: str) -> None:
    with pytest.raises(ValueError, match="not allowed"):
        check_destination(url, parse_allowed("https://hooks.example.com/hooks/"))


def test_a_path_that_stays_under_the_prefix_is_allowed() -> None:
    allowed = parse_allowed("https://hooks.example.com/hooks/")
    check_destination("https://hooks.example.com/hooks/a/../b", allowed)
    check_destination("https://hooks.example.com/hooks/b", allowed)


async def test_the_facade_applies_the_allow_list_setting_as_the_cli_does(
    temporal_address: str, temporal_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCOPE_TOOL_NOTIFY_ALLOWED", "https://hooks.example.com/hooks/")
    request = Request(name="anything", arguments=json.dumps({}))
    for calls in (
        await ToolCalls.connect(temporal_address, task_queue=f"q-{uuid.uuid4()}"),
        ToolCalls(temporal_client, task_queue=f"q-{uuid.uuid4()}"),
    ):
        with pytest.raises(ValueError, match="not allowed"):
            await calls.start(
                request, call_id=f"c-{uuid.uuid4()}", notify_url="https://evil.example/x"
            )


# --- red-team pass of #25 -------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://2852039166/latest/meta-data/",  # 169.254.169.254 as one decimal number
        "http://0251.0376.0251.0376/",  # octal parts
        "http://0xa9fea9fe/",  # one hex number
        "http://0xA9.0xFE.0xA9.0xFE/",
        "http://169.254.43518/",  # a.b.c with the last part 16 bits
    ],
)
def test_legacy_ipv4_spellings_of_metadata_addresses_are_refused(url: str) -> None:
    """``inet_aton`` (what urllib connects with) reads these as 169.254.169.254."""
    with pytest.raises(ValueError, match="link-local or cloud metadata"):
        check_destination(url, ())


class _Hop:
    """A loopback HTTP server answering every request with ``status`` (and ``location``)."""

    def __init__(self, status: int, location: str | None = None) -> None:
        self.seen: list[tuple[str, str]] = []
        seen = self.seen

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                seen.append((self.command, self.path))
                self.send_response(status)
                if location is not None:
                    self.send_header("Location", location)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST = _any

            def log_message(self, *args: Any) -> None:
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _notice(url: str) -> NotifyInput:
    return NotifyInput(url=url, event="finished", call_id="c", tool="t", phase="SUCCEEDED")


async def test_the_notifier_does_not_follow_a_redirect_out_of_the_allow_list() -> None:
    """urllib turned a 302 to a POST into a GET of any Location: the allow-list (and the
    metadata refusal) no longer applied to where the worker's request went."""
    elsewhere = _Hop(200)
    allowed = _Hop(302, f"http://127.0.0.1:{elsewhere.port}/admin/delete")
    try:
        notifier = Notifier(allowed=f"http://127.0.0.1:{allowed.port}/hooks/")
        with pytest.raises(Exception, match="302"):
            await notifier.notify(_notice(f"http://127.0.0.1:{allowed.port}/hooks/x"))
        assert allowed.seen == [("POST", "/hooks/x")]
        assert elsewhere.seen == []
    finally:
        allowed.close()
        elsewhere.close()


async def test_a_name_that_resolves_to_a_refused_address_is_refused_at_connect(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The URL's name is checked as written; the address it resolves to is checked on the
    connected socket (no second lookup to race). Loopback stands in for 169.254/16 here."""
    receiver = _Hop(204)
    monkeypatch.setattr(webhook, "is_metadata_address", lambda address: address.startswith("127."))
    try:
        with pytest.raises(ApplicationError, match="link-local or cloud metadata"):
            await Notifier().notify(_notice(f"http://localhost:{receiver.port}/hook"))
        assert receiver.seen == []
    finally:
        receiver.close()


@pytest.mark.parametrize(
    "url", ["ftp://localhost:8080/x", "file:///etc/passwd", "data:,x", "gopher://h/x"]
)
def test_only_http_urls_are_destinations(url: str) -> None:
    """ftp: and the like connect without the connected-address check (third red-team pass)."""
    with pytest.raises(ValueError, match="notify_url must be an http"):
        check_destination(url, ())


def test_the_notifier_opens_only_http_and_https() -> None:
    from scope_tool.workers._notify import _OPENER

    schemes = {
        name.removesuffix("_open")
        for handler in _OPENER.handlers
        for name in dir(handler)
        if name.endswith("_open") and name not in ("do_open", "default_open", "unknown_open")
    }
    assert schemes == {"http", "https"}
