"""Quorum votes, deadline steps and a batch selection in a real browser (Chromium, Playwright).

``test-artifacts/inbox/votes.png``, ``batch.png`` and ``deadlines.png`` are the sources of
docs/inbox-votes.png, docs/inbox-batch.png and docs/inbox-deadlines.png.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

from helpers.waiting import wait_until_async
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


async def test_the_assignee_sees_the_deadline_steps(
    browser: Browser,  # noqa: F811 (the fixture)
    inbox_url: str,  # noqa: F811 (the fixture)
    calls: ToolCalls,
) -> None:
    """A reminder sent, an extension and a delegation, as the new assignee sees them
    (``test-artifacts/inbox/deadlines.png``, the source of docs/inbox-deadlines.png)."""
    call_id = f"refund-{uuid.uuid4().hex[:8]}"
    await start_waiting(
        calls,
        call_id,
        {"question": "Refund order 7731 (240 EUR)?"},
        {"type": "boolean"},
        policy=ApprovalPolicy(reminders=(58,), max_extension=3600),
        allowed_answerers=("alice", "bob"),
        answer_timeout=timedelta(minutes=1),
    )
    handle = calls.get(call_id)

    async def reminded() -> bool:
        return any(step.kind == "reminder" for step in (await handle.status()).deadline_steps)

    await wait_until_async(reminded, within=30)  # 58 s before the 1 min deadline
    await handle.extend(timedelta(minutes=30), extended_by="alice")
    await handle.delegate(("carol",), delegated_by="bob")
    page = await _signed_in(browser, inbox_url, "carol")
    await page.goto(f"{inbox_url}/calls/{call_id}")
    steps = page.get_by_test_id("deadline-step")
    await expect(steps).to_have_count(3, timeout=WAIT_MS)
    await expect(steps.nth(2)).to_contain_text("delegation by bob: now carol")
    await expect(page.get_by_test_id("allowed-list")).to_contain_text("carol")
    await page.screenshot(path=str(ARTIFACTS / "deadlines.png"), full_page=True)
    await page.get_by_role("button", name="Approve").click()
    await expect(page.get_by_test_id("phase")).to_have_text("COMPLETED", timeout=WAIT_MS)
    assert (await handle.history()).answers[-1].answered_by == "carol"
