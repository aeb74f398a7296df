"""`scope-tool pending --for NAME`: the questions NAME may answer now, as a person runs it."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Awaitable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from e2e._cli import CliRun, run_cli_here
from helpers.waiting import wait_for_phase, wait_until_async

from policies.policy_tools import REGISTRY, ledger_lines
from scope_tool import ApprovalPolicy, Request
from scope_tool.client import AnswerRejectedError, Phase, ToolCalls
from scope_tool.testing import start_local_server, start_worker


@pytest.fixture
async def own_server() -> AsyncIterator[Any]:
    """A server of this test's own. `pending` reads the status of every waiting call in the
    namespace; the session's server holds other tests' waiting calls whose workers are gone,
    and each of those reads waits for a worker (that case has its own test in
    e2e/test_dev_lifecycle.py)."""
    async with start_local_server() as server:
        yield server.environment


async def _cli(address: str, task_queue: str, *args: str) -> CliRun:
    return await asyncio.to_thread(run_cli_here, *args, "--task-queue", task_queue, address=address)


async def _equal(value: Awaitable[list[str]], expected: list[str]) -> bool:
    return await value == expected


async def _listed(address: str, task_queue: str, name: str, tag: str) -> set[str]:
    """The calls of this test (their ids carry ``tag``) that `pending --for NAME` lists."""
    run = await _cli(address, task_queue, "pending", "--for", name, "--json", "--limit", "1000")
    assert run.code == 0, run.stderr
    return {entry["call_id"] for entry in json.loads(run.stdout) if tag in entry["call_id"]}


@pytest.mark.timeout(120)
async def test_pending_for_lists_what_a_person_may_answer_now(
    own_server: Any, task_queue: str, tmp_path: Path
) -> None:
    temporal_client = own_server.client
    temporal_address = str(temporal_client.service_client.config.target_host)
    calls = ToolCalls(temporal_client, task_queue=task_queue)
    async with start_worker(temporal_client, REGISTRY, task_queue=task_queue):
        await _pending_for(calls, temporal_client, temporal_address, task_queue, tmp_path)


async def _pending_for(
    calls: ToolCalls,
    temporal_client: Any,
    temporal_address: str,
    task_queue: str,
    tmp_path: Path,
) -> None:
    ledger = tmp_path / "ledger"

    def refund(order: str) -> Request:
        arguments = {"ledger": str(ledger), "order": order, "amount": 5}
        return Request(name="refund", arguments=json.dumps(arguments))

    tag = str(uuid.uuid4())
    for_alice = await calls.start(
        refund("o-1"), call_id=f"for-alice-{tag}", allowed_answerers=("alice",)
    )
    for_bob = await calls.start(refund("o-2"), call_id=f"for-bob-{tag}", allowed_answerers=("bob",))
    anyone = await calls.start(refund("o-3"), call_id=f"for-anyone-{tag}")
    vote = await calls.start(
        refund("o-4"),
        call_id=f"vote-{tag}",
        policy=ApprovalPolicy(quorum=2, voters=("alice", "bob", "carol")),
    )
    for handle in (for_alice, for_bob, anyone, vote):
        await wait_for_phase(handle, Phase.AWAITING_INPUT)
    await vote.answer({"decision": "approve"}, answered_by="alice")  # alice has voted
    everyone = {h.call_id for h in (for_alice, for_bob, anyone, vote)}
    assert await _listed(temporal_address, task_queue, "alice", tag) == {
        for_alice.call_id,
        anyone.call_id,
    }
    assert await _listed(temporal_address, task_queue, "bob", tag) == {
        for_bob.call_id,
        anyone.call_id,
        vote.call_id,
    }
    assert await _listed(temporal_address, task_queue, "zed", tag) == {anyone.call_id}
    table = await _cli(temporal_address, task_queue, "pending", "--for", "bob", "--limit", "1000")
    assert for_bob.call_id in table.stdout
    assert for_alice.call_id not in table.stdout
    # A waiting call with named answerers (or voters) carries them as a search attribute:
    # "waiting for carol" is one query (the Web UI's too).
    timed = await calls.start(
        refund("o-5"),
        call_id=f"timed-{tag}",
        allowed_answerers=("carol",),
        answer_timeout=timedelta(hours=1),
        policy=ApprovalPolicy(reminders=(1800,), max_extension=600),
    )
    await wait_for_phase(timed, Phase.AWAITING_INPUT)
    everyone.add(timed.call_id)
    query = f'ScopeToolAssignee = "carol" AND TaskQueue = "{task_queue}"'

    async def found() -> list[str]:
        return sorted([each.id async for each in temporal_client.list_workflows(query)])

    # The vote names carol among its voters; she has not voted yet.
    await wait_until_async(lambda: _equal(found(), sorted([timed.call_id, vote.call_id])))
    assert await _listed(temporal_address, task_queue, "carol", tag) == {
        timed.call_id,
        anyone.call_id,
        vote.call_id,  # a voter who has not voted
    }
    # `scope-tool extend`: a person allowed to answer adds time, up to the policy's total.
    extended = await _cli(
        temporal_address, task_queue, "extend", timed.call_id, "300", "--by", "carol"
    )
    assert extended.code == 0, extended.stderr
    assert f"extended request {timed.call_id}/r1" in extended.stdout
    too_much = await _cli(
        temporal_address, task_queue, "extend", timed.call_id, "301", "--by", "carol"
    )
    assert too_much.code == 1
    assert "may be extended by 600 s in all; 300 s are used" in too_much.stderr
    stranger = await _cli(
        temporal_address, task_queue, "extend", timed.call_id, "10", "--by", "zed"
    )
    assert "'zed' may not extend" in stranger.stderr
    no_deadline = await _cli(
        temporal_address, task_queue, "extend", for_alice.call_id, "10", "--by", "alice"
    )
    assert "has no question with a deadline waiting" in no_deadline.stderr
    status = await timed.status()
    assert [(s.kind, s.by) for s in status.deadline_steps] == [("extension", "carol")]
    # `scope-tool delegate`: carol hands the question to dave; pending and the attribute follow.
    not_hers = await _cli(
        temporal_address, task_queue, "delegate", for_bob.call_id, "dave", "--by", "carol"
    )
    assert not_hers.code == 1
    assert "'carol' is not an assignee" in not_hers.stderr
    delegated = await _cli(
        temporal_address, task_queue, "delegate", timed.call_id, "dave", "--by", "carol"
    )
    assert delegated.code == 0, delegated.stderr
    assert await _listed(temporal_address, task_queue, "dave", tag) == {
        timed.call_id,
        anyone.call_id,
    }
    assert timed.call_id not in await _listed(temporal_address, task_queue, "carol", tag)
    dave = f'ScopeToolAssignee = "dave" AND TaskQueue = "{task_queue}"'

    async def found_dave() -> list[str]:
        return [each.id async for each in temporal_client.list_workflows(dave)]

    await wait_until_async(lambda: _equal(found_dave(), [timed.call_id]))
    with pytest.raises(AnswerRejectedError, match="may not answer"):
        await timed.answer({"decision": "approve"}, answered_by="carol")
    steps = (await timed.status()).deadline_steps
    assert [(s.kind, s.by, s.assignees) for s in steps][-1] == ("delegation", "carol", ("dave",))
    plain = await _cli(temporal_address, task_queue, "pending", "--json", "--limit", "1000")
    listed = {entry["call_id"] for entry in json.loads(plain.stdout)}
    assert {each for each in listed if tag in each} == everyone
    for handle in (for_alice, for_bob, anyone, vote, timed):
        await handle.cancel()
    assert ledger_lines(ledger) == []
