"""What a person reads on the inbox's pages, over HTTP against the real server and a worker.

A call's page shows its arguments (text members as text, not JSON escapes), who started it, a
link to the call in the Temporal Web UI, deadlines to the second, and the audit trail read
from history; finished calls stay findable under /finished. A call behind
``scope_tool.require_approval`` gets Approve / Deny with a reason / Edit arguments, and each
of them is checked against what the tool really ran with. The Temporal Web UI's summary and
details carry the same readable text.
"""

from __future__ import annotations

import html
import json
import re
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import httpx
import pytest

from inbox.ask_tools import WRITTEN, start_waiting, wait_for_phase
from scope_tool import Request
from scope_tool.client import Phase, ToolCalls
from scope_tool.inbox import AllowedHosts, InboxAuth, create_app

HEADER = "X-Forwarded-User"
WEB_UI = "http://localhost:8233"
NOTE = 'first line\nsecond line with "quotes"'


@pytest.fixture
async def http(calls: ToolCalls, worker: Any) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(
        calls,
        auth=InboxAuth(identity_header=HEADER),
        allowed_hosts=AllowedHosts.parse(["inbox.test"]),
        web_ui_url=WEB_UI,
    )
    transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 40000))
    async with httpx.AsyncClient(transport=transport, base_url="http://inbox.test") as client:
        yield client


def _as(name: str) -> dict[str, str]:
    return {HEADER: name}


async def _page(http: httpx.AsyncClient, path: str, who: str = "alice") -> str:
    response = await http.get(path, headers=_as(who))
    assert response.status_code == 200, response.text
    return response.text


def _csrf(page: str) -> str:
    found = re.search(r'name="_csrf" value="([0-9a-f]+)"', page)
    assert found, "the call page has no answer form"
    return found.group(1)


def _section(page: str, testid: str) -> str:
    """The text of the element marked ``data-testid=testid`` (up to its closing tag)."""
    start = page.index(f'data-testid="{testid}"')
    return html.unescape(page[start : page.index("</dl>", start)])


async def _post(
    http: httpx.AsyncClient, call_id: str, request_id: str, who: str = "alice", **fields: str
) -> httpx.Response:
    page = await _page(http, f"/calls/{call_id}", who)
    data = {"_csrf": _csrf(page), "_request_id": request_id, "_form": "fields", **fields}
    return await http.post(f"/calls/{call_id}/answer", headers=_as(who), data=data)


async def test_a_call_page_shows_arguments_as_text_who_started_it_and_where_in_the_web_ui(
    calls: ToolCalls, http: httpx.AsyncClient
) -> None:
    call_id = f"readable-{uuid.uuid4().hex[:8]}"
    status = await start_waiting(
        calls,
        call_id,
        {"question": "Publish this note?", "note": NOTE, "size": {"lines": 2}},
        {"type": "boolean"},
        answer_timeout=timedelta(hours=2),
    )
    page = await _page(http, f"/calls/{call_id}")
    # The prompt's text member is shown as text: its line break and quotes, no escapes.
    details = _section(page, "prompt-details")
    assert NOTE in details
    assert "\\n" not in details
    assert '\\"' not in details
    assert '"lines": 2' in details  # other values stay JSON, indented
    # The arguments (the ask tool's prompt and schema) are shown member by member.
    arguments = _section(page, "arguments")
    assert "<dt>prompt</dt>" in arguments
    assert "<dt>schema</dt>" in arguments
    started_by = re.search(r'data-testid="started-by">([^<]+)<', page)
    assert started_by
    assert started_by.group(1).strip() not in ("", "(not recorded)")
    link = re.search(r'href="([^"]+)" data-testid="web-ui-link"', page)
    assert link
    assert html.unescape(link.group(1)) == f"{WEB_UI}/namespaces/default/workflows/{call_id}"
    # The deadline: to the second in UTC, and relative; never microseconds.
    assert status.pending.deadline is not None
    deadline = re.search(r'data-testid="deadline">([^<]+)<', page)
    assert deadline
    assert deadline.group(1) == status.pending.deadline.strftime("%Y-%m-%d %H:%M:%S UTC")
    assert "(in 2 h)" in page
    assert not re.search(r"\d\d:\d\d:\d\d\.\d{3,6}", page), "a time with fractions of a second"
    listing = await _page(http, "/")
    row = listing[listing.index(f'data-call-id="{call_id}"') :]
    assert "in 2 h" in row[: row.index("</tr>")]


