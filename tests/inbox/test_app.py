"""The inbox over HTTP (httpx in-process) against the real dev server and an in-process worker.

Each test starts real ``ask`` calls, drives the pages and the JSON API as a browser or a script
would, and checks the call itself (``status``/``result``) to see what really happened.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from inbox.ask_tools import start_waiting, wait_for_phase
from scope_tool.client import Phase, ToolCalls
from scope_tool.inbox import AllowedHosts, InboxAuth, create_app

HEADER = "X-Forwarded-User"
REFUND_SCHEMA = {
    "type": "object",
    "properties": {
        "approved": {"type": "boolean"},
        "amount": {"type": "integer", "minimum": 1, "maximum": 500},
        "reason": {"type": "string", "minLength": 5},
        "refund": {
            "type": "object",
            "properties": {"method": {"enum": ["card", "voucher"]}, "note": {"type": "string"}},
            "required": ["method"],
        },
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
    },
    "required": ["approved", "amount", "reason"],
    "additionalProperties": False,
}


def _call_id() -> str:
    return f"inbox-{uuid.uuid4()}"


@pytest.fixture
async def http(calls: ToolCalls, worker: Any) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the inbox in header mode (a proxy would set X-Forwarded-User)."""
    app = create_app(
        calls,
        auth=InboxAuth(identity_header=HEADER),
        allowed_hosts=AllowedHosts.parse(["inbox.test"]),
        refresh_seconds=0.5,
    )
    transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 40000))
    async with httpx.AsyncClient(transport=transport, base_url="http://inbox.test") as client:
        yield client


def _as(name: str) -> dict[str, str]:
    return {HEADER: name}


def _csrf(page: str) -> str:
    found = re.search(r'name="_csrf" value="([0-9a-f]+)"', page)
    assert found, "the call page has no CSRF token"
    return found.group(1)


async def _form_page(http: httpx.AsyncClient, call_id: str, who: str) -> str:
    page = await http.get(f"/calls/{call_id}", headers=_as(who))
    assert page.status_code == 200, page.text
    return page.text


async def test_list_shows_waiting_calls_oldest_first_with_prompt_and_deadline(
    calls: ToolCalls, http: httpx.AsyncClient
) -> None:
    from datetime import timedelta

    older, newer = _call_id(), _call_id()
    await start_waiting(calls, older, "Refund order 1?", {"type": "boolean"})
    await start_waiting(
        calls, newer, "Refund order 2?", {"type": "boolean"}, answer_timeout=timedelta(hours=2)
    )
    for _ in range(100):  # visibility is eventually consistent
        listed = (await http.get("/api/pending", headers=_as("alice"))).json()
        # Other suites' calls may wait in the same namespace: look at this test's two.
        ids = [entry["call_id"] for entry in listed["calls"] if entry["call_id"] in (older, newer)]
        if len(ids) == 2:
            break
        await asyncio.sleep(0.1)
    assert ids == [older, newer]  # as `scope-tool pending` lists them: first asked, first shown
    assert listed["identity"] == "alice"
    entries = {entry["call_id"]: entry for entry in listed["calls"]}
    first = entries[newer]
    assert first["prompt"] == "Refund order 2?"
    assert first["response_schema"] == {"type": "boolean"}
    assert first["deadline"] is not None
    assert first["deadline"].endswith("Z")
    assert entries[older]["deadline"] is None
    page = await http.get("/", headers=_as("alice"))
    assert page.status_code == 200
    assert page.text.index("Refund order 1?") < page.text.index("Refund order 2?")
    assert "in 2 h" in page.text
    assert "alice" in page.text


async def test_form_answer_is_converted_sent_and_recorded_with_the_identity(
    calls: ToolCalls, http: httpx.AsyncClient
) -> None:
    call_id = _call_id()
    status = await start_waiting(calls, call_id, "Refund?", REFUND_SCHEMA)
    page = await _form_page(http, call_id, "alice")
    for name in ('name="/approved"', 'name="/amount"', 'min="1"', 'max="500"', 'minlength="5"'):
        assert name in page
    response = await http.post(
        f"/calls/{call_id}/answer",
        headers=_as("alice"),
        data={
            "_csrf": _csrf(page),
            "_request_id": status.pending.request_id,
            "_form": "fields",
            "/approved": "true",
            "/amount": "120",
            "/reason": "damaged in transit",
            "/refund/method": '"voucher"',
            "/refund/note": "",
            "/tags": "urgent\n\nvip\n",
        },
    )
    assert response.status_code == 303, response.text
    outcome = await calls.get(call_id).result()
    assert outcome.phase is Phase.COMPLETED
    assert json.loads(outcome.output.details or b"") == {
        "approved": True,
        "amount": 120,
        "reason": "damaged in transit",
        "refund": {"method": "voucher"},
        "tags": ["urgent", "vip"],
    }
    final = await calls.get(call_id).status()
    assert [answer.answered_by for answer in final.answers] == ["alice"]
    shown = await http.get(response.headers["location"], headers=_as("alice"))
    assert "was accepted" in shown.text
    assert "COMPLETED" in shown.text


