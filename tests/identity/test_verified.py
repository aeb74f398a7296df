"""Verified answerers against a real server: tokens from the inbox and the CLI are accepted;
missing, forged, expired, mismatched and not-allowed ones are refused with their typed reason,
and status and history show the verified name.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
from datetime import timedelta
from typing import Any

import pytest
from e2e._cli import CliRun
from e2e._cli import run_cli as _run_cli
from helpers.waiting import wait_for_phase, wait_until_async

from scope_tool import Request
from scope_tool.client import AnswerRejectedError, Phase, RefusalReason, ToolCallHandle, ToolCalls
from scope_tool.client.history import AnswerVia
from scope_tool.wire.identity import issue_token

from ._inbox import proxied_inbox
from .conftest import SECRET

DEPLOYER = {"user": "ops", "roles": ["deployer"]}


async def run_cli(*args: str, **options: Any) -> CliRun:
    """The CLI in a thread, so this process's worker keeps answering its status queries."""
    return await asyncio.to_thread(_run_cli, *args, **options)


async def _waiting_call(calls: ToolCalls, **options: Any) -> ToolCallHandle:
    from scope_tool import Principal

    tag = f"v-{uuid.uuid4()}"
    handle = await calls.start(
        Request(name="guarded_ask", arguments=json.dumps({"tag": tag})),
        call_id=tag,
        principal=Principal(user="ops", roles=("deployer",)),
        **options,
    )
    await wait_for_phase(handle, Phase.AWAITING_INPUT)
    return handle


async def _refused(handle: ToolCallHandle, **answer: Any) -> AnswerRejectedError:
    with pytest.raises(AnswerRejectedError) as refused:
        await handle.answer(True, **answer)
    return refused.value


async def test_bad_tokens_are_refused_with_their_reason_and_change_nothing(
    calls: ToolCalls, worker: Any
) -> None:
    handle = await _waiting_call(calls, require_verified=True, allowed_answerers=("alice",))
    assert (await handle.status()).require_verified is True

    missing = await _refused(handle, answered_by="alice")
    assert missing.reason is RefusalReason.NOT_VERIFIED
    assert "requires a verified identity" in str(missing)

    forged = issue_token("alice", secret="some-other-secret-entirely", issuer="cli")
    wrong_secret = await _refused(handle, identity_token=forged)
    assert wrong_secret.reason is RefusalReason.NOT_VERIFIED
    assert "signature does not match" in str(wrong_secret)

    old = issue_token(
        "alice", secret=SECRET, issuer="cli", lifetime=timedelta(seconds=60), now=time.time() - 120
    )
    expired = await _refused(handle, identity_token=old)
    assert expired.reason is RefusalReason.TOKEN_EXPIRED
    assert "expired" in str(expired)

    alices = issue_token("alice", secret=SECRET, issuer="cli")
    claimed = await _refused(handle, identity_token=alices, answered_by="bob")
    assert claimed.reason is RefusalReason.NOT_VERIFIED
    assert "claims to be by 'bob'" in str(claimed)

    # The verified name, not a claim, is what allowed_answerers is matched against.
    mallorys = issue_token("mallory", secret=SECRET, issuer="cli")
    not_allowed = await _refused(handle, identity_token=mallorys)
    assert not_allowed.reason is RefusalReason.NOT_ALLOWED
    assert not_allowed.detail.allowed_answerers == ("alice",)

    # A signal with a token (even a genuine one) is recorded as refused: tokens go by update,
    # whose validator verifies them. The call keeps waiting.
    await handle.signal_answer(True, identity_token=alices)
    await wait_until_async(lambda: _has_refusal(handle))
    status = await handle.status()
    assert status.phase is Phase.AWAITING_INPUT
    assert status.answers == ()
    assert [r.reason for r in status.refused] == ["not_verified"]
    assert "by update only" in status.refused[0].message

    receipt = await handle.answer(True, identity_token=alices)
    assert receipt.round == 1
    assert (await handle.result()).phase is Phase.COMPLETED
    [record] = (await handle.status()).answers
    assert (record.answered_by, record.verified) == ("alice", True)
    trail = await handle.history()
    assert trail.require_verified is True
    assert [(a.answered_by, a.verified, a.via) for a in trail.answers] == [
        ("alice", True, AnswerVia.UPDATE)
    ]
    assert [r.reason for r in trail.refusals] == ["not_verified"]


async def _has_refusal(handle: ToolCallHandle) -> bool:
    return bool((await handle.status()).refused)


