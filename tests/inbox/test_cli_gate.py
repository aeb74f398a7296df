"""``scope-tool status`` and ``pending`` render the approval gate's question for a person.

The gated ``write_note`` call waits on the session's server (in-process worker); the commands
run as real subprocesses, as a person types them, and their answer lines are then used as
printed: the call completes with the arguments shown.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import uuid
from typing import Any

from e2e._cli import CliRun, run_cli

from inbox.ask_tools import WRITTEN, wait_for_phase
from scope_tool import Request
from scope_tool.client import Phase, ToolCalls


async def _cli(*args: str, address: str) -> CliRun:
    """The command in a thread: the in-process worker shares this event loop."""
    return await asyncio.to_thread(run_cli, *args, address=address)


async def test_status_and_pending_show_the_gate_question_arguments_and_the_three_answers(
    calls: ToolCalls, worker: Any, temporal_address: str
) -> None:
    call_id = f"cli-gate-{uuid.uuid4().hex[:8]}"
    arguments = {"path": "cli.txt", "content": "from the terminal"}
    handle = await calls.start(
        Request(name="write_note", arguments=json.dumps(arguments)), call_id=call_id
    )
    await wait_for_phase(handle, Phase.AWAITING_INPUT)

    shown = await _cli("status", call_id, address=temporal_address)
    assert shown.code == 0, shown.stderr
    lines = shown.stdout.splitlines()
    column = lines[0].index(call_id)  # where every value starts
    rows = {line[:column].strip(): line[column:] for line in lines if line[:column].strip()}
    assert rows["waiting for"] == "Approve this call of write_note?"
    assert rows["tool does"] == "Write a note to a file."
    start = next(i for i, line in enumerate(lines) if line.startswith("will run with"))
    block = "\n".join(line[column:] for line in lines[start : start + 4])
    assert json.loads(block) == arguments  # indented JSON, continuation lines aligned
    assert all(line[:column].isspace() for line in lines[start + 1 : start + 4])
    assert rows["to approve"] == f"""scope-tool answer {call_id} '{{"decision":"approve"}}'"""
    assert rows["to deny"] == (
        f"""scope-tool answer {call_id} '{{"decision":"deny","reason":"..."}}'"""
    )
    edit = rows["to edit"]
    assert json.loads(shlex.split(edit)[-1]) == {"decision": "edit", "arguments": arguments}
    assert "kind" not in shown.stdout  # the gate's prompt object is not dumped
    assert "answer schema" not in shown.stdout

    listed = await _cli("pending", address=temporal_address)
    assert listed.code == 0, listed.stderr
    row = next(line for line in listed.stdout.splitlines() if line.startswith(call_id))
    assert "Approve this call of write_note? {" in row
    assert "scope_tool.approval" not in row

    # The printed approve line works as printed.
    command = shlex.split(rows["to approve"])
    assert command[:2] == ["scope-tool", "answer"]
    before = len(WRITTEN)
    answered = await _cli(*command[1:], address=temporal_address)
    assert answered.code == 0, answered.stderr
    assert (await handle.result()).phase is Phase.COMPLETED
    assert [(w.path, w.content) for w in WRITTEN[before:]] == [("cli.txt", "from the terminal")]
