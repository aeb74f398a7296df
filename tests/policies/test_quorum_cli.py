"""`scope-tool call --policy` and `scope-tool answer` on a quorum call, as a person runs them."""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from pathlib import Path
from typing import Any

from e2e._cli import CliRun, run_cli

from policies.policy_tools import ledger_lines

POLICY = '{"quorum": 2, "voters": ["alice", "bob", "carol"]}'


async def _cli(address: str, task_queue: str, *args: str) -> CliRun:
    env = {**os.environ, "SCOPE_TOOL_TASK_QUEUE": task_queue}
    return await asyncio.to_thread(run_cli, *args, address=address, env=env)


async def test_a_vote_by_the_command_line(
    worker: Any, temporal_address: str, task_queue: str, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"
    call_id = f"cli-quorum-{uuid.uuid4()}"
    arguments = json.dumps({"ledger": str(ledger), "order": "o-7", "amount": 40})
    bad = await _cli(
        temporal_address, task_queue, "call", "refund", arguments, "--policy", '{"quorum": 0}'
    )
    assert bad.code == 2
    assert "--policy: tool: invalid policy: quorum must be a whole number" in bad.stderr
    started = await _cli(
        temporal_address,
        task_queue,
        "call",
        "refund",
        arguments,
        "--id",
        call_id,
        "--policy",
        POLICY,
    )
    assert started.code == 0, started.stderr
    approve = '{"decision": "approve"}'
    for _ in range(100):
        status = await _cli(temporal_address, task_queue, "status", call_id)
        if "AWAITING_INPUT" in status.stdout:
            break
        await asyncio.sleep(0.1)
    assert "0 of 2; waiting for 2 of: alice, bob, carol" in status.stdout
    first = await _cli(temporal_address, task_queue, "answer", call_id, approve, "--by", "alice")
    assert first.code == 0, first.stderr
    assert "vote recorded" in first.stdout
    assert "1 of 2: alice; waiting for one of: bob, carol" in first.stdout
    again = await _cli(
        temporal_address, task_queue, "answer", call_id, '{"decision": "deny"}', "--by", "alice"
    )
    assert again.code == 1
    assert "duplicate_voter" in again.stderr
    shown = await _cli(temporal_address, task_queue, "status", call_id)
    assert "alice: approve" in shown.stdout
    second = await _cli(temporal_address, task_queue, "answer", call_id, approve, "--by", "bob")
    assert second.code == 0, second.stderr
    assert "decided by the votes of alice, bob" in second.stdout
    # The deciding vote is accepted before the tool runs: the result is waited for.
    result = await _cli(temporal_address, task_queue, "result", call_id, "--wait")
    assert result.code == 0, result.stderr
    assert "COMPLETED" in result.stdout
    assert ledger_lines(ledger) == ["refund o-7 40"]
