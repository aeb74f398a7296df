"""The pure parts of the MCP front end: forms from schemas, replies to answers, outcomes to
results, and derived call ids. No server needed."""

from __future__ import annotations

import json

import pytest
from mcp.shared.exceptions import MCPError

from scope_tool import FailureKind, Output
from scope_tool.client import CallOutcome, Phase
from scope_tool.mcp import FormKind, plan_form
from scope_tool.mcp._engine import derive_call_id
from scope_tool.mcp._forms import prompt_message
from scope_tool.mcp._results import outcome_result, waiting_result
from scope_tool.mcp._server import ScopeToolServer


def _schema(value: object) -> bytes:
    return json.dumps(value).encode()


def test_a_boolean_question_is_one_checkbox_and_decline_answers_false():
    plan = plan_form(b'{"type":"boolean"}')
    assert plan is not None
    assert plan.kind is FormKind.BOOLEAN
    assert plan.requested_schema["properties"]["approve"]["type"] == "boolean"
    assert plan.reply("accept", {"approve": True}).answer is True
    declined = plan.reply("decline", None)
    assert declined.has_answer
    assert declined.answer is False
    assert declined.declined
    assert not plan.reply("cancel", None).has_answer


def test_an_approval_gate_is_a_decision_without_edit_and_decline_denies():
    plan = plan_form(
        _schema(
            {
                "type": "object",
                "properties": {
                    "decision": {"enum": ["approve", "deny", "edit"]},
                    "reason": {"type": "string"},
                    "arguments": {"type": "object"},
                },
                "required": ["decision"],
            }
        )
    )
    assert plan is not None
    assert plan.kind is FormKind.APPROVAL
    assert plan.requested_schema["properties"]["decision"]["enum"] == ["approve", "deny"]
    assert plan.reply("accept", {"decision": "approve", "reason": "x"}).answer == {
        "decision": "approve"
    }
    assert plan.reply("accept", {"decision": "deny", "reason": "no"}).answer == {
        "decision": "deny",
        "reason": "no",
    }
    assert plan.reply("decline", None).answer["decision"] == "deny"
    assert not plan.reply("cancel", None).has_answer


def test_a_flat_object_is_its_own_form_with_only_form_keywords():
    plan = plan_form(
        _schema(
            {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "maxLength": 5, "pattern": "^a"},
                    "count": {"type": "integer", "minimum": 1},
                    "when": {"type": "string", "format": "date"},
                },
                "required": ["name", "missing"],
            }
        )
    )
    assert plan is not None
    assert plan.kind is FormKind.OBJECT
    assert plan.requested_schema["required"] == ["name"]
    assert "pattern" not in plan.requested_schema["properties"]["name"]
    assert plan.reply("accept", {"name": "ab", "count": None}).answer == {"name": "ab"}
    declined = plan.reply("decline", None)
    assert not declined.has_answer
    assert declined.declined


def test_a_bare_enum_is_one_value_field():
    plan = plan_form(b'{"type":"string","enum":["a","b"]}')
    assert plan is not None
    assert plan.kind is FormKind.VALUE
    assert plan.reply("accept", {"value": "b"}).answer == "b"


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"hosts": {"type": "array"}}},
        {"type": "object", "properties": {"inner": {"type": "object"}}},
        {"type": "array"},
        {"oneOf": [{"type": "string"}, {"type": "integer"}]},
        {"type": "integer", "enum": [1, 2]},
    ],
)
def test_shapes_no_form_holds_get_no_form_or_the_json_text_field(schema):
    assert plan_form(_schema(schema)) is None
    fallback = plan_form(_schema(schema), allow_json_text=True)
    assert fallback is not None
    assert fallback.kind is FormKind.JSON_TEXT
    assert fallback.reply("accept", {"answer_json": "[1]"}).answer == [1]
    assert fallback.reply("accept", {"answer_json": "not json"}).answer == "not json"


def test_the_message_shows_every_prompt_field_and_a_refusal_first():
    text = prompt_message(
        b'{"question":"Write?","content":"exact text"}',
        call_id="mcp-x",
        tool="write_file",
        refusal="wrong",
    )
    assert text.startswith("Your last answer was refused: wrong")
    assert "Write?" in text
    assert "exact text" in text
    assert "mcp-x" in text


def test_completed_json_details_become_structured_content():
    result = outcome_result(
        CallOutcome(phase=Phase.COMPLETED, output=Output.json_output(b'{"ok":1}')), call_id="c"
    )
    assert not result.is_error
    assert result.structured_content == {"ok": 1}
    assert result.content[0].text == '{"ok":1}'


def test_errored_never_shows_evidence_or_the_diagnostic():
    result = outcome_result(
        CallOutcome(
            phase=Phase.ERRORED,
            output=Output.text_output("partial"),
            message="db password=hunter2",
            evidence=Output.text_output("secret evidence"),
        ),
        call_id="c1",
    )
    assert result.is_error
    text = " ".join(block.text for block in result.content)
    assert "hunter2" not in text
    assert "secret" not in text
    assert "partial" not in text
    assert "outcome is unknown" in text
    assert "c1" in text