async def test_an_operator_token_from_the_cli_is_accepted_and_shown_in_history(
    calls: ToolCalls, worker: Any, temporal_address: str, task_queue: str
) -> None:
    env = {**os.environ, "SCOPE_TOOL_TASK_QUEUE": task_queue}
    handle = await _waiting_call(calls, require_verified=True)

    unverified = await run_cli(
        "answer", handle.call_id, "true", "--by", "op", address=temporal_address, env=env
    )
    assert unverified.code == 1
    assert "answer refused (not_verified)" in unverified.stderr

    issued = await run_cli("token", "issue", "--for", "operator-olga", "--ttl", "60", env=env)
    assert issued.code == 0, issued.stderr
    token = issued.stdout.strip()
    assert token.startswith("st1.")
    no_secret = {k: v for k, v in env.items() if k != "SCOPE_TOOL_IDENTITY_SECRET"}
    refused = await run_cli("token", "issue", "--for", "olga", env=no_secret)
    assert refused.code == 2
    assert "SCOPE_TOOL_IDENTITY_SECRET is not set" in refused.stderr

    answered = await run_cli(
        "answer", handle.call_id, "true", "--token", token, address=temporal_address, env=env
    )
    assert answered.code == 0, answered.stderr
    assert (await handle.result()).phase is Phase.COMPLETED
    [record] = (await handle.status()).answers
    assert (record.answered_by, record.verified) == ("operator-olga", True)

    status = await run_cli("status", handle.call_id, address=temporal_address, env=env)
    assert "by operator-olga (verified)" in status.stdout
    history = await run_cli("history", handle.call_id, address=temporal_address, env=env)
    assert history.code == 0, history.stderr
    assert f"answered  {handle.call_id}/r1 by operator-olga (verified) via update" in history.stdout
    assert "answers   verified identities only" in history.stdout
    as_json = json.loads(
        (
            await run_cli("history", handle.call_id, "--json", address=temporal_address, env=env)
        ).stdout
    )
    assert as_json["answers"][0]["answered_by"] == "operator-olga"
    assert as_json["answers"][0]["verified"] is True


async def test_the_inbox_answers_with_a_token_for_the_person_it_authenticated(
    calls: ToolCalls, worker: Any
) -> None:
    handle = await _waiting_call(calls, require_verified=True, allowed_answerers=("carol",))
    async with proxied_inbox(calls) as http:
        page = await http.get(f"/calls/{handle.call_id}", headers={"X-Forwarded-User": "carol"})
        assert 'data-testid="require-verified"' in page.text
        mallory = await http.post(
            f"/api/calls/{handle.call_id}/answer",
            headers={"X-Forwarded-User": "mallory"},
            json={"response": True},
        )
        assert mallory.status_code == 403
        assert mallory.json()["reason"] == "not_allowed"
        carol = await http.post(
            f"/api/calls/{handle.call_id}/answer",
            headers={"X-Forwarded-User": "carol"},
            json={"response": True},
        )
        assert carol.status_code == 200, carol.text
        assert (await handle.result()).phase is Phase.COMPLETED
        done = await http.get(f"/calls/{handle.call_id}", headers={"X-Forwarded-User": "carol"})
    assert 'data-testid="verified"' in done.text
    [record] = (await handle.status()).answers
    assert (record.answered_by, record.verified) == ("carol", True)
    [answer] = (await handle.history()).answers
    assert (answer.answered_by, answer.verified) == ("carol", True)


async def test_an_inbox_without_the_secret_cannot_answer_a_verified_call(
    calls: ToolCalls, worker: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    handle = await _waiting_call(calls, require_verified=True)
    monkeypatch.delenv("SCOPE_TOOL_IDENTITY_SECRET")
    async with proxied_inbox(calls) as http:
        sent = await http.post(
            f"/api/calls/{handle.call_id}/answer",
            headers={"X-Forwarded-User": "carol"},
            json={"response": True},
        )
    assert sent.status_code == 403
    assert sent.json()["reason"] == "not_verified"
    assert (await handle.status()).answers == ()
    await handle.cancel()


async def test_a_worker_without_the_secret_names_itself_in_the_refusal(
    temporal_client: Any, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One replica without SCOPE_TOOL_IDENTITY_SECRET: the refusal says which one (#26.13)."""
    from scope_tool.wire.identity import SECRET_VARIABLE, install_identity_secret
    from scope_tool.workers import build_worker

    from .tools import REGISTRY

    monkeypatch.delenv(SECRET_VARIABLE, raising=False)
    install_identity_secret(None)
    calls = ToolCalls(temporal_client, task_queue=task_queue)
    async with build_worker(temporal_client, REGISTRY, task_queue=task_queue):
        handle = await _waiting_call(calls, require_verified=True)
        token = issue_token("alice", secret=SECRET, issuer="test", lifetime=timedelta(minutes=5))
        refused = await _refused(handle, identity_token=token)
        assert refused.reason is RefusalReason.NOT_VERIFIED
        assert f"worker {temporal_client.identity} cannot verify identities" in refused.message
        assert SECRET_VARIABLE in refused.message
        await handle.cancel()
