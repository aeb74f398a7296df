"""DNS rebinding and cross-site posts: the inbox answers only to its own names and origin.

The probe (issue #17 item 7): a page on ``evil.example`` re-points its name at 127.0.0.1 and
talks to ``scope-tool dev``'s loopback inbox as its own origin (``Host``/``Origin`` say
``evil.example``), signs in as anyone with ``?as=`` and approves. Each test here does that, in
process (httpx on the ASGI app) and against the served inbox (uvicorn on a free port), and shows
it refused with the call untouched, while the inbox's own pages keep working.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import re
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from inbox.ask_tools import start_waiting
from scope_tool.client import Phase, ToolCalls
from scope_tool.inbox import (
    AllowedHosts,
    InboxAuth,
    InboxConfigError,
    InboxOptions,
    add_arguments,
    create_app,
    serve_inbox,
)
from scope_tool.inbox.hosts import cross_origin_source

EVIL = "evil.example:8234"


def _csrf(page: str) -> str:
    found = re.search(r'name="_csrf" value="([0-9a-f]+)"', page)
    assert found, "the call page has no form token"
    return found.group(1)


# -- the allowed-hosts list ---------------------------------------------------------------------


def test_loopback_names_and_the_bound_address_are_allowed_and_nothing_else() -> None:
    hosts = AllowedHosts.parse([], bind="127.0.0.1")
    for host in ("localhost", "localhost:8234", "127.0.0.1:8234", "[::1]:8234", "LOCALHOST."):
        assert hosts.allows(host), host
    for host in ("evil.example", EVIL, "", "127.0.0.1.evil.example", "localhost:x", "a/b"):
        assert not hosts.allows(host), host
    assert "evil.example" in hosts.refusal(EVIL)
    assert "--allowed-host" in hosts.refusal(EVIL)


def test_configured_public_names_and_a_wildcard_bind() -> None:
    hosts = AllowedHosts.parse(["Inbox.Example.com", "[2001:db8::1]", "10.0.0.7"], bind="0.0.0.0")
    assert hosts.allows("inbox.example.com:443")
    assert hosts.allows("[2001:db8:0::1]:8234")
    assert hosts.allows("192.168.1.20:8234")  # bound to every address: any address literal
    assert not hosts.allows("evil.example")
    specific = AllowedHosts.parse([], bind="192.168.1.20")
    assert specific.allows("192.168.1.20")
    assert not specific.allows("192.168.1.21")
    assert AllowedHosts.parse(["*"]).allows("anything.example")


@pytest.mark.parametrize("entry", ["https://inbox.example", "inbox.example/path", "a b", ""])
def test_an_allowed_host_that_is_not_a_name_is_a_clear_error(entry: str) -> None:
    with pytest.raises(InboxConfigError, match="is not a host name"):
        AllowedHosts.parse([entry])


def test_allowed_hosts_come_from_the_environment_and_the_command_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SCOPE_TOOL_INBOX_ALLOWED_HOSTS", "a.example, b.example")
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert parser.parse_args([]).allowed_hosts == ["a.example", "b.example"]
    both = parser.parse_args(["--allowed-host", "c.example", "--allowed-host", "d.example"])
    assert both.allowed_hosts == ["a.example", "b.example", "c.example", "d.example"]
    assert parser.parse_args([]).allowed_hosts == ["a.example", "b.example"]  # default kept
    with pytest.raises(SystemExit) as exited:
        parser.parse_args(["--allowed-host", "https://inbox.example"])
    assert exited.value.code == 2
    assert "is not a host name" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("origin", "referer", "host", "foreign"),
    [
        ("http://localhost:8234", None, "localhost:8234", False),
        ("https://inbox.example.com", None, "inbox.example.com", False),  # TLS proxy in front
        ("https://inbox.example.com:443", None, "inbox.example.com", False),
        (None, "http://127.0.0.1:8234/calls/x", "127.0.0.1:8234", False),
        (None, None, "127.0.0.1:8234", False),  # a script, not a browser's cross-site post
        ("http://evil.example:8234", None, "127.0.0.1:8234", True),
        ("http://localhost:9999", None, "localhost:8234", True),  # another local app
        ("null", None, "127.0.0.1:8234", True),
        (None, "http://evil.example/page", "127.0.0.1:8234", True),
        ("http://localhost:8234", "http://evil.example/", "localhost:8234", False),
    ],
)
def test_own_origin_is_the_request_host_and_port(
    origin: str | None, referer: str | None, host: str, foreign: bool
) -> None:
    assert (cross_origin_source(origin, referer, host) is not None) is foreign


# -- the probe, in process ------------------------------------------------------------------------


@pytest.fixture
def dev_app(calls: ToolCalls, worker: Any) -> Any:
    """``scope-tool dev``'s inbox: no authentication, loopback only."""
    return create_app(calls, auth=InboxAuth(dev_loopback=True), refresh_seconds=0.5)


def _client(app: Any, base_url: str) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 40000))
    return httpx.AsyncClient(transport=transport, base_url=base_url)


