"""`scope-tool pending --for NAME`: the questions NAME may answer now, as a person runs it."""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from pathlib import Path
from typing import Any

from e2e._cli import CliRun, run_cli
from helpers.waiting import wait_for_phase

from policies.policy_tools import ledger_lines
from scope_tool import ApprovalPolicy, Request
from scope_tool.client import Phase, ToolCalls


async def _cli(address: str, task_queue: str, *args: str) -> CliRun:
    env = {**os.environ, "SCOPE_TOOL_TASK_QUEUE": task_queue}
    return await asyncio.to_thread(run_cli, *args, address=address, env=env)


async def _listed(address: str, task_queue: str, name: str) -> set[str]:
    run = await _cli(address, task_queue, "pending", "--for", name, "--json")
    assert run.code == 0, run.stderr
    return {entry["call_id"] for entry in json.loads(run.stdout)}


async def test_pending_for_lists_what_a_person_may_answer_now(
    calls: ToolCalls, worker: Any, temporal_address: str, task_queue: str, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"

    def refund(order: str) -> Request:
        arguments = {"ledger": str(ledger), "order": order, "amount": 5}
        return Request(name="refund", arguments=json.dumps(arguments))

    tag = uuid.uuid4()
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
    assert await _listed(temporal_address, task_queue, "alice") == {
        for_alice.call_id,
        anyone.call_id,
    }
    assert await _listed(temporal_address, task_queue, "bob") == {
        for_bob.call_id,
        anyone.call_id,
        vote.call_id,
    }
    assert await _listed(temporal_address, task_queue, "zed") == {anyone.call_id}
    table = await _cli(temporal_address, task_queue, "pending", "--for", "bob")
    assert for_bob.call_id in table.stdout
    assert for_alice.call_id not in table.stdout
    plain = await _cli(temporal_address, task_queue, "pending", "--json")
    assert {entry["call_id"] for entry in json.loads(plain.stdout)} == everyone
    for handle in (for_alice, for_bob, anyone, vote):
        await handle.cancel()
    assert ledger_lines(ledger) == []