async def test_schema_refusal_is_shown_with_the_values_kept_and_the_call_unchanged(
    calls: ToolCalls, http: httpx.AsyncClient
) -> None:
    call_id = _call_id()
    status = await start_waiting(calls, call_id, "Refund?", REFUND_SCHEMA)
    page = await _form_page(http, call_id, "alice")
    response = await http.post(
        f"/calls/{call_id}/answer",
        headers=_as("alice"),
        data={
            "_csrf": _csrf(page),
            "_request_id": status.pending.request_id,
            "_form": "fields",
            "/approved": "true",
            "/amount": "9000",  # over the maximum: only the workflow's check stops this
            "/reason": "too expensive",
            "/tags": "a\nb\nc\nd",
        },
    )
    assert response.status_code == 422
    assert "refused" in response.text
    assert "schema" in response.text
    assert 'value="9000"' in response.text
    assert 'value="too expensive"' in response.text
    assert "a\nb\nc\nd</textarea>" in response.text
    after = await calls.get(call_id).status()
    assert after.phase is Phase.AWAITING_INPUT
    assert after.answers == ()
    assert after.pending.request_id == status.pending.request_id


async def test_conversion_problems_name_the_fields_and_send_nothing(
    calls: ToolCalls, http: httpx.AsyncClient
) -> None:
    call_id = _call_id()
    status = await start_waiting(calls, call_id, "Refund?", REFUND_SCHEMA)
    page = await _form_page(http, call_id, "alice")
    response = await http.post(
        f"/calls/{call_id}/answer",
        headers=_as("alice"),
        data={
            "_csrf": _csrf(page),
            "_request_id": status.pending.request_id,
            "_form": "fields",
            "/amount": "twelve",
            "/reason": "",
        },
    )
    assert response.status_code == 422
    assert "&#39;twelve&#39; is not a whole number" in response.text
    assert 'data-field-error="/reason"' in response.text
    assert 'value="twelve"' in response.text
    assert (await calls.get(call_id).status()).answers == ()


async def test_a_person_not_allowed_is_refused_and_an_allowed_one_gets_through(
    calls: ToolCalls, http: httpx.AsyncClient
) -> None:
    call_id = _call_id()
    status = await start_waiting(
        calls, call_id, "Ship it?", {"type": "boolean"}, allowed_answerers=("bob",)
    )
    page = await _form_page(http, call_id, "mallory")
    assert 'data-testid="answer-form"' not in page, "Approve offered to a person who may not"
    assert "so this page offers you no answer" in page
    # A post made anyway (by hand, with a form token from a call mallory may answer) is refused
    # by the call itself.
    open_call = _call_id()
    await start_waiting(calls, open_call, "Anyone?", {"type": "boolean"})
    token = _csrf(await _form_page(http, open_call, "mallory"))
    refused = await http.post(
        f"/calls/{call_id}/answer",
        headers=_as("mallory"),
        data={"_csrf": token, "_request_id": status.pending.request_id, "_decision": "true"},
    )
    assert refused.status_code == 403
    assert "not allowed" in refused.text
    assert (await calls.get(call_id).status()).phase is Phase.AWAITING_INPUT
    page = await _form_page(http, call_id, "bob")
    accepted = await http.post(
        f"/calls/{call_id}/answer",
        headers=_as("bob"),
        data={"_csrf": _csrf(page), "_request_id": status.pending.request_id, "_decision": "false"},
    )
    assert accepted.status_code == 303
    outcome = await calls.get(call_id).result()
    assert outcome.output.details == b"false"


async def test_the_call_page_and_api_show_who_may_answer(
    calls: ToolCalls, http: httpx.AsyncClient
) -> None:
    restricted = _call_id()
    await start_waiting(
        calls, restricted, "Ship it?", {"type": "boolean"}, allowed_answerers=("bob", "alice")
    )
    notice = "You (mallory) are not among them"
    outsider = await _form_page(http, restricted, "mallory")
    assert re.search(r'data-testid="allowed-list">bob, alice<', outsider)
    assert notice in outsider
    assert 'data-testid="answer-form"' not in outsider
    assert "Approve</button>" not in outsider
    insider = await _form_page(http, restricted, "alice")
    assert re.search(r'data-testid="allowed-list">bob, alice<', insider)
    assert "are not among them" not in insider
    shown = (await http.get(f"/api/calls/{restricted}", headers=_as("mallory"))).json()
    assert shown["allowed_answerers"] == ["bob", "alice"]

    open_call = _call_id()
    await start_waiting(calls, open_call, "Anyone?", {"type": "boolean"})
    page = await _form_page(http, open_call, "mallory")
    assert "Who may answer" not in page
    assert "are not among them" not in page
    shown = (await http.get(f"/api/calls/{open_call}", headers=_as("mallory"))).json()
    assert shown["allowed_answerers"] == []


