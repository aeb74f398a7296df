"""The inbox shows a quorum call's votes and the rules' verdict, and offers no second vote."""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
from helpers.waiting import wait_until_async

from inbox.ask_tools import start_waiting
from scope_tool import ApprovalPolicy
from scope_tool.client import Phase, ToolCalls
from scope_tool.inbox import AllowedHosts, InboxAuth, create_app

HEADER = "X-Forwarded-User"


@pytest.fixture
async def http(calls: ToolCalls, worker: Any) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(
        calls,
        auth=InboxAuth(identity_header=HEADER),
        allowed_hosts=AllowedHosts.parse(["inbox.test"]),
        refresh_seconds=0.5,
    )
    transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 40000))
    async with httpx.AsyncClient(transport=transport, base_url="http://inbox.test") as client:
        yield client


async def _page(http: httpx.AsyncClient, call_id: str, who: str) -> str:
    page = await http.get(f"/calls/{call_id}", headers={HEADER: who})
    assert page.status_code == 200, page.text
    return page.text


async def test_the_call_page_shows_votes_and_offers_each_voter_one_vote(
    calls: ToolCalls, http: httpx.AsyncClient
) -> None:
    call_id = f"inbox-quorum-{uuid.uuid4()}"
    policy = ApprovalPolicy(quorum=2, voters=("alice", "bob", "carol"))
    status = await start_waiting(calls, call_id, "Ship it?", {"type": "boolean"}, policy=policy)
    page = await _page(http, call_id, "alice")
    assert "0 of 2; waiting for 2 of: alice, bob, carol" in page
    assert 'data-testid="answer-form"' in page
    token = re.search(r'name="_csrf" value="([0-9a-f]+)"', page)
    assert token is not None
    voted = await http.post(
        f"/calls/{call_id}/answer",
        headers={HEADER: "alice"},
        data={
            "_csrf": token.group(1),
            "_request_id": status.pending.request_id,
            "_decision": "true",
        },
    )
    assert voted.status_code == 303
    page = await _page(http, call_id, "alice")
    assert "1 of 2: alice; waiting for one of: bob, carol" in page
    assert 'data-testid="vote">alice: answer' in page
    assert 'data-testid="voted"' in page
    assert 'data-testid="answer-form"' not in page, "a second vote offered to the same voter"
    assert 'data-testid="answer-form"' in await _page(http, call_id, "bob")
    outsider = await _page(http, call_id, "mallory")
    assert 'data-testid="answer-form"' not in outsider
    assert "alice, bob, carol" in outsider
    assert (await calls.get(call_id).status()).phase is Phase.AWAITING_INPUT


async def _notes(calls: ToolCalls, count: int) -> list[tuple[str, str]]:
    from helpers.waiting import wait_for_phase

    from scope_tool import Request

    started = []
    for number in range(count):
        call_id = f"inbox-batch-{uuid.uuid4()}"
        arguments = f'{{"path": "n{number}.txt", "content": "note {number}"}}'
        handle = await calls.start(Request(name="write_note", arguments=arguments), call_id=call_id)
        status = await wait_for_phase(handle, Phase.AWAITING_INPUT)
        started.append((call_id, status.pending.request_id))
    return started


async def test_the_list_decides_a_selection_as_one_batch(
    calls: ToolCalls, http: httpx.AsyncClient
) -> None:
    notes = await _notes(calls, 3)
    page = (await http.get("/", headers={HEADER: "alice"})).text
    assert page.count('data-testid="select"') >= 3
    token = re.search(r'name="_csrf" value="([0-9a-f]+)"', page)
    assert token is not None
    # One of the three is decided elsewhere after the page was read: the batch sends nothing.
    await calls.get(notes[1][0]).answer({"decision": "approve"}, answered_by="bob")
    refused = await http.post(
        "/batch",
        headers={HEADER: "alice"},
        data={
            "_csrf": token.group(1),
            "_batch_decision": "approve",
            "_select": [request_id for _, request_id in notes],
        },
    )
    assert refused.status_code == 409
    assert "nothing was sent: 1 of the 3 selected calls failed the check" in refused.text
    assert f"<code>{notes[1][0]}</code>: stale_request" in refused.text
    for call_id in (notes[0][0], notes[2][0]):
        assert (await calls.get(call_id).status()).phase is Phase.AWAITING_INPUT
    denied = await http.post(
        "/batch",
        headers={HEADER: "alice"},
        data={
            "_csrf": token.group(1),
            "_batch_decision": "deny",
            "_batch_reason": "not this week",
            "_select": [notes[0][1], notes[2][1]],
        },
    )
    assert denied.status_code == 303
    assert denied.headers["location"] == "/?decided=2"
    for call_id in (notes[0][0], notes[2][0]):
        outcome = await calls.get(call_id).result()
        assert outcome.phase is Phase.REJECTED
        assert "not this week" in (outcome.output.text() or "")


async def test_the_call_page_shows_deadline_steps_and_who_may_answer_now(
    calls: ToolCalls, http: httpx.AsyncClient
) -> None:
    call_id = f"inbox-deadline-{uuid.uuid4()}"
    policy = ApprovalPolicy(reminders=(58,), max_extension=600)
    await start_waiting(
        calls,
        call_id,
        "Ship it?",
        {"type": "boolean"},
        policy=policy,
        allowed_answerers=("alice", "bob"),
        answer_timeout=timedelta(minutes=1),
    )
    handle = calls.get(call_id)

    async def reminded() -> bool:
        steps = (await handle.status()).deadline_steps
        return any(step.kind == "reminder" for step in steps)

    await wait_until_async(reminded, within=30)  # 58 s before the 1 min deadline
    await handle.extend(timedelta(minutes=5), extended_by="alice")
    await handle.delegate(("carol",), delegated_by="bob")
    page = await _page(http, call_id, "carol")
    steps = re.findall(r'data-testid="deadline-step">([^<]*)<', page)
    assert [step.split(" · ")[1].split(" ")[0] for step in steps] == [
        "reminder",
        "extension",
        "delegation",
    ], steps
    assert "reminder (58 s before the deadline)" in steps[0]
    assert "extension by alice; answer by" in steps[1]
    assert "delegation by bob: now carol" in steps[2]
    who = re.search(r'data-testid="allowed-list">([^<]*)<', page)
    assert who is not None
    assert "carol" in who.group(1).split(", ")