async def test_an_answered_call_keeps_its_trail_and_is_listed_as_recently_finished(
    calls: ToolCalls, http: httpx.AsyncClient
) -> None:
    call_id = f"trail-{uuid.uuid4().hex[:8]}"
    status = await start_waiting(calls, call_id, "Send the report?", {"type": "string"})
    sent = await _post(
        http,
        call_id,
        status.pending.request_id,
        _via="json",
        _answer_json=json.dumps("yes, with the\nappendix"),
    )
    assert sent.status_code == 303, sent.text
    await wait_for_phase(calls.get(call_id), Phase.COMPLETED)
    page = await _page(http, f"/calls/{call_id}")
    events = re.findall(r'<tr data-event="(\w+)">', page)
    assert events == ["started", "asked", "answered", "ended"]
    trail = page[page.index('data-testid="trail"') :]
    assert "round 1 answered by alice via update" in trail
    assert "ended COMPLETED after 2 round(s)" in trail
    assert "yes, with the\nappendix" in html.unescape(trail)  # a text answer shown as text
    answer = page[page.index('data-testid="answer-value"') :]
    assert html.unescape(answer).startswith('data-testid="answer-value"><div class="text-value">')
    # Answered calls do not just disappear: /finished lists it, with who answered.
    listed = ""
    for _ in range(100):  # visibility is eventually consistent
        listed = await _page(http, "/finished")
        if f'data-call-id="{call_id}"' in listed:
            break
    row = listed[listed.index(f'data-call-id="{call_id}"') :]
    row = row[: row.index("</tr>")]
    assert 'data-testid="finished-phase">COMPLETED<' in row
    assert 'data-testid="finished-answered-by">alice<' in row
    assert 'href="/finished"' in await _page(http, "/")


async def _gated(calls: ToolCalls, content: str = NOTE) -> tuple[str, str]:
    call_id = f"gate-{uuid.uuid4().hex[:8]}"
    handle = await calls.start(
        Request(name="write_note", arguments=json.dumps({"path": "n.txt", "content": content})),
        call_id=call_id,
    )
    status = await wait_for_phase(handle, Phase.AWAITING_INPUT)
    return call_id, status.pending.request_id