async def test_a_stale_form_is_refused_without_touching_the_next_question(
    calls: ToolCalls, http: httpx.AsyncClient
) -> None:
    call_id = _call_id()
    status = await start_waiting(calls, call_id, "Ship it?", {"type": "boolean"})
    page = await _form_page(http, call_id, "alice")
    await calls.get(call_id).answer(True, request_id=status.pending.request_id, answered_by="bob")
    await wait_for_phase(calls.get(call_id), Phase.COMPLETED)
    late = await http.post(
        f"/calls/{call_id}/answer",
        headers=_as("alice"),
        data={"_csrf": _csrf(page), "_request_id": status.pending.request_id, "_decision": "false"},
    )
    assert late.status_code == 409
    assert "no longer pending" in late.text
    final = await calls.get(call_id).status()
    assert [answer.answered_by for answer in final.answers] == ["bob"]


async def test_a_post_without_the_csrf_token_or_from_another_site_changes_nothing(
    calls: ToolCalls, http: httpx.AsyncClient
) -> None:
    call_id = _call_id()
    status = await start_waiting(calls, call_id, "Ship it?", {"type": "boolean"})
    request_id = status.pending.request_id
    no_token = await http.post(
        f"/calls/{call_id}/answer",
        headers=_as("alice"),
        data={"_request_id": request_id, "_decision": "true"},
    )
    assert no_token.status_code == 403
    assert "security token" in no_token.text
    page = await _form_page(http, call_id, "alice")
    cross_site = await http.post(
        f"/calls/{call_id}/answer",
        headers={**_as("alice"), "Origin": "https://evil.example"},
        data={"_csrf": _csrf(page), "_request_id": request_id, "_decision": "true"},
    )
    assert cross_site.status_code == 403
    assert "another site" in cross_site.text
    # A token is bound to its person: bob cannot replay alice's.
    replay = await http.post(
        f"/calls/{call_id}/answer",
        headers=_as("bob"),
        data={"_csrf": _csrf(page), "_request_id": request_id, "_decision": "true"},
    )
    assert replay.status_code == 403
    api_form = await http.post(
        f"/api/calls/{call_id}/answer", headers=_as("alice"), data={"response": "true"}
    )
    assert api_form.status_code == 415
    assert (await calls.get(call_id).status()).answers == ()


async def test_json_api_reads_and_answers_a_call(calls: ToolCalls, http: httpx.AsyncClient) -> None:
    call_id = _call_id()
    await start_waiting(calls, call_id, {"question": "Pick one"}, {"enum": ["red", "blue"]})
    shown = (await http.get(f"/api/calls/{call_id}", headers=_as("carol"))).json()
    assert shown["phase"] == "AWAITING_INPUT"
    assert shown["pending"]["prompt"] == {"question": "Pick one"}
    bad = await http.post(
        f"/api/calls/{call_id}/answer", headers=_as("carol"), json={"response": "green"}
    )
    assert bad.status_code == 422
    assert bad.json()["reason"] == "schema"
    good = await http.post(
        f"/api/calls/{call_id}/answer",
        headers=_as("carol"),
        json={"response": "blue", "request_id": shown["pending"]["request_id"]},
    )
    assert good.status_code == 200, good.text
    assert good.json()["accepted"] is True
    assert good.json()["answered_by"] == "carol"
    await wait_for_phase(calls.get(call_id), Phase.COMPLETED)
    done = (await http.get(f"/api/calls/{call_id}", headers=_as("carol"))).json()
    assert done["outcome"]["details"] == "blue"
    assert done["answers"][0]["response"] == "blue"
    assert done["answers"][0]["answered_by"] == "carol"
    assert done["fingerprint"] != shown["fingerprint"]
    again = await http.post(
        f"/api/calls/{call_id}/answer", headers=_as("carol"), json={"response": "red"}
    )
    assert again.status_code == 409


async def test_an_unknown_call_is_a_clear_404(http: httpx.AsyncClient) -> None:
    page = await http.get("/calls/no-such-call", headers=_as("alice"))
    assert page.status_code == 404
    assert "no-such-call" in page.text
    api = await http.get("/api/calls/no-such-call", headers=_as("alice"))
    assert api.status_code == 404
    assert api.json()["reason"] == "not_found"