async def test_a_rebinding_page_can_neither_sign_in_nor_read_nor_approve(
    calls: ToolCalls, dev_app: Any
) -> None:
    call_id = f"rebind-{uuid.uuid4()}"
    status = await start_waiting(calls, call_id, "Ship it?", {"type": "boolean"})
    evil = {"Origin": f"http://{EVIL}"}
    async with _client(dev_app, f"http://{EVIL}") as attacker:
        signed_in = await attacker.get("/?as=boss", headers=evil)
        assert signed_in.status_code == 400
        assert "does not answer to host 'evil.example:8234'" in signed_in.text
        assert "set-cookie" not in signed_in.headers
        page = await attacker.get(f"/calls/{call_id}")
        assert page.status_code == 400
        assert 'name="_csrf"' not in page.text
        listed = await attacker.get("/api/pending")
        assert listed.status_code == 400
        assert listed.json()["reason"] == "unknown_host"
        approved = await attacker.post(
            f"/calls/{call_id}/answer",
            headers=evil,
            data={"_request_id": status.pending.request_id, "_decision": "true"},
        )
        assert approved.status_code == 400
        api = await attacker.post(
            f"/api/calls/{call_id}/answer", headers=evil, json={"response": True}
        )
        assert api.status_code == 400
    after = await calls.get(call_id).status()
    assert after.phase is Phase.AWAITING_INPUT
    assert after.answers == ()


async def test_a_post_from_another_origin_to_the_right_host_is_refused(
    calls: ToolCalls, dev_app: Any
) -> None:
    call_id = f"csrf-{uuid.uuid4()}"
    status = await start_waiting(calls, call_id, "Ship it?", {"type": "boolean"})
    async with _client(dev_app, "http://127.0.0.1:8234") as browser:
        page = (await browser.get(f"/calls/{call_id}")).text
        form = {
            "_csrf": _csrf(page),
            "_request_id": status.pending.request_id,
            "_decision": "true",
        }
        for header in ({"Origin": f"http://{EVIL}"}, {"Referer": f"http://{EVIL}/x"}):
            refused = await browser.post(f"/calls/{call_id}/answer", headers=header, data=form)
            assert refused.status_code == 403, refused.text
            assert "came from another site" in refused.text
        api = await browser.post(
            f"/api/calls/{call_id}/answer",
            headers={"Origin": "null"},
            json={"response": True},
        )
        assert api.status_code == 403
        assert api.json()["reason"] == "cross_origin"
        assert (await calls.get(call_id).status()).answers == ()
        own = await browser.post(
            f"/calls/{call_id}/answer",
            headers={"Origin": "http://127.0.0.1:8234"},
            data=form,
        )
        assert own.status_code == 303, own.text
    outcome = await calls.get(call_id).result()
    assert outcome.output.details == b"true"
    assert [a.answered_by for a in (await calls.get(call_id).status()).answers] == ["dev"]


def test_turning_the_host_check_off_needs_authentication(calls: ToolCalls) -> None:
    with pytest.raises(InboxConfigError, match="DNS rebinding"):
        create_app(
            calls, auth=InboxAuth(dev_loopback=True), allowed_hosts=AllowedHosts.parse(["*"])
        )
    create_app(
        calls, auth=InboxAuth(identity_header="X-User"), allowed_hosts=AllowedHosts.parse(["*"])
    )


# -- the probe, against the served inbox ----------------------------------------------------------


@contextlib.asynccontextmanager
async def _served(calls: ToolCalls, **options: Any) -> AsyncIterator[int]:
    listening: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    serving = asyncio.create_task(
        serve_inbox(
            calls,
            InboxOptions(host="127.0.0.1", port=0, **options),
            on_listening=lambda _host, port: listening.set_result(port),
        )
    )
    try:
        await asyncio.wait({listening, serving}, timeout=10, return_when=asyncio.FIRST_COMPLETED)
        if serving.done():
            await serving  # it refused to start: raise why
        yield listening.result()
    finally:
        serving.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await serving


async def test_the_served_dev_inbox_refuses_a_rebinding_page(calls: ToolCalls, worker: Any) -> None:
    call_id = f"served-{uuid.uuid4()}"
    status = await start_waiting(calls, call_id, "Ship it?", {"type": "boolean"})
    async with (
        _served(calls, dev_loopback=True) as port,
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http,
    ):
        evil = {"Host": f"evil.example:{port}", "Origin": f"http://evil.example:{port}"}
        assert (await http.get("/?as=boss", headers=evil)).status_code == 400
        refused = await http.post(
            f"/calls/{call_id}/answer",
            headers=evil,
            data={"_request_id": status.pending.request_id, "_decision": "true"},
        )
        assert refused.status_code == 400
        assert "DNS rebinding" in refused.text
        cross = await http.post(
            f"/api/calls/{call_id}/answer",
            headers={"Origin": f"http://evil.example:{port}"},
            json={"response": True},
        )
        assert cross.status_code == 403
        assert (await http.get("/", headers={"Host": f"localhost:{port}"})).status_code == 200
        assert (await http.get("/")).status_code == 200
    assert (await calls.get(call_id).status()).answers == ()


async def test_the_served_inbox_answers_to_configured_public_names(calls: ToolCalls) -> None:
    secret = "a-test-secret-of-enough-bytes"
    async with (
        _served(calls, token_secret=secret, allowed_hosts=("inbox.example.com",)) as port,
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http,
    ):
        public = await http.get("/", headers={"Host": "inbox.example.com"})
        assert public.status_code == 401  # past the host check, now it wants a token
        other = await http.get("/", headers={"Host": "other.example.com"})
        assert other.status_code == 400
    with pytest.raises(InboxConfigError, match="DNS rebinding"):
        async with _served(calls, dev_loopback=True, allowed_hosts=("*",)):
            pass
