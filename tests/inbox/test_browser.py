"""People using the inbox in a real browser (headless Debian Chromium driven by Playwright).

The inbox runs through ``serve_inbox`` (uvicorn on a free port, token authentication) against the
session's dev server, with the ``ask`` tool's worker in-process. Screenshots of each scene go to
``test-artifacts/inbox/``. Chromium is the system's (``/usr/bin/chromium``, ``make test``
installs it with apt); a missing browser FAILS these tests, it never skips them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Browser, Page, async_playwright, expect

from inbox.ask_tools import start_waiting, wait_for_phase
from scope_tool import Request
from scope_tool.client import Phase, ToolCalls
from scope_tool.inbox import InboxOptions, mint_login_token, serve_inbox

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "inbox"
SECRET = "browser-test-secret-0123456789"
WAIT_MS = 20_000


@pytest.fixture(scope="module")
def chromium() -> str:
    """The system Chromium; its absence fails the tests (they are never skipped)."""
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (make test does this)")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return str(CHROMIUM)


@pytest.fixture(scope="module")
async def browser(chromium: str) -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            await launched.close()


@pytest.fixture
async def inbox_url(calls: ToolCalls, worker: Any) -> AsyncIterator[str]:
    """The inbox served by ``serve_inbox`` on a free loopback port, with signed tokens."""
    listening: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    serving = asyncio.create_task(
        serve_inbox(
            calls,
            InboxOptions(host="127.0.0.1", port=0, token_secret=SECRET),
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


async def _signed_in(browser: Browser, base: str, name: str) -> Page:
    """A fresh browser context for ``name``, signed in by opening a token link."""
    context = await browser.new_context(viewport={"width": 1100, "height": 800})
    page = await context.new_page()
    await page.goto(f"{base}/?token={mint_login_token(name, secret=SECRET)}")
    await expect(page.get_by_test_id("identity")).to_have_text(name)
    assert "token=" not in page.url  # the token left the address bar
    return page


async def test_a_person_sees_a_waiting_approval_approves_it_and_the_call_completes(
    browser: Browser, inbox_url: str, calls: ToolCalls
) -> None:
    page = await _signed_in(browser, inbox_url, "alice")
    call_id = f"deploy-{uuid.uuid4().hex[:8]}"
    # The call arrives while the page is open: the list refreshes by itself.
    await start_waiting(
        calls,
        call_id,
        {"question": "Deploy api 1.4.2 to production?", "plan": ["migrate", "roll out"]},
        {"type": "boolean"},
    )
    row = page.locator(f'tr[data-call-id="{call_id}"]')
    await expect(row).to_be_visible(timeout=WAIT_MS)
    await expect(row).to_contain_text("Deploy api 1.4.2 to production?")
    await expect(row).to_contain_text("ask")
    await page.screenshot(path=str(ARTIFACTS / "list.png"))

    await row.get_by_role("link").first.click()
    await expect(page.get_by_test_id("prompt")).to_contain_text("Deploy api 1.4.2")
    await expect(page.get_by_test_id("phase")).to_have_text("AWAITING_INPUT")
    await page.screenshot(path=str(ARTIFACTS / "approval.png"), full_page=True)
    await page.get_by_role("button", name="Approve").click()

    await expect(page.get_by_test_id("accepted")).to_be_visible()
    await expect(page.get_by_test_id("phase")).to_have_text("COMPLETED", timeout=WAIT_MS)
    await expect(page.get_by_test_id("answered-by")).to_have_text("alice")
    await page.screenshot(path=str(ARTIFACTS / "completed.png"), full_page=True)
    outcome = await calls.get(call_id).result()
    assert outcome.phase is Phase.COMPLETED
    assert outcome.output.details == b"true"
    status = await calls.get(call_id).status()
    assert [answer.answered_by for answer in status.answers] == ["alice"]
    await page.context.close()


REFUND_SCHEMA = {
    "type": "object",
    "title": "Refund decision",
    "properties": {
        "approved": {"type": "boolean", "title": "Approve the refund"},
        "amount": {"type": "integer", "minimum": 1, "maximum": 500, "title": "Amount (EUR)"},
        "reason": {"type": "string", "minLength": 5, "title": "Reason"},
        "method": {"enum": ["card", "voucher"], "title": "Refund to"},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2, "title": "Tags"},
    },
    "required": ["approved", "amount", "reason", "method"],
    "additionalProperties": False,
}


async def test_a_schema_violating_answer_shows_the_error_and_keeps_the_values(
    browser: Browser, inbox_url: str, calls: ToolCalls
) -> None:
    call_id = f"refund-{uuid.uuid4().hex[:8]}"
    await start_waiting(calls, call_id, "Refund order 7731?", REFUND_SCHEMA)
    page = await _signed_in(browser, inbox_url, "alice")
    await page.goto(f"{inbox_url}/calls/{call_id}")
    await page.get_by_label("Approve the refund").check()
    await page.get_by_label("Amount (EUR)").fill("120")
    await page.get_by_label("Reason").fill("parcel arrived damaged")
    await page.get_by_label("Refund to").select_option(label="voucher")
    # Three tags where the schema allows two: the browser cannot check this, the workflow does.
    await page.get_by_label("Tags").fill("damaged\nvip\nrepeat")
    await page.get_by_role("button", name="Send answer").click()

    refusal = page.get_by_test_id("refusal")
    await expect(refusal).to_contain_text("refused")
    await expect(refusal).to_contain_text("schema")
    await expect(page.get_by_label("Amount (EUR)")).to_have_value("120")
    await expect(page.get_by_label("Reason")).to_have_value("parcel arrived damaged")
    await expect(page.get_by_label("Tags")).to_have_value("damaged\nvip\nrepeat")
    await expect(page.get_by_label("Approve the refund")).to_be_checked()
    await page.screenshot(path=str(ARTIFACTS / "schema-refusal.png"), full_page=True)
    status = await calls.get(call_id).status()
    assert status.phase is Phase.AWAITING_INPUT
    assert status.answers == ()

    # The JSON editor's refusals are shown the same way, its text kept.
    await page.locator("summary", has_text="Answer as JSON instead").click()
    await page.get_by_label("Answer as JSON").fill('{"approved": "yes"}')
    await page.get_by_role("button", name="Send JSON answer").click()
    await expect(page.get_by_test_id("refusal")).to_contain_text("schema")
    await expect(page.get_by_label("Answer as JSON")).to_have_value('{"approved": "yes"}')

    # Fixed, the same page sends it through and the call completes with the typed answer.
    await page.get_by_label("Answer as JSON").fill("")
    await page.get_by_label("Tags").fill("damaged\nvip")
    await page.get_by_role("button", name="Send answer").click()
    await expect(page.get_by_test_id("phase")).to_have_text("COMPLETED", timeout=WAIT_MS)
    outcome = await calls.get(call_id).result()
    assert json.loads(outcome.output.details or b"") == {
        "approved": True,
        "amount": 120,
        "reason": "parcel arrived damaged",
        "method": "voucher",
        "tags": ["damaged", "vip"],
    }
    await page.context.close()


async def test_a_person_who_is_not_allowed_is_not_offered_an_answer_and_the_page_follows_the_call(
    browser: Browser, inbox_url: str, calls: ToolCalls
) -> None:
    call_id = f"payout-{uuid.uuid4().hex[:8]}"
    status = await start_waiting(
        calls, call_id, "Release the payout?", {"type": "boolean"}, allowed_answerers=("bob",)
    )
    mallory = await _signed_in(browser, inbox_url, "mallory")
    await mallory.goto(f"{inbox_url}/calls/{call_id}")
    await expect(mallory.get_by_test_id("not-allowed")).to_contain_text(
        "You (mallory) are not among them, so this page offers you no answer"
    )
    await expect(mallory.get_by_test_id("allowed-list")).to_have_text("bob")
    await expect(mallory.get_by_role("button", name="Approve")).to_have_count(0)
    await expect(mallory.get_by_test_id("answer-form")).to_have_count(0)
    await mallory.screenshot(path=str(ARTIFACTS / "not-allowed.png"), full_page=True)
    assert (await calls.get(call_id).status()).phase is Phase.AWAITING_INPUT

    # bob answers elsewhere; mallory's open page follows the call to its end by itself.
    await calls.get(call_id).answer(True, request_id=status.pending.request_id, answered_by="bob")
    await wait_for_phase(calls.get(call_id), Phase.COMPLETED)
    await expect(mallory.get_by_test_id("phase")).to_have_text("COMPLETED", timeout=WAIT_MS)
    await expect(mallory.get_by_test_id("answered-by")).to_have_text("bob")
    await mallory.context.close()


async def test_a_reviewer_edits_a_gated_call_denies_another_and_finds_both_as_finished(
    browser: Browser, inbox_url: str, calls: ToolCalls
) -> None:
    """The approval gate in a browser: read the arguments, edit them, deny; then /finished."""
    content = 'Dear team,\nthe "release" moves to Monday.'
    edited_id = f"note-{uuid.uuid4().hex[:8]}"
    denied_id = f"note-{uuid.uuid4().hex[:8]}"
    for call_id in (edited_id, denied_id):
        handle = await calls.start(
            Request(
                name="write_note",
                arguments=json.dumps({"path": "team/announce.txt", "content": content}),
            ),
            call_id=call_id,
        )
        await wait_for_phase(handle, Phase.AWAITING_INPUT)
    page = await _signed_in(browser, inbox_url, "alice")
    row = page.locator(f'tr[data-call-id="{edited_id}"]')
    await expect(row).to_contain_text("Approve this call of write_note?", timeout=WAIT_MS)
    await page.screenshot(path=str(ARTIFACTS / "list-gate.png"))
    await row.get_by_role("link").first.click()

    # The exact arguments, the content as the text it is (line break and quotes, no escapes).
    shown = page.get_by_test_id("approval-arguments")
    await expect(shown).to_contain_text("team/announce.txt")
    assert content in await shown.inner_text()
    await expect(page.get_by_test_id("started-by")).not_to_be_empty()
    await page.get_by_text("Edit the arguments, then run").click()
    editor = page.get_by_label("Arguments (JSON)")
    assert json.loads(await editor.input_value()) == {
        "path": "team/announce.txt",
        "content": content,
    }
    await page.screenshot(path=str(ARTIFACTS / "approval-gate.png"), full_page=True)
    await editor.fill(json.dumps({"path": "team/announce.txt", "content": "Moved to Monday."}))
    await page.get_by_role("button", name="Run with these arguments").click()
    await expect(page.get_by_test_id("accepted")).to_be_visible()
    await expect(page.get_by_test_id("phase")).to_have_text("COMPLETED", timeout=WAIT_MS)
    trail = page.get_by_test_id("trail")
    await expect(trail).to_contain_text("round 1 answered by alice via update")
    await expect(trail).to_contain_text("ended COMPLETED after 2 round(s)")
    await page.screenshot(path=str(ARTIFACTS / "call-trail.png"), full_page=True)
    assert (await calls.get(edited_id).result()).output.text() == (
        "wrote 16 characters to team/announce.txt"
    )

    await page.goto(f"{inbox_url}/calls/{denied_id}")
    await page.get_by_role("button", name="Deny").click()  # no reason yet: nothing is sent
    await expect(page.get_by_test_id("refusal")).to_contain_text("some values need fixing")
    await page.get_by_label("Reason (the model reads it)").fill("wait for the board's decision")
    await page.get_by_role("button", name="Deny").click()
    await expect(page.get_by_test_id("phase")).to_have_text("REJECTED", timeout=WAIT_MS)
    outcome = await calls.get(denied_id).result()
    assert "wait for the board's decision" in (outcome.output.text() or "")

    await page.goto(f"{inbox_url}/")
    await page.get_by_test_id("finished-link").click()
    for call_id, phase in ((edited_id, "COMPLETED"), (denied_id, "REJECTED")):
        finished = page.locator(f'tr[data-call-id="{call_id}"]')
        for _ in range(50):  # visibility lists a closed call a moment after it closed
            if await finished.count():
                break
            await page.wait_for_timeout(200)
            await page.reload()
        await expect(finished.get_by_test_id("finished-phase")).to_have_text(phase)
        await expect(finished.get_by_test_id("finished-answered-by")).to_have_text("alice")
    await page.screenshot(path=str(ARTIFACTS / "finished.png"), full_page=True)
    await page.context.close()


async def test_without_a_token_the_browser_gets_the_sign_in_page(
    browser: Browser, inbox_url: str
) -> None:
    context = await browser.new_context()
    page = await context.new_page()
    response = await page.goto(f"{inbox_url}/")
    assert response is not None
    assert response.status == 401
    await expect(page.get_by_role("heading", name="Not signed in")).to_be_visible()
    await context.close()
