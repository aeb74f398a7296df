"""The approval answer as the inbox's form builds it: every decision shape is one form away."""

from __future__ import annotations

from examples.agent.tools import registry
from scope_tool import ApprovalGate
from scope_tool.inbox.form_values import answer_from_form
from scope_tool.inbox.forms import FieldKind, build_answer_form


def gate() -> ApprovalGate:
    binding = registry.resolve("write_file")
    assert binding is not None
    tool = binding._tool
    assert isinstance(tool, ApprovalGate)
    return tool


def test_the_inbox_renders_decision_reason_and_the_tools_own_fields():
    form = build_answer_form(gate().response_schema())
    fields = {field.key: field for field in form.fields}
    assert fields["decision"].kind is FieldKind.CHOICE
    assert [choice.label for choice in fields["decision"].choices] == ["approve", "deny", "edit"]
    assert fields["reason"].kind is FieldKind.TEXT
    assert fields["arguments"].kind is FieldKind.GROUP
    assert {child.key for child in fields["arguments"].children} == {"path", "content"}


def test_each_decision_comes_out_of_the_form_in_the_agreed_shape():
    form = build_answer_form(gate().response_schema())
    assert answer_from_form(form, {"/decision": ['"approve"']}) == {"decision": "approve"}
    assert answer_from_form(form, {"/decision": ['"deny"'], "/reason": ["no"]}) == {
        "decision": "deny",
        "reason": "no",
    }
    edited = {"/decision": ['"edit"'], "/arguments/path": ["a"], "/arguments/content": ["b"]}
    assert answer_from_form(form, edited) == {
        "decision": "edit",
        "arguments": {"path": "a", "content": "b"},
    }