async def test_the_approval_gate_gets_approve_deny_with_a_reason_and_edit(
    calls: ToolCalls, http: httpx.AsyncClient
) -> None:
    call_id, request_id = await _gated(calls)
    page = await _page(http, f"/calls/{call_id}")
    assert "Approve this call of write_note?" in page
    assert "Write a note to a file." in page
    shown = _section(page, "approval-arguments")
    assert NOTE in shown
    assert "<dt>path</dt>" in shown
    for button in ('value="approve"', 'value="deny"', 'value="edit"'):
        assert f'name="_decision" {button}' in page
    editor = re.search(r'name="_edit_arguments"[^>]*>([^<]*)</textarea>', page)
    assert editor
    assert json.loads(html.unescape(editor.group(1))) == {
        "path": "n.txt",
        "content": NOTE,
    }

    # Deny without a reason: nothing is sent, the page says why.
    refused = await _post(http, call_id, request_id, _decision="deny", _reason="  ")
    assert refused.status_code == 422
    assert "say why you deny the call" in refused.text
    assert (await calls.get(call_id).status()).phase is Phase.AWAITING_INPUT
    # Edited arguments that are not JSON: refused next to the editor, kept as typed.
    refused = await _post(
        http, call_id, request_id, _decision="edit", _edit_arguments='{"path": "n.txt",'
    )
    assert refused.status_code == 422
    assert "not valid JSON" in refused.text
    assert "{&#34;path&#34;: &#34;n.txt&#34;," in refused.text
    # An edit the tool's schema refuses is refused by the call itself; it keeps waiting.
    refused = await _post(
        http, call_id, request_id, _decision="edit", _edit_arguments='{"path": "n.txt"}'
    )
    assert refused.status_code == 422, refused.text
    assert "the call refused this answer (schema)" in refused.text
    assert (await calls.get(call_id).status()).phase is Phase.AWAITING_INPUT

    before = len(WRITTEN)
    edited = await _post(
        http,
        call_id,
        request_id,
        _decision="edit",
        _edit_arguments=json.dumps({"path": "edited.txt", "content": "short"}),
    )
    assert edited.status_code == 303, edited.text
    outcome = await calls.get(call_id).result()
    assert outcome.phase is Phase.COMPLETED
    assert outcome.output.text() == "wrote 5 characters to edited.txt"
    assert [(w.path, w.content) for w in WRITTEN[before:]] == [("edited.txt", "short")]
    status = await calls.get(call_id).status()
    assert json.loads(status.answers[0].response) == {
        "decision": "edit",
        "arguments": {"path": "edited.txt", "content": "short"},
    }

    denied_id, denied_request = await _gated(calls)
    denied = await _post(
        http, denied_id, denied_request, _decision="deny", _reason="not on a Friday"
    )
    assert denied.status_code == 303, denied.text
    outcome = await calls.get(denied_id).result()
    assert outcome.phase is Phase.REJECTED
    assert "not on a Friday" in (outcome.output.text() or "")

    approved_id, approved_request = await _gated(calls, content="approved as shown")
    approved = await _post(http, approved_id, approved_request, _decision="approve")
    assert approved.status_code == 303, approved.text
    assert (await calls.get(approved_id).result()).phase is Phase.COMPLETED
    assert WRITTEN[-1].content == "approved as shown"
    assert len(WRITTEN) == before + 2  # the denied call never ran


async def test_the_web_ui_summary_and_details_are_readable(
    calls: ToolCalls, http: httpx.AsyncClient
) -> None:
    call_id, _ = await _gated(calls)
    handle = calls.get(call_id).workflow_handle
    description = await handle.describe()
    assert await description.static_summary() == "scope-tool call of write_note"
    details = await description.static_details()
    assert details is not None
    assert "**Tool** `write_note`" in details
    assert f"```text\n{NOTE}\n```" in details  # the content as text, not an escaped string
    metadata = await handle.query("__temporal_workflow_metadata")
    current = metadata.current_details
    assert "**Approve this call of write_note?**" in current
    assert f"```text\n{NOTE}\n```" in current
    assert '`{"decision":"approve"}`' in current
    assert '`{"decision":"deny","reason":"..."}`' in current
    assert f"scope-tool answer {call_id} " in current


async def test_a_call_with_large_arguments_starts_and_its_web_ui_details_are_cut(
    calls: ToolCalls, http: httpx.AsyncClient
) -> None:
    from scope_tool.wire.web_ui_text import MAX_DETAILS_BYTES

    call_id = f"large-{uuid.uuid4().hex[:8]}"
    status = await start_waiting(calls, call_id, {"question": "Big?", "blob": "x" * 400_000}, {})
    assert status.phase is Phase.AWAITING_INPUT
    handle = calls.get(call_id).workflow_handle
    details = await (await handle.describe()).static_details()
    assert details is not None
    assert len(details.encode("utf-8")) <= MAX_DETAILS_BYTES
    metadata = await handle.query("__temporal_workflow_metadata")
    assert len(metadata.current_details.encode("utf-8")) <= MAX_DETAILS_BYTES
    assert "**Big?**" in metadata.current_details
    page = await _page(http, f"/calls/{call_id}")
    assert "Big?" in page
