"""Recognising the approval gate's question, so every front end renders it as a decision.

``scope_tool.require_approval`` wraps a tool so that round 1 asks a person to approve the
admitted arguments. Its answers have one shape everywhere: ``{"decision": "approve"}``,
``{"decision": "deny", "reason": "..."}`` or ``{"decision": "edit", "arguments": {...}}``.
A front end that knows this shows Approve / Deny with a reason / Edit arguments instead of a
generic form. The gate is recognised by its **response schema** (an object whose required
``decision`` is an enum of ``approve``, ``deny`` and optionally ``edit``), because the schema is
what the answer must satisfy; the prompt (``{"kind": "scope_tool.approval", "question",
"tool", "description", "arguments", ...}``) supplies what is shown, when present.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from scope_tool.wire._prompt import json_value, read_prompt

__all__ = ["APPROVAL_DECISIONS", "ApprovalQuestion", "read_approval"]

APPROVAL_DECISIONS: Final = ("approve", "deny", "edit")
"""The decisions the gate's answers can carry, in the order front ends offer them."""

_NOTHING: Any = object()


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalQuestion:
    """An approval gate's question, read for a person.

    Attributes:
        question: The sentence to show ("Approve this call of write_file?").
        tool: The gated tool's name ("" when the prompt does not say).
        description: What the tool does, from its definition ("" when unknown).
        arguments: The exact arguments the call will run with, as a JSON value; absent
            (``has_arguments`` false) when the prompt does not carry them.
        has_arguments: Whether ``arguments`` came from the prompt.
        allow_edit: Whether ``edit`` is an accepted decision.
        refused_edit: Why the reviewer's previous edit was not admitted ("" when none).
    """

    question: str
    tool: str = ""
    description: str = ""
    arguments: Any = None
    has_arguments: bool = False
    allow_edit: bool = False
    refused_edit: str = ""

    @property
    def decisions(self) -> tuple[str, ...]:
        """The decisions a person may send, in display order."""
        return APPROVAL_DECISIONS if self.allow_edit else APPROVAL_DECISIONS[:2]

    def arguments_json(self, *, indent: int | None = 2) -> str:
        """The arguments as JSON text ("" when the prompt did not carry them)."""
        if not self.has_arguments:
            return ""
        return json.dumps(self.arguments, indent=indent, ensure_ascii=False)

    def answer_examples(self) -> tuple[str, ...]:
        """One example answer (compact JSON) per decision, for command-line hints."""
        examples = ['{"decision":"approve"}', '{"decision":"deny","reason":"..."}']
        if self.allow_edit:
            shown = self.arguments_json(indent=None) if self.has_arguments else "{...}"
            examples.append(f'{{"decision":"edit","arguments":{shown}}}')
        return tuple(examples)


def read_approval(prompt: bytes, response_schema: bytes) -> ApprovalQuestion | None:
    """The approval question when ``response_schema`` is the gate's, else ``None``."""
    decisions = _gate_decisions(json_value(response_schema))
    if decisions is None:
        return None
    value = json_value(prompt)
    members: dict[str, Any] = value if isinstance(value, dict) else {}
    arguments = members.get("arguments", _NOTHING)
    question = _text(members.get("question")) or read_prompt(prompt).question
    return ApprovalQuestion(
        question=question or "Approve this call?",
        tool=_text(members.get("tool")),
        description=_text(members.get("description")),
        arguments=None if arguments is _NOTHING else arguments,
        has_arguments=arguments is not _NOTHING,
        allow_edit="edit" in decisions,
        refused_edit=_text(members.get("refused_edit")),
    )


def _gate_decisions(schema: Any) -> frozenset[str] | None:
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return None
    properties = schema.get("properties")
    required = schema.get("required")
    if not isinstance(properties, dict) or not isinstance(required, list):
        return None
    decision = properties.get("decision")
    if "decision" not in required or not isinstance(decision, dict):
        return None
    allowed = decision.get("enum")
    if not isinstance(allowed, list) or not all(isinstance(each, str) for each in allowed):
        return None
    found = frozenset(allowed)
    if not {"approve", "deny"} <= found or not found <= set(APPROVAL_DECISIONS):
        return None
    if "edit" in found and "arguments" not in properties:
        return None
    return found


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""
