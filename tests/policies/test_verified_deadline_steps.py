"""Extend and delegate on a ``require_verified`` call, on a real server: each carries an identity
token the workflow verifies as it verifies an answer's; a missing, forged, expired, mismatched
or not-allowed one is refused with its reason and changes nothing; the verified subject is who
is recorded. Also through `scope-tool extend` / `delegate --token`."""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
from collections.abc import AsyncIterator, Awaitable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from e2e._cli import CliRun, run_cli
from helpers.replay import assert_replays
from helpers.waiting import wait_for_phase

from policies.policy_tools import REGISTRY, ledger_lines
from scope_tool import ApprovalPolicy, Request
from scope_tool.client import Phase, ToolCallHandle, ToolCalls, ToolCallsError
from scope_tool.wire.identity import SECRET_VARIABLE, install_identity_secret, issue_token
from scope_tool.workers import build_worker

SECRET = "policy-identity-secret-0123456789"
APPROVE = {"decision": "approve"}


@pytest.fixture
async def verifying_worker(
    temporal_client: Any, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Any]:
    """A worker serving the gated refund, verifying tokens with ``SECRET`` (installed from the
    environment as ``python -m scope_tool.workers`` does; removed after the test)."""
    monkeypatch.setenv(SECRET_VARIABLE, SECRET)
    try:
        async with build_worker(temporal_client, REGISTRY, task_queue=task_queue) as running:
            yield running
    finally:
        install_identity_secret(None)


def _token(name: str, **options: Any) -> str:
    return issue_token(name, secret=options.pop("secret", SECRET), issuer="cli", **options)


def _expired(name: str) -> str:
    return _token(name, lifetime=timedelta(seconds=60), now=time.time() - 120)


async def _waiting(calls: ToolCalls, ledger: Path) -> ToolCallHandle:
    call_id = f"verified-steps-{uuid.uuid4()}"
    handle = await calls.start(
        Request(
            name="refund",
            arguments=json.dumps({"ledger": str(ledger), "order": "o-9", "amount": 90}),
        ),
        call_id=call_id,
        answer_timeout=timedelta(hours=2),
        allowed_answerers=("alice", "bob"),
        require_verified=True,
        policy=ApprovalPolicy(max_extension=3 * 3600),
    )
    await wait_for_phase(handle, Phase.AWAITING_INPUT)
    return handle


async def _refused(sent: Awaitable[Any], reason: str, says: str) -> None:
    with pytest.raises(ToolCallsError) as refused:
        await sent
    assert f"refused ({reason})" in str(refused.value)
    assert says in str(refused.value)


async def test_verified_extend_and_delegate_are_taken_and_bad_tokens_change_nothing(
    calls: ToolCalls, verifying_worker: Any, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"
    handle = await _waiting(calls, ledger)
    before = await handle.status()
    hour = timedelta(hours=1)

    await _refused(
        handle.extend(hour, extended_by="alice"), "not_verified", "requires a verified identity"
    )
    forged = _token("alice", secret="another-secret-entirely-0123456789")
    await _refused(
        handle.extend(hour, identity_token=forged), "not_verified", "signature does not match"
    )
    await _refused(
        handle.extend(hour, identity_token=_expired("alice")), "token_expired", "expired"
    )
    await _refused(
        handle.extend(hour, extended_by="bob", identity_token=_token("alice")),
        "not_verified",
        "claims to be by 'bob'",
    )
    await _refused(
        handle.extend(hour, identity_token=_token("mallory")),
        "not_allowed",
        "'mallory' may not extend",
    )
    await _refused(
        handle.delegate(["dave"], delegated_by="alice"),
        "not_verified",
        "requires a verified identity",
    )
    await _refused(
        handle.delegate(["dave"], identity_token=forged), "not_verified", "signature does not match"
    )
    await _refused(
        handle.delegate(["dave"], identity_token=_expired("alice")), "token_expired", "expired"
    )
    await _refused(
        handle.delegate(["dave"], delegated_by="bob", identity_token=_token("alice")),
        "not_verified",
        "claims to be by 'bob'",
    )
    await _refused(
        handle.delegate(["dave"], identity_token=_token("mallory")),
        "not_allowed",
        "'mallory' is not an assignee",
    )
    unchanged = await handle.status()
    assert unchanged.pending == before.pending
    assert unchanged.allowed_answerers == ("alice", "bob")
    assert unchanged.deadline_steps == ()

    receipt = await handle.extend(hour, identity_token=_token("alice"))
    assert before.pending is not None
    assert before.pending.deadline is not None
    assert receipt.deadline == before.pending.deadline + hour
    await handle.delegate(["dave"], identity_token=_token("alice"))
    status = await handle.status()
    assert [(step.kind, step.by) for step in status.deadline_steps] == [
        ("extension", "alice"),
        ("delegation", "alice"),
    ]
    assert status.allowed_answerers == ("bob", "dave")
    await handle.answer(APPROVE, identity_token=_token("dave"))
    assert (await handle.result()).phase is Phase.COMPLETED
    assert ledger_lines(ledger) == ["refund o-9 90"]
    # The history reader names the token's subject as the workflow did (no name was sent).
    history = await handle.history()
    assert [(step.kind, step.by) for step in history.deadline_steps] == [
        ("extension", "alice"),
        ("delegation", "alice"),
    ]
    assert [
        (event.kind.value, event.by)
        for event in history.policy_events
        if event.kind.value != "vote"
    ] == [("extension", "alice"), ("delegation", "alice")]
    await assert_replays(handle)


async def _cli(address: str, task_queue: str, *args: str) -> CliRun:
    env = {**os.environ, "SCOPE_TOOL_TASK_QUEUE": task_queue}
    return await asyncio.to_thread(run_cli, *args, address=address, env=env)


async def test_the_command_line_extends_and_delegates_with_a_token(
    calls: ToolCalls,
    verifying_worker: Any,
    temporal_address: str,
    task_queue: str,
    tmp_path: Path,
) -> None:
    handle = await _waiting(calls, tmp_path / "ledger")
    call_id = handle.call_id
    missing = await _cli(temporal_address, task_queue, "extend", call_id, "600", "--by", "alice")
    assert missing.code == 1
    assert "not_verified" in missing.stderr
    extended = await _cli(
        temporal_address, task_queue, "extend", call_id, "600", "--token", _token("alice")
    )
    assert extended.code == 0, extended.stderr
    assert f"extended request {call_id}/r1" in extended.stdout
    expired = await _cli(
        temporal_address, task_queue, "delegate", call_id, "dave", "--token", _expired("bob")
    )
    assert expired.code == 1
    assert "token_expired" in expired.stderr
    nobody = await _cli(temporal_address, task_queue, "delegate", call_id, "dave")
    assert nobody.code == 2
    assert "say who delegates" in nobody.stderr
    delegated = await _cli(
        temporal_address, task_queue, "delegate", call_id, "dave", "--token", _token("bob")
    )
    assert delegated.code == 0, delegated.stderr
    status = await handle.status()
    assert [(step.kind, step.by) for step in status.deadline_steps] == [
        ("extension", "alice"),
        ("delegation", "bob"),
    ]
