"""Form tokens are bound to a person, a browser session and a time.

The probe (issue #17 item 7): the form token was an HMAC of the identity alone, so one token
worked for that person in any browser, forever. Here a token is refused in another browser
session and after :data:`FORM_TOKEN_LIFETIME` (the app's clock is moved), each time with a clear
message and a fresh form that then goes through; the call is untouched until it does.
"""

from __future__ import annotations

import re
import uuid
from datetime import timedelta
from typing import Any

import httpx
import pytest

from inbox.ask_tools import start_waiting
from scope_tool.client import Phase, ToolCalls
from scope_tool.inbox import InboxAuth, create_app
from scope_tool.inbox.csrf import (
    FORM_TOKEN_LIFETIME,
    SESSION_COOKIE,
    FormTokenProblem,
    FormTokens,
    new_session_id,
)

BASE = "http://127.0.0.1:8234"


class Clock:
    """A clock the test moves."""

    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _csrf(page: str) -> str:
    found = re.search(r'name="_csrf" value="([0-9a-f]+)"', page)
    assert found, "the call page has no form token"
    return found.group(1)


# -- the token ----------------------------------------------------------------------------------


def test_a_token_is_good_for_its_person_session_and_lifetime_only() -> None:
    clock = Clock()
    tokens = FormTokens("a-test-secret-of-enough-bytes", clock=clock)
    session, other_session = new_session_id(), new_session_id()
    token = tokens.mint("alice", session_id=session)
    assert tokens.problem("alice", session_id=session, sent=token) is None
    assert tokens.problem("bob", session_id=session, sent=token) is FormTokenProblem.FOREIGN
    foreign = tokens.problem("alice", session_id=other_session, sent=token)
    assert foreign is FormTokenProblem.FOREIGN
    assert tokens.problem("alice", session_id=None, sent=token) is FormTokenProblem.FOREIGN
    restarted = FormTokens(None, clock=clock)  # a random key: pages from before are refused
    assert restarted.problem("alice", session_id=session, sent=token) is FormTokenProblem.FOREIGN
    assert tokens.problem("alice", session_id=session, sent="") is FormTokenProblem.MISSING
    assert tokens.problem("alice", session_id=session, sent="zz") is FormTokenProblem.MALFORMED
    clock.now += FORM_TOKEN_LIFETIME.total_seconds() - 1
    assert tokens.problem("alice", session_id=session, sent=token) is None
    clock.now += 1
    assert tokens.problem("alice", session_id=session, sent=token) is FormTokenProblem.EXPIRED
    # The signature comes first: a forged token is foreign, never "expired".
    forged = token[:12] + "0" * 64
    assert tokens.problem("alice", session_id=session, sent=forged) is FormTokenProblem.FOREIGN
    # Nor does rewriting the issue time revive an expired token.
    fresh_stamp = f"{int(clock.now):012x}" + token[12:]
    assert tokens.problem("alice", session_id=session, sent=fresh_stamp) is (
        FormTokenProblem.FOREIGN
    )


def test_each_refusal_says_why_and_what_to_do() -> None:
    tokens = FormTokens(None, lifetime=timedelta(hours=12))
    assert "expired (a form is good for 12 h" in tokens.explain(FormTokenProblem.EXPIRED)
    assert "another browser session" in tokens.explain(FormTokenProblem.FOREIGN)
    for problem in FormTokenProblem:
        assert "security token" in tokens.explain(problem)
        assert "nothing was sent" in tokens.explain(problem)
    with pytest.raises(ValueError, match="must be positive"):
        FormTokens(None, lifetime=timedelta(0))


# -- in the app ---------------------------------------------------------------------------------


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def app(calls: ToolCalls, worker: Any, clock: Clock) -> Any:
    return create_app(calls, auth=InboxAuth(dev_loopback=True), clock=clock)


def _browser(app: Any) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 40000))
    return httpx.AsyncClient(transport=transport, base_url=BASE)


async def test_the_page_sets_a_strict_http_only_session_cookie(app: Any) -> None:
    async with _browser(app) as browser:
        page = await browser.get("/")
        cookie = page.headers["set-cookie"]
        assert cookie.startswith(f"{SESSION_COOKIE}=")
        assert "HttpOnly" in cookie
        assert "SameSite=strict" in cookie
        assert "set-cookie" not in (await browser.get("/")).headers  # kept, not renewed
        switched = await browser.get("/?as=erin")  # a new person: a new session
        assert f"{SESSION_COOKIE}=" in ";".join(switched.headers.get_list("set-cookie"))


async def test_an_expired_form_is_refused_then_the_fresh_one_goes_through(
    calls: ToolCalls, app: Any, clock: Clock
) -> None:
    call_id = f"expiry-{uuid.uuid4()}"
    status = await start_waiting(calls, call_id, "Ship it?", {"type": "boolean"})
    async with _browser(app) as browser:
        old = _csrf((await browser.get(f"/calls/{call_id}")).text)
        clock.now += FORM_TOKEN_LIFETIME.total_seconds() + 60
        form = {"_request_id": status.pending.request_id, "_decision": "true"}
        late = await browser.post(f"/calls/{call_id}/answer", data={"_csrf": old, **form})
        assert late.status_code == 403
        assert "security token has expired" in late.text
        assert 'data-testid="answer-form"' in late.text  # the form again, to send once more
        fresh = _csrf(late.text)
        assert fresh != old
        assert (await calls.get(call_id).status()).answers == ()
        sent = await browser.post(f"/calls/{call_id}/answer", data={"_csrf": fresh, **form})
        assert sent.status_code == 303, sent.text[:300]
    assert (await calls.get(call_id).result()).output.details == b"true"


async def test_a_token_from_another_browser_session_is_refused(calls: ToolCalls, app: Any) -> None:
    call_id = f"session-{uuid.uuid4()}"
    status = await start_waiting(calls, call_id, "Ship it?", {"type": "boolean"})
    form = {"_request_id": status.pending.request_id, "_decision": "true"}
    async with _browser(app) as first, _browser(app) as second:
        token = _csrf((await first.get(f"/calls/{call_id}")).text)
        await second.get("/")  # the other browser has a session of its own
        replayed = await second.post(f"/calls/{call_id}/answer", data={"_csrf": token, **form})
        assert replayed.status_code == 403
        assert "another browser session" in replayed.text
        assert (await calls.get(call_id).status()).answers == ()
        # Without any session cookie: refused, and the page hands out a session and a token.
        first.cookies.clear()
        bare = await first.post(f"/calls/{call_id}/answer", data={"_csrf": token, **form})
        assert bare.status_code == 403
        assert f"{SESSION_COOKIE}=" in bare.headers["set-cookie"]
        retried = await first.post(
            f"/calls/{call_id}/answer", data={"_csrf": _csrf(bare.text), **form}
        )
        assert retried.status_code == 303, retried.text[:300]
    final = await calls.get(call_id).status()
    assert final.phase in (Phase.RUNNING, Phase.COMPLETED)
    assert len(final.answers) == 1