async def test_call_ids_with_slashes_and_spaces_work(
    calls: ToolCalls, http: httpx.AsyncClient
) -> None:
    call_id = f"team a/{uuid.uuid4()}/refund"
    status = await start_waiting(calls, call_id, "Odd id?", {"type": "boolean"})
    quoted = call_id.replace("/", "%2F").replace(" ", "%20")
    page = await http.get(f"/calls/{quoted}", headers=_as("alice"))
    assert page.status_code == 200
    assert "Odd id?" in page.text
    answered = await http.post(
        f"/calls/{quoted}/answer",
        headers=_as("alice"),
        data={
            "_csrf": _csrf(page.text),
            "_request_id": status.pending.request_id,
            "_decision": "true",
        },
    )
    assert answered.status_code == 303
    assert (await calls.get(call_id).result()).output.details == b"true"


async def test_a_call_whose_worker_is_gone_does_not_stall_the_list(
    calls: ToolCalls, http: httpx.AsyncClient, temporal_client: Any
) -> None:
    from inbox.ask_tools import REGISTRY
    from scope_tool.workers import build_worker

    orphan_queue = f"orphan-{uuid.uuid4()}"
    orphans = ToolCalls(temporal_client, task_queue=orphan_queue)
    orphan_id, live_id = _call_id(), _call_id()
    async with build_worker(temporal_client, REGISTRY, task_queue=orphan_queue):
        await start_waiting(orphans, orphan_id, "Nobody can read me", {"type": "boolean"})
    await start_waiting(calls, live_id, "Readable", {"type": "boolean"})
    try:
        for _ in range(100):
            started = asyncio.get_running_loop().time()
            listed = (await http.get("/api/pending", headers=_as("alice"))).json()
            took = asyncio.get_running_loop().time() - started
            unreadable = [entry["call_id"] for entry in listed["unreadable"]]
            if orphan_id in unreadable and live_id in [c["call_id"] for c in listed["calls"]]:
                break
            await asyncio.sleep(0.1)
        assert orphan_id in unreadable
        assert took < 6  # one short status timeout, not the server's half minute
        started = asyncio.get_running_loop().time()
        page = await http.get("/", headers=_as("alice"))
        assert asyncio.get_running_loop().time() - started < 1  # not asked again for a while
        assert "cannot be read now" in page.text
        assert orphan_id in page.text
        assert "Readable" in page.text
    finally:
        async with build_worker(temporal_client, REGISTRY, task_queue=orphan_queue):
            await orphans.get(orphan_id).cancel()
            await wait_for_phase(orphans.get(orphan_id), Phase.CANCELLED)


async def test_an_oversized_api_body_is_refused(calls: ToolCalls, http: httpx.AsyncClient) -> None:
    call_id = _call_id()
    await start_waiting(calls, call_id, "Big?", {"type": "string"})
    huge = json.dumps({"response": "x" * (3 << 20)})
    response = await http.post(
        f"/api/calls/{call_id}/answer",
        headers={**_as("alice"), "Content-Type": "application/json"},
        content=huge,
    )
    assert response.status_code == 413
    assert response.json()["reason"] == "too_large"
    assert (await calls.get(call_id).status()).answers == ()


async def test_choice_buttons_and_the_json_editor_send_typed_answers(
    calls: ToolCalls, http: httpx.AsyncClient
) -> None:
    choice_id, free_id = _call_id(), _call_id()
    choice = await start_waiting(calls, choice_id, "Strategy?", {"enum": ["canary", 2]})
    free = await start_waiting(calls, free_id, "Anything?", {"type": "array"})
    page = await _form_page(http, choice_id, "alice")
    assert 'name="_decision" value="&#34;canary&#34;"' in page
    assert 'name="_decision" value="2"' in page
    sent = await http.post(
        f"/calls/{choice_id}/answer",
        headers=_as("alice"),
        data={"_csrf": _csrf(page), "_request_id": choice.pending.request_id, "_decision": "2"},
    )
    assert sent.status_code == 303
    assert (await calls.get(choice_id).result()).output.details == b"2"
    page = await _form_page(http, free_id, "alice")
    assert 'name="_answer_json"' in page
    written = '[1, {"b": "x"}]'
    sent = await http.post(
        f"/calls/{free_id}/answer",
        headers=_as("alice"),
        data={
            "_csrf": _csrf(page),
            "_request_id": free.pending.request_id,
            "_answer_json": written,
        },
    )
    assert sent.status_code == 303
    final = await calls.get(free_id).status()
    assert final.answers[0].response == written.encode()  # sent exactly as written
