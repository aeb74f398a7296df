"""Slack approvals: the worker posts a Block Kit message with a button per decision to an
incoming webhook (a loopback stand-in); button presses, signed in the test with Slack's v0
scheme, drive the inbox's interactivity endpoint in-process.

Slack's own published example (docs: "Verifying requests from Slack") is a fixed vector.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import json
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from e2e._cli import run_cli
from helpers.waiting import wait_until

from channels._servers import SlackHook
from channels.conftest import SECRET
from scope_tool import Request
from scope_tool.client import Phase, ToolCalls
from scope_tool.config.channels import SlackReceiving, SlackSettings
from scope_tool.inbox import AllowedHosts, InboxAuth, create_app
from scope_tool.inbox.channels import slack_signature, verify_slack_signature
from scope_tool.testing import wait_for_input
from scope_tool.wire import AnnounceInput
from scope_tool.wire.links import link_key
from scope_tool.workers._channels import Announcer

SIGNING_SECRET = "test-slack-signing-secret-0123"
USERS = {"U01ALICE": "alice", "U02BOB": "bob", "U03MALLORY": "mallory"}
RESPONSE_URL = "https://hooks.slack.com/actions/T000/1/abcdef"

# Slack's worked example, from "Verifying requests from Slack".
DOC_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
DOC_TIMESTAMP = "1531420618"
DOC_BODY = (
    b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow"
    b"&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner"
    b"&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands"
    b"%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN"
    b"&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
)
DOC_SIGNATURE = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"


def test_slacks_published_example_signature_verifies() -> None:
    assert slack_signature(DOC_SECRET, DOC_TIMESTAMP, DOC_BODY) == DOC_SIGNATURE
    headers = {"x-slack-request-timestamp": DOC_TIMESTAMP, "x-slack-signature": DOC_SIGNATURE}
    at = int(DOC_TIMESTAMP) + 60
    assert verify_slack_signature(DOC_SECRET, DOC_BODY, headers, now=at) is None
    assert verify_slack_signature(DOC_SECRET, DOC_BODY + b"x", headers, now=at) == "bad_signature"
    assert verify_slack_signature("other", DOC_BODY, headers, now=at) == "bad_signature"
    assert (
        verify_slack_signature(DOC_SECRET, DOC_BODY, headers, now=int(DOC_TIMESTAMP) + 301)
        == "stale_timestamp"
    )


@pytest.fixture
async def inbox(calls: ToolCalls, identity_secret: str) -> AsyncIterator[tuple[Any, list[Any]]]:
    """The inbox app in-process; Slack message updates are recorded instead of sent."""
    updates: list[tuple[str, dict[str, Any]]] = []
    app = create_app(
        calls,
        auth=InboxAuth(token_secret="slack-test-login-secret-0123456"),
        allowed_hosts=AllowedHosts.parse(["inbox.test"]),
        identity_secret=SECRET,
        slack=SlackReceiving(signing_secret=SIGNING_SECRET, users=USERS),
        slack_responder=lambda url, message: updates.append((url, message)),
    )
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://inbox.test") as http:
        yield http, updates


def _press(user: str, value: str, *, timestamp: int | None = None, secret: str = SIGNING_SECRET):
    payload = {
        "type": "block_actions",
        "user": {"id": user},
        "actions": [{"action_id": "scope_tool_decide_0", "value": value}],
        "response_url": RESPONSE_URL,
    }
    body = urlencode({"payload": json.dumps(payload)}).encode()
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    headers = {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": slack_signature(secret, stamp, body),
    }
    return body, headers


async def _posted(calls: ToolCalls, slack_hook: SlackHook, call_id: str) -> dict[str, str]:
    handle = await calls.start(
        Request(
            "ask",
            json.dumps({"prompt": {"question": f"Ship {call_id}?"}, "schema": {"type": "boolean"}}),
        ),
        call_id=call_id,
        allowed_answerers=("alice", "bob"),
        require_verified=True,
        channels=("slack",),
    )
    await wait_for_input(handle)
    await wait_until(lambda: any(call_id in json.dumps(p) for p in slack_hook.posts))
    [message] = [p for p in slack_hook.posts if call_id in json.dumps(p)]
    [actions] = [b for b in message["blocks"] if b["type"] == "actions"]
    return {e["text"]["text"]: e["value"] for e in actions["elements"] if "value" in e}


async def test_a_signed_button_press_answers_as_the_mapped_person_and_updates_the_message(
    calls: ToolCalls,
    worker: Any,
    slack_hook: SlackHook,
    inbox: tuple[Any, list[Any]],
    task_queue: str,
    temporal_address: str,
) -> None:
    http, updates = inbox
    call_id = f"ship-{uuid.uuid4().hex[:8]}"
    buttons = await _posted(calls, slack_hook, call_id)
    assert set(buttons) == {"Approve", "Deny"}
    handle = calls.get(call_id)

    body, headers = _press("U01ALICE", buttons["Approve"])
    pressed = await http.post("/channels/slack/actions", content=body, headers=headers)
    assert pressed.status_code == 200, pressed.text
    assert pressed.json()["answered_by"] == "alice"
    outcome = await handle.result()
    assert outcome.phase is Phase.COMPLETED
    assert outcome.output.details == b"true"
    [answer] = (await handle.status()).answers
    assert (answer.answered_by, answer.verified, answer.channel) == ("alice", True, "slack")
    [(url, update)] = updates
    assert url == RESPONSE_URL
    assert update["replace_original"] is True
    assert "alice answered true" in update["text"]

    # The same request replayed (signature still fresh): refused, nothing changes.
    replayed = await http.post("/channels/slack/actions", content=body, headers=headers)
    assert replayed.status_code == 409
    assert replayed.json()["reason"] == "finished"
    # Another person's press of the other button: finished too.
    body, headers = _press("U02BOB", buttons["Deny"])
    late = await http.post("/channels/slack/actions", content=body, headers=headers)
    assert late.json()["reason"] == "finished"
    assert len((await handle.history()).answers) == 1
    assert updates[-1][1]["response_type"] == "ephemeral"  # the presser alone is told

    # The command line shows the verified person and the channel.
    status = await asyncio.to_thread(
        run_cli, "status", call_id, "--task-queue", task_queue, address=temporal_address
    )
    assert status.code == 0, status.stderr
    assert "true by alice (verified) through slack" in status.stdout
    history = await asyncio.to_thread(
        run_cli, "history", call_id, "--task-queue", task_queue, address=temporal_address
    )
    assert history.code == 0, history.stderr
    assert f"answered  {call_id}/r1 by alice (verified) via update through slack" in history.stdout


async def test_forged_stale_unknown_and_misdirected_presses_are_refused(
    calls: ToolCalls, worker: Any, slack_hook: SlackHook, inbox: tuple[Any, list[Any]]
) -> None:
    http, _updates = inbox
    call_id = f"guard-{uuid.uuid4().hex[:8]}"
    buttons = await _posted(calls, slack_hook, call_id)
    handle = calls.get(call_id)

    async def press(body: bytes, headers: dict[str, str]) -> tuple[int, str]:
        reply = await http.post("/channels/slack/actions", content=body, headers=headers)
        return reply.status_code, reply.json()["reason"]

    # Forged: signed with another secret; or the body changed after signing.
    assert await press(*_press("U01ALICE", buttons["Approve"], secret="not-the-secret")) == (
        401,
        "bad_signature",
    )
    body, headers = _press("U01ALICE", buttons["Approve"])
    assert await press(body.replace(b"U01ALICE", b"U02BOB"), headers) == (401, "bad_signature")
    # Stale: correctly signed, but more than five minutes old.
    stale = _press("U01ALICE", buttons["Approve"], timestamp=int(time.time()) - 301)
    assert await press(*stale) == (401, "stale_timestamp")
    # Unknown Slack user.
    assert await press(*_press("U99NOBODY", buttons["Approve"])) == (403, "unknown_user")
    # A mapped user the call does not allow.
    assert await press(*_press("U03MALLORY", buttons["Approve"])) == (403, "not_allowed")
    # Wrong call: the button's token altered to name another call.
    head, _, tail = buttons["Approve"].partition(".")
    claims, _, signature = tail.partition(".")
    raw = json.loads(base64.urlsafe_b64decode(claims + "=" * (-len(claims) % 4)))
    raw["call"] = "some-other-call"
    other = base64.urlsafe_b64encode(json.dumps(raw, separators=(",", ":")).encode()).rstrip(b"=")
    forged_value = f"{head}.{other.decode()}.{signature}"
    assert await press(*_press("U01ALICE", forged_value)) == (403, "not_verified")
    # A genuine button of another call that has finished.
    done_id = f"done-{uuid.uuid4().hex[:8]}"
    done_buttons = await _posted(calls, slack_hook, done_id)
    await calls.get(done_id).cancel()
    assert await press(*_press("U01ALICE", done_buttons["Approve"])) == (409, "finished")

    status = await handle.status()
    assert status.phase is Phase.AWAITING_INPUT
    assert status.answers == ()
    assert status.refused == ()  # refusals before the call: nothing reached it


def test_chat_post_message_sends_once_with_the_bot_token(
    slack_hook: SlackHook, tmp_path: Path
) -> None:
    settings = SlackSettings(bot_token="xoxb-test", channel="C0123", api_url=slack_hook.api_url)
    announcer = Announcer(slack=settings, identity_secret=SECRET.encode(), ledger=tmp_path)
    question = AnnounceInput(
        call_id="post-1",
        tool="deploy",
        request_id="post-1/r1",
        arguments="{}",
        prompt=b'"Deploy?"',
        response_schema=b'{"enum": ["canary", "all"]}',
        channels=("slack",),
    )
    key = link_key(SECRET.encode())
    assert announcer._post_one(settings, key, question) is True
    assert announcer._post_one(settings, key, question) is False  # the ledger: once only
    [post] = slack_hook.posts
    assert slack_hook.headers[0]["Authorization"] == "Bearer xoxb-test"
    assert post["channel"] == "C0123"
    [actions] = [b for b in post["blocks"] if b["type"] == "actions"]
    assert [e["text"]["text"] for e in actions["elements"]] == ["canary", "all"]
    # Slack refusing the message is an error the activity retries (and the ledger stays open).
    slack_hook.api_reply = {"ok": False, "error": "channel_not_found"}
    second = dataclasses.replace(question, request_id="post-1/r2")
    with pytest.raises(RuntimeError, match="channel_not_found"):
        announcer._post_one(settings, key, second)
    slack_hook.api_reply = {"ok": True}
    assert announcer._post_one(settings, key, second) is True
