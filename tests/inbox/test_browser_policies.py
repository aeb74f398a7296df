"""Quorum votes and a batch selection in a real browser (Chromium, Playwright), with screenshots.

``test-artifacts/inbox/votes.png`` and ``batch.png`` are the sources of docs/inbox-votes.png and
docs/inbox-batch.png.
"""

from __future__ import annotations

import uuid

from playwright.async_api import Browser, expect

from inbox.ask_tools import start_waiting
from inbox.test_browser import (  # noqa: F401 (fixtures)
    ARTIFACTS,
    WAIT_MS,
    _signed_in,
    browser,
    chromium,
    inbox_url,
)
from scope_tool import ApprovalPolicy, Request
from scope_tool.client import Phase, ToolCalls
from scope_tool.testing import wait_for_phase


async def test_a_voter_sees_the_votes_and_votes_once(
    browser: Browser,  # noqa: F811 (the fixture)
    inbox_url: str,  # noqa: F811 (the fixture)
    calls: ToolCalls,
) -> None:
    call_id = f"payout-{uuid.uuid4().hex[:8]}"
    policy = ApprovalPolicy(quorum=2, voters=("alice", "bob", "carol"))
    await start_waiting(
        calls,
        call_id,
        {"question": "Pay supplier invoice INV-204 (4 800 EUR)?"},
        {"type": "boolean"},
        policy=policy,
    )
    await calls.get(call_id).answer(True, answered_by="carol")
    page = await _signed_in(browser, inbox_url, "alice")
    await page.goto(f"{inbox_url}/calls/{call_id}")
    await expect(page.get_by_test_id("tally")).to_have_text(
        "1 of 2: carol; waiting for one of: alice, bob", timeout=WAIT_MS
    )
    await expect(page.get_by_test_id("vote")).to_have_text("carol: answer")
    await page.screenshot(path=str(ARTIFACTS / "votes.png"), full_page=True)
    await page.get_by_role("button", name="Approve").click()
    await expect(page.get_by_test_id("phase")).to_have_text("COMPLETED", timeout=WAIT_MS)
    history = await calls.get(call_id).history()
    assert history.answers[-1].voters == ("carol", "alice")


async def test_a_reviewer_approves_a_selection_in_one_action(
    browser: Browser,  # noqa: F811 (the fixture)
    inbox_url: str,  # noqa: F811 (the fixture)
    calls: ToolCalls,
) -> None:
    handles = []
    for number in range(3):
        arguments = f'{{"path": "release-{number}.md", "content": "notes {number}"}}'
        handle = await calls.start(
            Request(name="write_note", arguments=arguments),
            call_id=f"notes-{uuid.uuid4().hex[:8]}",
        )
        await wait_for_phase(handle, Phase.AWAITING_INPUT)
        handles.append(handle)
    page = await _signed_in(browser, inbox_url, "alice")
    for handle in handles:
        row = page.locator(f'tr[data-call-id="{handle.call_id}"]')
        await row.get_by_test_id("select").check(timeout=WAIT_MS)
    await page.screenshot(path=str(ARTIFACTS / "batch.png"), full_page=True)
    await page.get_by_test_id("batch-approve").click()
    await expect(page.get_by_test_id("batch-decided")).to_have_text(
        "Decided 3 selected call(s).", timeout=WAIT_MS
    )
    for handle in handles:
        assert (await handle.result()).phase is Phase.COMPLETED
