"""Email approvals end to end: a real SMTP server (aiosmtpd on loopback) receives one message
per allowed answerer; a person follows the link in real Chromium, confirms, and the call
completes once, recorded as verified and answered through email.

Every refusal of a link (used, another recipient's, expired, forged, no form token) is checked
to change nothing.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers.replay import assert_replays
from helpers.waiting import wait_until
from playwright.async_api import Browser, async_playwright, expect

from channels._servers import Mailbox
from channels.conftest import LOGIN_SECRET, SECRET
from scope_tool import Request
from scope_tool.client import Phase, ToolCalls
from scope_tool.inbox import mint_login_token
from scope_tool.testing import wait_for_input, wait_for_phase
from scope_tool.wire.links import issue_link, link_key

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync"]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "channels"
WAIT_MS = 20_000
ARGUMENTS = {
    "prompt": {"question": "Deploy api 1.4.2 to production?"},
    "schema": {"type": "boolean"},
}


@pytest.fixture(scope="module")
def chromium() -> str:
    """The system Chromium; its absence fails the tests (they are never skipped)."""
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (make test does this)")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return str(CHROMIUM)


@pytest.fixture(scope="module")
async def browser(chromium: str) -> Any:
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            await launched.close()


def _text(message: EmailMessage) -> str:
    part = message.get_body(preferencelist=("plain",))
    assert part is not None
    return str(part.get_content()).replace("\r\n", "\n")


def _links(message: EmailMessage) -> dict[str, str]:
    return dict(re.findall(r"^(Approve|Deny): (http\S+)$", _text(message), re.MULTILINE))


async def _start(calls: ToolCalls, call_id: str, **options: Any) -> Any:
    handle = await calls.start(
        Request("ask", json.dumps(ARGUMENTS)),
        call_id=call_id,
        allowed_answerers=("alice", "bob"),
        require_verified=True,
        channels=("email",),
        **options,
    )
    await wait_for_input(handle)
    return handle


async def _mail(mailbox: Mailbox, count: int) -> None:
    await wait_until(lambda: len(mailbox.messages) >= count)


async def test_an_emailed_approval_is_confirmed_in_chromium_and_completes_once(
    browser: Browser, calls: ToolCalls, worker: Any, mailbox: Mailbox, inbox_url: str
) -> None:
    call_id = f"deploy-{uuid.uuid4().hex[:8]}"
    handle = await _start(calls, call_id)
    await _mail(mailbox, 2)
    [to_alice] = mailbox.to("alice@example.test")
    [to_bob] = mailbox.to("bob@example.test")
    text = _text(to_alice)
    assert "Deploy api 1.4.2 to production?" in text
    assert json.dumps(ARGUMENTS) in text  # the exact arguments, as the call runs with them
    assert to_alice["Message-ID"] != to_bob["Message-ID"]
    links = _links(to_alice)
    assert set(links) >= {"Approve", "Deny"}
    assert links["Approve"].startswith(f"{inbox_url}/channels/email/")

    # A mail scanner follows every link: a GET decides nothing.
    async with httpx.AsyncClient() as scanner:
        for url in (*links.values(), *_links(to_bob).values()):
            assert (await scanner.get(url)).status_code in (200, 302)
    assert (await handle.status()).phase is Phase.AWAITING_INPUT

    context = await browser.new_context()
    page = await context.new_page()
    await page.goto(links["Approve"])
    await expect(page.get_by_test_id("question")).to_have_text("Deploy api 1.4.2 to production?")
    await expect(page.get_by_test_id("decision")).to_have_text("true")
    await expect(page.get_by_test_id("arguments")).to_have_text(json.dumps(ARGUMENTS))
    await page.screenshot(path=str(ARTIFACTS / "email-confirm.png"), full_page=True)
    assert (await handle.status()).phase is Phase.AWAITING_INPUT
    await page.get_by_test_id("confirm").click()
    await expect(page.get_by_test_id("heading")).to_have_text("Answered")
    await page.screenshot(path=str(ARTIFACTS / "email-answered.png"), full_page=True)

    outcome = await handle.result()
    assert outcome.phase is Phase.COMPLETED
    assert outcome.output.details == b"true"
    status = await handle.status()
    [answer] = status.answers
    assert (answer.answered_by, answer.verified, answer.channel) == ("alice", True, "email")
    history = await handle.history()
    assert [(a.answered_by, a.channel, a.duplicate) for a in history.answers] == [
        ("alice", "email", False)
    ]

    # The used link, and bob's links, are refused as finished; nothing changes.
    await page.goto(links["Approve"])
    await expect(page.get_by_test_id("reason")).to_have_text("finished")
    await expect(page.get_by_test_id("message")).to_contain_text("alice answered it through email")
    await page.goto(_links(to_bob)["Deny"])
    await expect(page.get_by_test_id("reason")).to_have_text("finished")
    # The inbox's page of the call shows who decided and through which channel.
    await page.goto(
        f"{inbox_url}/calls/{call_id}?token={mint_login_token('bob', secret=LOGIN_SECRET)}"
    )
    await expect(page.get_by_test_id("answered-by")).to_contain_text("alice")
    await expect(page.get_by_test_id("channel")).to_have_text("through email")
    await context.close()
    assert len((await handle.history()).answers) == 1
    assert len(mailbox.messages) == 2  # one message per recipient, never more
    await assert_replays(handle)  # the announcement is deterministic workflow code


async def test_unknown_channels_are_refused_before_the_call_starts(calls: ToolCalls) -> None:
    with pytest.raises(ValueError, match="channels must be a sequence of 'email', 'slack'"):
        await calls.start(Request("ask", "{}"), call_id="no-fax", channels=("fax",))
    with pytest.raises(ValueError, match="channels"):
        await calls.start(Request("ask", "{}"), call_id="no-str", channels="email")  # type: ignore[arg-type]


async def _confirm_page(http: httpx.AsyncClient, url: str) -> tuple[httpx.Response, str]:
    page = await http.get(url)
    found = re.search(r'name="_csrf" value="([0-9a-f]+)"', page.text)
    return page, found.group(1) if found else ""


async def test_refused_links_change_nothing(
    calls: ToolCalls, worker: Any, mailbox: Mailbox, inbox_url: str
) -> None:
    call_id = f"refuse-{uuid.uuid4().hex[:8]}"
    handle = await _start(calls, call_id)
    await _mail(mailbox, 2)
    alice = _links(mailbox.to("alice@example.test")[0])
    bob = _links(mailbox.to("bob@example.test")[0])
    request_id = (await handle.status()).pending.request_id  # type: ignore[union-attr]
    key = link_key(SECRET.encode())
    origin = {"Origin": inbox_url}

    async with httpx.AsyncClient() as http:
        # Expired: refused, and the page points to the call in the inbox.
        expired = issue_link(
            key=key,
            call_id=call_id,
            request_id=request_id,
            decision="true",
            recipient="alice",
            channel="email",
            lifetime_seconds=60,
            now=time.time() - 3600,
        )
        page = await http.get(f"{inbox_url}/channels/email/{expired}")
        assert page.status_code == 410
        assert "token_expired" in page.text
        assert f"/calls/{call_id}" in page.text
        assert (
            await http.post(f"{inbox_url}/channels/email/{expired}", headers=origin)
        ).status_code == 410

        # Forged: the claims changed (deny -> approve) without the key.
        head, _, signature = bob["Deny"].rpartition(".")
        forged = head + "." + ("A" if signature[0] != "A" else "B") + signature[1:]
        page = await http.get(forged)
        assert page.status_code == 403
        assert "not_verified" in page.text

        # A recipient the call does not allow (a link minted for carol).
        carol = issue_link(
            key=key,
            call_id=call_id,
            request_id=request_id,
            decision="true",
            recipient="carol",
            channel="email",
            lifetime_seconds=600,
        )
        page = await http.get(f"{inbox_url}/channels/email/{carol}")
        assert page.status_code == 403
        assert "not_allowed" in page.text

        # Another recipient's link with this recipient's confirmation form: refused.
        _, alice_form = await _confirm_page(http, alice["Approve"])
        assert alice_form
        refused = await http.post(bob["Deny"], data={"_csrf": alice_form}, headers=origin)
        assert refused.status_code == 403
        assert "not_verified" in refused.text

        # A browser signed in to the inbox as someone else (bob) cannot use alice's link.
        async with httpx.AsyncClient() as bobs_browser:
            login = mint_login_token("bob", secret=LOGIN_SECRET)
            await bobs_browser.get(f"{inbox_url}/?token={login}")
            page = await bobs_browser.get(alice["Approve"])
            assert page.status_code == 403
            assert "not_allowed" in page.text
            assert "signed in to the inbox as &#39;bob&#39;" in page.text

        # No form token at all (a cross-site form cannot read one): refused.
        refused = await http.post(alice["Approve"], data={}, headers=origin)
        assert refused.status_code == 403

        # A post from another site is stopped at the gate.
        _, form = await _confirm_page(http, alice["Approve"])
        refused = await http.post(
            alice["Approve"], data={"_csrf": form}, headers={"Origin": "https://evil.example"}
        )
        assert refused.status_code == 403

    status = await handle.status()
    assert status.phase is Phase.AWAITING_INPUT
    assert status.answers == ()

    # Bob's own confirmation answers as bob; alice's link is then used up (finished).
    async with httpx.AsyncClient() as http:
        _, form = await _confirm_page(http, bob["Deny"])
        done = await http.post(bob["Deny"], data={"_csrf": form}, headers=origin)
        assert done.status_code == 200, done.text
        _, form = await _confirm_page(http, alice["Approve"])
        assert form == ""  # no confirmation is offered for a question that is gone
        again = await http.post(alice["Approve"], data={"_csrf": "0" * 76}, headers=origin)
        assert again.status_code in (403, 409)
    outcome = await wait_for_phase(handle, Phase.COMPLETED)
    assert outcome.phase is Phase.COMPLETED
    [answer] = (await handle.status()).answers
    assert (answer.answered_by, answer.channel, answer.response) == ("bob", "email", b"false")
