"""Who may use the inbox: signed tokens, the trusted header, and the refusal to run open."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import httpx
import pytest

from scope_tool.client import ToolCalls
from scope_tool.inbox import (
    AllowedHosts,
    AuthenticationError,
    InboxAuth,
    InboxConfigError,
    InboxOptions,
    create_app,
    mint_login_token,
    serve_inbox,
)
from scope_tool.inbox.__main__ import main as token_main
from scope_tool.inbox.auth import verify_login_token

SECRET = "a-test-secret-of-enough-bytes"


@pytest.fixture
def calls(temporal_client: Any, task_queue: str) -> ToolCalls:
    return ToolCalls(temporal_client, task_queue=task_queue)


async def _client(
    calls: ToolCalls, auth: InboxAuth, *, peer: str = "127.0.0.1"
) -> httpx.AsyncClient:
    app = create_app(calls, auth=auth, allowed_hosts=AllowedHosts.parse(["inbox.test"]))
    transport = httpx.ASGITransport(app=app, client=(peer, 50000))
    return httpx.AsyncClient(transport=transport, base_url="http://inbox.test")


@pytest.fixture
async def token_inbox(calls: ToolCalls) -> AsyncIterator[httpx.AsyncClient]:
    async with await _client(calls, InboxAuth(token_secret=SECRET)) as client:
        yield client


# -- tokens ------------------------------------------------------------------------------------


def test_a_minted_token_names_its_person() -> None:
    assert verify_login_token(mint_login_token("alice", secret=SECRET), secret=SECRET) == "alice"


def test_a_forged_or_damaged_token_is_refused() -> None:
    token = mint_login_token("alice", secret=SECRET)
    payload, signature = token.split(".")
    forged_payload = mint_login_token("mallory", secret=SECRET).split(".")[0]
    with pytest.raises(AuthenticationError, match="signature does not match"):
        verify_login_token(f"{forged_payload}.{signature}", secret=SECRET)
    with pytest.raises(AuthenticationError, match="signature does not match"):
        verify_login_token(token, secret=SECRET + "-other")
    with pytest.raises(AuthenticationError, match="malformed"):
        verify_login_token(payload, secret=SECRET)


def test_an_expired_token_is_refused() -> None:
    token = mint_login_token("alice", secret=SECRET, valid_for=timedelta(minutes=5), now=1000.0)
    assert verify_login_token(token, secret=SECRET, now=1299.0) == "alice"
    with pytest.raises(AuthenticationError, match="expired"):
        verify_login_token(token, secret=SECRET, now=1300.0)


@pytest.mark.parametrize(
    ("name", "message"),
    [("", "non-empty"), ("a\nb", "control characters"), ("x" * 201, "longer than")],
)
def test_unusable_names_and_short_secrets_are_refused_when_minting(name: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        mint_login_token(name, secret=SECRET)
    with pytest.raises(InboxConfigError, match="at least 16"):
        mint_login_token("alice", secret="short")


def test_the_token_command_prints_a_token_for_the_configured_secret(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCOPE_TOOL_INBOX_TOKEN_SECRET", SECRET)
    assert token_main(["token", "bob", "--valid-hours", "1"]) == 0
    assert verify_login_token(capsys.readouterr().out.strip(), secret=SECRET) == "bob"
    monkeypatch.delenv("SCOPE_TOOL_INBOX_TOKEN_SECRET")
    assert token_main(["token", "bob"]) == 2
    assert "no secret" in capsys.readouterr().err


# -- the app ----------------------------------------------------------------------------------


async def test_missing_or_forged_tokens_get_401_everywhere(token_inbox: httpx.AsyncClient) -> None:
    forged = mint_login_token("alice", secret="another-secret-of-16-bytes")
    for path in ("/", "/calls/x", "/api/pending", "/api/calls/x"):
        assert (await token_inbox.get(path)).status_code == 401
        bad = await token_inbox.get(path, headers={"Authorization": f"Bearer {forged}"})
        assert bad.status_code == 401
        assert "signature" in bad.text
    posted = await token_inbox.post("/api/calls/x/answer", json={"response": True})
    assert posted.status_code == 401
    assert posted.json()["reason"] == "unauthenticated"
    form = await token_inbox.post("/calls/x/answer", data={"_decision": "true"})
    assert form.status_code == 401


async def test_a_valid_bearer_token_identifies_the_person(token_inbox: httpx.AsyncClient) -> None:
    token = mint_login_token("alice", secret=SECRET)
    listed = await token_inbox.get("/api/pending", headers={"Authorization": f"Bearer {token}"})
    assert listed.status_code == 200
    assert listed.json()["identity"] == "alice"


async def test_a_token_link_becomes_a_strict_cookie_and_leaves_the_address_bar(
    token_inbox: httpx.AsyncClient,
) -> None:
    token = mint_login_token("alice", secret=SECRET)
    opened = await token_inbox.get(f"/?token={token}&keep=1")
    assert opened.status_code == 303
    assert opened.headers["location"] == "/?keep=1"
    cookie = opened.headers["set-cookie"]
    assert "HttpOnly" in cookie
    assert "SameSite=strict" in cookie
    page = await token_inbox.get("/")  # the client kept the cookie
    assert page.status_code == 200
    assert 'data-testid="identity">alice<' in page.text
    bad_link = await token_inbox.get("/?token=nonsense.sig")
    assert bad_link.status_code == 401


async def test_header_mode_trusts_the_proxy_header_and_nothing_else(calls: ToolCalls) -> None:
    auth = InboxAuth(identity_header="X-Forwarded-User")
    async with await _client(calls, auth) as client:
        assert (await client.get("/api/pending")).status_code == 401
        assert (
            await client.get("/api/pending", headers={"X-Forwarded-User": " "})
        ).status_code == 401
        # A token means nothing when only the header is configured.
        token = mint_login_token("alice", secret=SECRET)
        refused = await client.get("/api/pending", headers={"Authorization": f"Bearer {token}"})
        assert refused.status_code == 401
        # Nor does a form field or query parameter claiming an identity.
        assert (await client.get("/api/pending?as=alice")).status_code == 401
        ok = await client.get("/api/pending", headers={"X-Forwarded-User": "dana"})
        assert ok.status_code == 200
        assert ok.json()["identity"] == "dana"


async def test_dev_mode_is_dev_or_as_name_and_only_for_this_machine(calls: ToolCalls) -> None:
    auth = InboxAuth(dev_loopback=True)
    async with await _client(calls, auth) as client:
        assert (await client.get("/api/pending")).json()["identity"] == "dev"
        switched = await client.get("/?as=erin")
        assert switched.status_code == 303
        assert (await client.get("/api/pending")).json()["identity"] == "erin"
    async with await _client(calls, auth, peer="10.1.2.3") as remote:
        refused = await remote.get("/api/pending")
        assert refused.status_code == 401
        assert "only answers this machine" in refused.json()["error"]


# -- starting ---------------------------------------------------------------------------------


def test_no_authentication_at_all_is_refused() -> None:
    with pytest.raises(InboxConfigError, match="needs authentication"):
        InboxAuth()
    with pytest.raises(InboxConfigError, match="at least 16"):
        InboxAuth(token_secret="short")


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.20", "::", "inbox.example.com"])
async def test_serving_unauthenticated_off_loopback_is_refused_before_listening(
    calls: ToolCalls, host: str
) -> None:
    with pytest.raises(InboxConfigError, match="refusing to serve the inbox without"):
        await serve_inbox(calls, InboxOptions(host=host, port=0, dev_loopback=True))
    with pytest.raises(InboxConfigError, match="needs authentication"):
        await serve_inbox(calls, InboxOptions(host=host, port=0))


async def test_a_port_in_use_is_a_clear_os_error(calls: ToolCalls) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(OSError, match=f"cannot listen on 127.0.0.1:{port}"):
            await serve_inbox(calls, InboxOptions(host="127.0.0.1", port=port, dev_loopback=True))