@pytest.mark.parametrize(
    "phase", [Phase.FAILED, Phase.REJECTED, Phase.INVALID, Phase.EXPIRED, Phase.CANCELLED]
)
def test_every_other_phase_is_an_error_with_its_model_visible_output(phase):
    outcome = CallOutcome(
        phase=phase,
        output=Output.text_output("tool says no"),
        failure_kind=FailureKind.FAILED if phase is Phase.FAILED else None,
        message="arguments: missing key" if phase is Phase.INVALID else "",
    )
    result = outcome_result(outcome, call_id="c2")
    assert result.is_error
    assert result.content[0].text == "tool says no"
    if phase is Phase.INVALID:
        assert "arguments: missing key" in result.content[-1].text


def test_waiting_result_names_the_call_and_the_status_tool():
    result = waiting_result(
        call_id="c3", tool="t", phase=Phase.RUNNING, status_tool="scope_tool_call_status"
    )
    assert "c3" in result.content[0].text
    assert "is still running" in result.content[0].text
    assert result.structured_content == {
        "call_id": "c3",
        "tool": "t",
        "phase": "RUNNING",
        "next_step": result.content[0].text,  # clients that show only this still see it
    }


def test_call_ids_are_stable_per_request_and_differ_across_requests():
    same = dict(tool="add", arguments=b'{"a":1}', scope="session:s1", client_key=None)
    assert derive_call_id(request_id=7, **same) == derive_call_id(request_id=7, **same)
    assert derive_call_id(request_id=7, **same) != derive_call_id(request_id=8, **same)
    other = {**same, "scope": "session:s2"}
    assert derive_call_id(request_id=7, **same) != derive_call_id(request_id=7, **other)
    assert derive_call_id(request_id=7, **same).startswith("mcp-add-")


def test_a_client_key_names_the_call_and_a_bad_one_is_refused():
    assert (
        derive_call_id(tool="add", arguments=b"{}", scope="x", request_id=1, client_key="job-42")
        == "mcp-add-job-42"
    )
    with pytest.raises(ValueError, match="scope-tool/call-id"):
        derive_call_id(tool="add", arguments=b"{}", scope="x", request_id=1, client_key="a b")


def test_two_principals_never_share_a_call_id():
    from scope_tool import Principal

    alice, bob = Principal(user="alice"), Principal(user="bob")
    same = dict(tool="add", arguments=b"{}", scope="session:s1", request_id=1)
    assert derive_call_id(client_key=None, owner=alice, **same) != derive_call_id(
        client_key=None, owner=bob, **same
    )
    keyed = derive_call_id(client_key="job-1", owner=alice, **same)
    assert keyed.startswith("mcp-add-job-1@")
    assert keyed != derive_call_id(client_key="job-1", owner=bob, **same)
    assert derive_call_id(client_key="job-1", **same) == "mcp-add-job-1"  # no credentials


def test_who_may_follow_a_call():
    from scope_tool import Principal
    from scope_tool.mcp._access import may_follow

    alice, bob = Principal(user="alice"), Principal(user="bob")
    reviewer = Principal(user="carol", roles=("reviewer",))
    assert may_follow(alice, Principal(user="alice", roles=("x",)), reviewer_role=None)
    assert not may_follow(bob, alice, reviewer_role=None)
    assert not may_follow(None, alice, reviewer_role=None)
    assert not may_follow(alice, None, reviewer_role=None)
    assert may_follow(None, None, reviewer_role=None)
    assert not may_follow(reviewer, alice, reviewer_role=None)
    assert may_follow(reviewer, alice, reviewer_role="reviewer")


def test_static_token_lines_are_checked_without_showing_the_token():
    from scope_tool.mcp._tokens import StaticTokens
    from scope_tool.mcp.errors import McpSettingsError

    secret = "s" * 12
    with pytest.raises(McpSettingsError, match="shorter than") as short:
        StaticTokens.parse(f"alice {secret}", source="T")
    assert secret not in str(short.value)
    with pytest.raises(McpSettingsError, match="already listed"):
        StaticTokens.parse(f"alice {'t' * 32}\nbob {'t' * 32}", source="T")
    with pytest.raises(McpSettingsError, match="lists no token"):
        StaticTokens.parse("# nobody", source="T")


@pytest.mark.parametrize("call_id", ["mcp-\ud800", "mcp-\udfff-x", "mcp-" + "a" * 2000])
def test_a_call_id_that_cannot_name_a_call_is_unknown_not_an_internal_error(call_id):
    """Red-team pass of #25: a lone surrogate in ``scope_tool_call_status``'s ``call_id`` or in
    ``tasks/get``'s ``taskId`` reached Temporal and came back -32603 "Internal server error"."""
    server = object.__new__(ScopeToolServer)  # find() looks at nothing but the id here
    with pytest.raises(MCPError, match="no call with id"):
        server.find(call_id)
