"""Who the agent acts for reaches the tool's Authorizer in every round, against a real server.

The ``guarded_ask`` Guard lets only principals with the role ``deployer`` through. The principal
is recorded with the call and shown in status (and its JSON), ``scope-tool status``,
``scope-tool history``, the audit trail and the inbox.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import uuid
from typing import Any

import pytest
from e2e._cli import CliRun
from e2e._cli import run_cli as _run_cli
from helpers.waiting import wait_for_phase

from identity.tools import REGISTRY, SEEN
from scope_tool import Principal, Request, acting_for
from scope_tool.agents import ModelToolCall, run_turn
from scope_tool.client import CallConflictError, Phase, ToolCalls

from ._inbox import proxied_inbox

ALICE = Principal(user="alice@example.com", tenant="acme", roles=("deployer",))
BOB = Principal(user="bob@example.com", tenant="acme", roles=("viewer",))


def _request(tag: str) -> Request:
    return Request(name="guarded_ask", arguments=json.dumps({"tag": tag}))


async def run_cli(*args: str, **options: Any) -> CliRun:
    """The CLI in a thread, so this process's worker keeps answering its status queries."""
    return await asyncio.to_thread(_run_cli, *args, **options)


def _env(task_queue: str) -> dict[str, str]:
    return {**os.environ, "SCOPE_TOOL_TASK_QUEUE": task_queue}


async def test_the_guard_refuses_bob_and_lets_alice_through_in_every_round(
    calls: ToolCalls, worker: Any, temporal_address: str, task_queue: str
) -> None:
    tag_a, tag_b = f"a-{uuid.uuid4()}", f"b-{uuid.uuid4()}"
    refused = await calls.start(_request(tag_b), call_id=f"bob-{tag_b}", principal=BOB)
    outcome = await refused.result()
    assert outcome.phase is Phase.REJECTED
    assert 'tool "guarded_ask" is not authorized' in outcome.output.text()
    assert SEEN[tag_b] == [BOB]

    handle = await calls.start(_request(tag_a), call_id=f"alice-{tag_a}", principal=ALICE)
    waiting = await wait_for_phase(handle, Phase.AWAITING_INPUT)
    assert waiting.principal == ALICE
    assert waiting.to_json_dict()["principal"] == {
        "user": "alice@example.com",
        "tenant": "acme",
        "roles": ["deployer"],
    }
    await handle.answer(True, answered_by="alice@example.com")
    assert (await handle.result()).phase is Phase.COMPLETED
    # Round 1 (asked) and round 2 (resumed after the answer) both ran acting for alice.
    assert SEEN[tag_a] == [ALICE, ALICE]

    trail = await handle.history()
    assert trail.principal == ALICE
    assert trail.to_json()["principal"]["user"] == "alice@example.com"

    status = await run_cli("status", handle.call_id, address=temporal_address, env=_env(task_queue))
    assert status.code == 0, status.stderr
    assert re.search(
        r"acting for\s+alice@example.com \(tenant acme; roles deployer\)", status.stdout
    )
    as_json = await run_cli(
        "status", handle.call_id, "--json", address=temporal_address, env=_env(task_queue)
    )
    assert json.loads(as_json.stdout)["principal"]["roles"] == ["deployer"]
    history = await run_cli(
        "history", handle.call_id, address=temporal_address, env=_env(task_queue)
    )
    assert history.code == 0, history.stderr
    assert "acting for alice@example.com (tenant acme; roles deployer)" in history.stdout


