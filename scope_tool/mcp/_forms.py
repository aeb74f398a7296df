"""A pending question as an MCP elicitation, and the person's reply as an answer.

MCP's form mode accepts only a flat object of primitive fields, so a response schema becomes a
form by its *shape*, never by importing the tool that asked:

* ``{"type": "boolean"}`` becomes one ``approve`` checkbox; *decline* answers ``false``.
* an approval gate (an object whose ``decision`` enum holds ``approve`` and ``deny``) becomes a
  ``decision`` choice plus an optional ``reason``; *decline* answers ``{"decision": "deny"}``.
  ``edit`` (new arguments, a nested object) does not fit a form and is left out of the choice.
* a bare string / number / integer (or enum of them) becomes one ``value`` field.
* a flat object of primitives is the form itself.

Anything else does not fit; the caller then sends the person to the inbox page (URL mode) or
offers a single JSON text field. *cancel* (dismissed) never answers: the call keeps waiting.
The answer built here is only a proposal: it goes through the call's one validated answer path,
which may still refuse it (then the person is asked again, with the reason).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

__all__ = ["FormKind", "FormPlan", "Reply", "plan_form", "prompt_message"]

_PRIMITIVES = frozenset({"string", "number", "integer", "boolean"})
_KEPT_KEYWORDS = (
    "type",
    "title",
    "description",
    "enum",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "format",
    "default",
)
_FORMATS = frozenset({"email", "uri", "date", "date-time"})

Action = Literal["accept", "decline", "cancel"]


class FormKind(StrEnum):
    """How the response schema was turned into a form."""

    BOOLEAN = "boolean"
    APPROVAL = "approval"
    VALUE = "value"
    OBJECT = "object"
    JSON_TEXT = "json_text"


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """What a person's elicitation reply means for the call.

    ``answer`` is the JSON value to send through the answer path, or ``None`` when the call
    keeps waiting (``declined`` then says whether the person explicitly said no).
    """

    answer: Any = None
    has_answer: bool = False
    declined: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class FormPlan:
    """The form for one response schema and the mapping of replies back to answers."""

    kind: FormKind
    requested_schema: dict[str, Any]

    def reply(self, action: str, content: dict[str, Any] | None) -> Reply:
        """Map an elicitation result (``accept`` / ``decline`` / ``cancel``) to an answer."""
        if action == "cancel":
            return Reply()
        if action == "decline":
            if self.kind is FormKind.BOOLEAN:
                return Reply(answer=False, has_answer=True, declined=True)
            if self.kind is FormKind.APPROVAL:
                return Reply(
                    answer={"decision": "deny", "reason": "declined in the MCP client"},
                    has_answer=True,
                    declined=True,
                )
            return Reply(declined=True)
        if action != "accept":
            return Reply()
        fields = {key: value for key, value in (content or {}).items() if value is not None}
        match self.kind:
            case FormKind.BOOLEAN:
                return Reply(answer=fields.get("approve"), has_answer=True)
            case FormKind.APPROVAL:
                answer = {"decision": fields.get("decision")}
                if fields.get("decision") == "deny" and fields.get("reason"):
                    answer["reason"] = fields["reason"]
                return Reply(answer=answer, has_answer=True)
            case FormKind.VALUE:
                return Reply(answer=fields.get("value"), has_answer=True)
            case FormKind.OBJECT:
                return Reply(answer=fields, has_answer=True)
            case FormKind.JSON_TEXT:
                text = fields.get("answer_json")
                try:
                    return Reply(answer=json.loads(str(text)), has_answer=True)
                except ValueError:
                    # Not JSON: send it as the string it is; the schema check says what is wrong.
                    return Reply(answer=text, has_answer=True)


def plan_form(response_schema: bytes, *, allow_json_text: bool = False) -> FormPlan | None:
    """The form for ``response_schema``, or ``None`` when it does not fit MCP's form mode.

    Args:
        response_schema: the pending question's JSON Schema (canonical JSON bytes).
        allow_json_text: when no form fits, offer one JSON text field instead of ``None``.
    """
    try:
        schema = json.loads(response_schema)
    except ValueError:
        return None
    plan = _plan(schema) if isinstance(schema, dict) else None
    if plan is None and allow_json_text:
        text = json.dumps(schema, ensure_ascii=False, separators=(",", ":"))
        return FormPlan(
            kind=FormKind.JSON_TEXT,
            requested_schema=_object(
                {
                    "answer_json": {
                        "type": "string",
                        "title": "Answer (JSON)",
                        "description": f"Your answer as JSON matching this schema: {text}"[:2000],
                    }
                },
                required=["answer_json"],
            ),
        )
    return plan


def _plan(schema: dict[str, Any]) -> FormPlan | None:
    kind = schema.get("type")
    if kind == "boolean" and "enum" not in schema and "const" not in schema:
        field = {"type": "boolean", "title": "Approve?", "default": False}
        return FormPlan(
            kind=FormKind.BOOLEAN, requested_schema=_object({"approve": field}, ["approve"])
        )
    if kind == "object":
        properties = schema.get("properties")
        if not isinstance(properties, dict):
            return None
        decision = properties.get("decision")
        if isinstance(decision, dict) and _is_decision(decision):
            choices = [each for each in decision["enum"] if each in ("approve", "deny")]
            fields = {
                "decision": {"type": "string", "title": "Decision", "enum": choices},
                "reason": {"type": "string", "title": "Reason (when you deny)"},
            }
            return FormPlan(kind=FormKind.APPROVAL, requested_schema=_object(fields, ["decision"]))
        flat: dict[str, Any] = {}
        for name, field in properties.items():
            kept = _primitive(field)
            if kept is None:
                return None
            flat[name] = kept
        required = [each for each in schema.get("required", []) if each in flat]
        return FormPlan(kind=FormKind.OBJECT, requested_schema=_object(flat, required))
    kept = _primitive(schema)
    if kept is None:
        return None
    kept.setdefault("title", "Answer")
    return FormPlan(kind=FormKind.VALUE, requested_schema=_object({"value": kept}, ["value"]))


def _is_decision(field: dict[str, Any]) -> bool:
    choices = field.get("enum")
    return isinstance(choices, list) and "approve" in choices and "deny" in choices


def _primitive(field: Any) -> dict[str, Any] | None:
    """The field with only form-mode keywords, or ``None`` when it is not a primitive."""
    if not isinstance(field, dict):
        return None
    kind = field.get("type")
    if kind is None and isinstance(field.get("enum"), list):
        values = field["enum"]
        if values and all(isinstance(each, str) for each in values):
            kind = "string"
    if kind not in _PRIMITIVES:
        return None
    kept = {key: field[key] for key in _KEPT_KEYWORDS if key in field}
    kept["type"] = kind
    if "enum" in kept and not all(isinstance(each, str) for each in kept["enum"]):
        return None  # form enums are strings
    if "format" in kept and kept["format"] not in _FORMATS:
        del kept["format"]
    return kept


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


def prompt_message(prompt: bytes, *, call_id: str, tool: str, refusal: str | None = None) -> str:
    """The text shown to the person: the question first, then every other prompt field.

    Every field is shown because a person approves what they see (``write_file`` puts the
    exact content in its prompt). A refused earlier answer is named first, with its reason.
    """
    try:
        value = json.loads(prompt)
    except ValueError:
        value = prompt.decode("utf-8", "replace")
    lines: list[str] = []
    rest: Any
    if refusal:
        lines.append(f"Your last answer was refused: {refusal}")
    if isinstance(value, dict) and isinstance(value.get("question"), str):
        lines.append(value["question"])
        rest = {key: item for key, item in value.items() if key != "question"}
    else:
        lines.append(f"The tool {tool} asks:")
        rest = value
    if rest not in ({}, None, ""):
        lines.append(
            rest if isinstance(rest, str) else json.dumps(rest, ensure_ascii=False, indent=2)
        )
    lines.append(f"(scope-tool call {call_id})")
    return "\n\n".join(lines)
