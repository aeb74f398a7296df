"""Recognising the approval gate's question (``scope_tool.client.read_approval``) and the Web UI texts.

The gate is recognised by its response schema, the one ``scope_tool.require_approval``
produces (with and without edits); look-alike schemas are not taken for it. The Web UI texts
stay bounded whatever the size of the arguments.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

from inbox.ask_tools import write_note
from scope_tool import Func, bind, require_approval
from scope_tool.client import PendingInput, read_approval
from scope_tool.wire.web_ui_text import MAX_DETAILS_BYTES, start_details, waiting_details


async def _gate_question(*, allow_edit: bool) -> tuple[bytes, bytes]:
    from scope_tool import Invocation, Request

    gate = bind(
        require_approval(
            Func(write_note, name="write_note", description="Write a note."), allow_edit=allow_edit
        )
    )
    invocation = gate.contract.prepare(
        Request(name="write_note", arguments='{"path":"a.txt","content":"x\\ny"}')
    )
    assert isinstance(invocation, Invocation)
    result = await gate.call(invocation)
    assert result.input_request is not None
    return result.input_request.prompt, result.input_request.response_schema


async def test_the_gates_question_is_recognised_with_its_arguments_and_decisions() -> None:
    prompt, schema = await _gate_question(allow_edit=True)
    approval = read_approval(prompt, schema)
    assert approval is not None
    assert approval.question == "Approve this call of write_note?"
    assert approval.tool == "write_note"
    assert approval.description == "Write a note."
    assert approval.arguments == {"path": "a.txt", "content": "x\ny"}
    assert approval.decisions == ("approve", "deny", "edit")
    assert approval.answer_examples()[2] == (
        '{"decision":"edit","arguments":{"path": "a.txt", "content": "x\\ny"}}'
    )
    prompt, schema = await _gate_question(allow_edit=False)
    without_edit = read_approval(prompt, schema)
    assert without_edit is not None
    assert without_edit.decisions == ("approve", "deny")
    assert len(without_edit.answer_examples()) == 2


def test_look_alikes_are_not_the_gate() -> None:
    prompt = b'"Approve?"'
    assert read_approval(prompt, b'{"type":"boolean"}') is None
    assert read_approval(prompt, b"not json") is None
    other = {
        "type": "object",
        "properties": {"decision": {"enum": ["approve", "later"]}},
        "required": ["decision"],
    }
    assert read_approval(prompt, json.dumps(other).encode()) is None
    optional = {
        "type": "object",
        "properties": {"decision": {"enum": ["approve", "deny"]}},
    }
    assert read_approval(prompt, json.dumps(optional).encode()) is None
    edit_without_arguments = {
        "type": "object",
        "properties": {"decision": {"enum": ["approve", "deny", "edit"]}},
        "required": ["decision"],
    }
    assert read_approval(prompt, json.dumps(edit_without_arguments).encode()) is None
    # A hand-written gate-shaped schema with a plain prompt: recognised, question from the prompt.
    plain = read_approval(prompt, json.dumps({**optional, "required": ["decision"]}).encode())
    assert plain is not None
    assert plain.question == "Approve?"
    assert not plain.has_arguments


def test_the_web_ui_texts_stay_bounded_and_show_text_as_text() -> None:
    huge = json.dumps({"path": "big.txt", "content": "é" * 400_000})
    details = start_details("write_note", huge)
    assert len(details.encode("utf-8")) <= MAX_DETAILS_BYTES
    assert details.startswith("**Tool** `write_note`")
    assert "shortened" in details
    prompt = json.dumps({"question": "Ship?", "notes": "a ```fenced``` line\nand more"}).encode()
    pending = PendingInput(
        request_id="c/r1",
        prompt=prompt,
        response_schema=b'{"enum":["yes","no"]}',
        asked_at=datetime(2026, 1, 1, tzinfo=UTC),
    )
    current = waiting_details(tool="t", call_id="c", pending=pending)
    assert "Request `c/r1`" in current
    assert "**Ship?**" in current
    assert "````text\na ```fenced``` line\nand more\n````" in current  # a longer fence
    assert """scope-tool answer c '"yes"'""" in current


def test_names_and_the_tally_in_the_details_stay_text() -> None:
    """Who may answer and the votes are names the call's starter chose: a backtick keeps its
    code span whole, and nothing in a tally becomes a link or emphasis in the Web UI."""
    pending = PendingInput(
        request_id="c/r1",
        prompt=b'{"question":"Ship?"}',
        response_schema=b'{"type":"boolean"}',
        asked_at=datetime(2026, 1, 1, tzinfo=UTC),
    )
    current = waiting_details(
        tool="t",
        call_id="c",
        pending=pending,
        assignees=("plain", "bob`s"),
        tally="1 of 2: [click](http://x.example) *me*; waiting for one of: carol",
    )
    assert "**Who may answer now** `plain`, `` bob`s ``" in current
    assert (
        r"**Votes** 1 of 2: \[click\]\(http://x.example\) \*me\*; waiting for one of: carol"
        in current
    )