async def test_the_acting_for_block_and_the_turn_api_carry_the_principal(
    calls: ToolCalls, worker: Any
) -> None:
    tag = f"ctx-{uuid.uuid4()}"
    with acting_for(BOB):
        handle = await calls.start(_request(tag), call_id=f"ctx-{tag}")
    assert (await handle.result()).phase is Phase.REJECTED
    assert SEEN[tag] == [BOB]

    allowed, denied = f"turn-a-{uuid.uuid4()}", f"turn-b-{uuid.uuid4()}"
    turn = await run_turn(
        calls,
        f"turn-{uuid.uuid4()}",
        [ModelToolCall(tool_call_id="t1", name="guarded_ask", arguments={"tag": allowed})],
        registry=REGISTRY,
        principal=ALICE,
    )
    [call] = turn.calls
    assert call.waiting
    assert call.status.principal == ALICE
    with acting_for(BOB):
        turn = await run_turn(
            calls,
            f"turn-{uuid.uuid4()}",
            [ModelToolCall(tool_call_id="t1", name="guarded_ask", arguments={"tag": denied})],
            registry=REGISTRY,
        )
    assert turn.calls[0].status.phase is Phase.REJECTED
    assert SEEN[allowed] == [ALICE]
    assert SEEN[denied] == [BOB]


async def test_scope_tool_call_for_starts_a_call_acting_for_someone(
    calls: ToolCalls, worker: Any, temporal_address: str, task_queue: str
) -> None:
    env = _env(task_queue)
    tag = f"cli-{uuid.uuid4()}"
    denied = await run_cli(
        "call", "guarded_ask", json.dumps({"tag": tag}), "--id", f"cli-{tag}", "--for",
        "bob:acme:viewer", "--wait", address=temporal_address, env=env,
    )  # fmt: skip
    assert denied.code == 1, denied.stdout + denied.stderr
    assert "REJECTED" in denied.stdout
    assert SEEN[tag] == [Principal(user="bob", tenant="acme", roles=("viewer",))]

    tag = f"cli-{uuid.uuid4()}"
    started = await run_cli(
        "call", "guarded_ask", json.dumps({"tag": tag}), "--id", f"cli-{tag}", "--for",
        "dave::deployer,ops", address=temporal_address, env=env,
    )  # fmt: skip
    assert started.code == 0, started.stderr
    status = await wait_for_phase(calls.get(f"cli-{tag}"), Phase.AWAITING_INPUT)
    assert status.principal == Principal(user="dave", roles=("deployer", "ops"))

    bad = await run_cli("call", "guarded_ask", "{}", "--for", "a:b:c:d", address=temporal_address)
    assert bad.code == 2
    assert "--for takes USER[:TENANT[:ROLE,ROLE]]" in bad.stderr

    # The inbox's call page says whom the call acts for.
    async with proxied_inbox(calls) as http:
        page = await http.get(f"/calls/cli-{tag}", headers={"X-Forwarded-User": "erin"})
        shown = await http.get(f"/api/calls/cli-{tag}", headers={"X-Forwarded-User": "erin"})
    assert page.status_code == 200
    assert re.search(r'data-testid="acting-for-user">dave<', page.text)
    assert "(roles: deployer, ops)" in page.text
    assert shown.json()["principal"] == {
        "user": "dave",
        "tenant": None,
        "roles": ["deployer", "ops"],
    }
    await calls.get(f"cli-{tag}").cancel()


async def test_a_call_id_acting_for_one_principal_is_not_attached_for_another(
    calls: ToolCalls, worker: Any
) -> None:
    tag = f"attach-{uuid.uuid4()}"
    first = await calls.start(_request(tag), call_id=tag, principal=ALICE)
    again = await calls.start(_request(tag), call_id=tag, principal=ALICE)
    assert again.attached
    for other in (BOB, None):
        with pytest.raises(CallConflictError, match="acting for another principal"):
            await calls.start(_request(tag), call_id=tag, principal=other)
    assert (await first.status()).principal == ALICE
    await first.cancel()


async def test_answered_by_with_control_characters_is_refused_before_sending(
    temporal_client: Any, task_queue: str
) -> None:
    """Refused at the boundary, before anything reaches the call (#25 item 11)."""
    calls = ToolCalls(temporal_client, task_queue=task_queue)
    handle = calls.get(f"no-such-call-{uuid.uuid4()}")
    for forged in ("bob\x1b[2K\routcome  REJECTED by security", "bob\nrequest id FAKE"):
        with pytest.raises(ValueError, match="control characters"):
            await handle.answer(True, answered_by=forged)
