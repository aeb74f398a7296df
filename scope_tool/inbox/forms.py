"""The answer form, generated from the response schema the tool asked with.

A tool that pauses for a person states what it will accept as a JSON Schema. People should not
have to write JSON to approve a refund, so the inbox turns the common schema shapes into a form:

* ``{"type": "boolean"}`` -> two buttons, Approve and Decline;
* ``{"enum": [...]}`` -> one button per choice;
* an object with ``properties`` -> labelled fields carrying their constraints (required,
  min/max, lengths, pattern, format), nested objects as groups, arrays of simple items as one item
  per line (or checkboxes for arrays of enum members);
* anything else (or any part the form cannot express) -> a JSON editor.

The form is only a convenience: the answer is still checked by the workflow against the schema
itself, so where the form is less precise than the schema the workflow's refusal is shown.
Local ``$ref`` (``#/$defs/...``), ``allOf`` of one schema and "X or null" (``anyOf``/``oneOf``
with a ``{"type": "null"}`` branch, or ``"type": [X, "null"]``) are understood, since pydantic
emits them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from scope_tool.inbox.schema_shapes import SchemaResolver

__all__ = [
    "AnswerForm",
    "Choice",
    "FieldKind",
    "FormField",
    "FormKind",
    "build_answer_form",
    "field_name",
]

_MAX_DEPTH = 8
_LONG_TEXT = 200
_SIMPLE_ITEM_TYPES = frozenset({"string", "integer", "number"})


@dataclass(frozen=True, slots=True, kw_only=True)
class AnswerForm:
    """The form for one pending request; :func:`build_answer_form` makes it."""

    kind: FormKind
    title: str = ""
    description: str = ""
    fields: tuple[FormField, ...] = ()
    choices: tuple[Choice, ...] = ()
    schema_text: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class FormField:
    """One labelled input (or a group of them) standing for one property of the answer.

    Attributes:
        name: The form key: a JSON Pointer to the property (``/refund/amount``), unique and
            never colliding with the form's own keys, which start with ``_``.
        key: The property name in its object.
        label: What the person reads: the schema's ``title``, else the property name.
        kind: How it is entered.
        required: Listed in the parent's ``required``.
        nullable: The schema also allows ``null`` (an empty required input then sends null).
        description: The schema's ``description``.
        input_type: The HTML input type (``text``, ``email``, ``url``, ``date``, ``number``).
        hints: The constraints in words, shown next to the input.
        attributes: HTML validation attributes (``minlength``, ``max``, ``pattern`` ...), so the
            browser catches most mistakes before the workflow does.
        choices: Allowed values for ``CHOICE`` and ``MULTI_CHOICE``.
        children: The fields of a ``GROUP``.
        item_kind: For a ``LIST``: ``TEXT``, ``INTEGER`` or ``NUMBER``.
        multiline: A long text (``maxLength`` of 200 or more) gets a text area.
        default: The schema's ``default`` as form text, to prefill the input.
    """

    name: str
    key: str
    label: str
    kind: FieldKind
    required: bool
    nullable: bool = False
    description: str = ""
    input_type: str = "text"
    hints: tuple[str, ...] = ()
    attributes: tuple[tuple[str, str], ...] = ()
    choices: tuple[Choice, ...] = ()
    children: tuple[FormField, ...] = ()
    item_kind: FieldKind | None = None
    multiline: bool = False
    default: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Choice:
    """One allowed value. ``value`` is its JSON text, so ``1`` and ``"1"`` stay distinct."""

    value: str
    label: str


class FormKind(StrEnum):
    """The shape of the whole form."""

    APPROVAL = "approval"
    CHOICE = "choice"
    FIELDS = "fields"
    JSON = "json"


class FieldKind(StrEnum):
    """How one property is entered."""

    TEXT = "text"
    INTEGER = "integer"
    NUMBER = "number"
    CHECKBOX = "checkbox"
    YES_NO = "yes_no"
    CHOICE = "choice"
    MULTI_CHOICE = "multi_choice"
    LIST = "list"
    GROUP = "group"
    JSON = "json"


def field_name(path: tuple[str, ...]) -> str:
    """The form key for a property path: a JSON Pointer (``~`` -> ``~0``, ``/`` -> ``~1``)."""
    return "".join("/" + key.replace("~", "~0").replace("/", "~1") for key in path)


def build_answer_form(response_schema: bytes | str) -> AnswerForm:
    """Generate the form for a response schema (the JSON the tool's ``InputRequest`` carries).

    A schema that is not JSON, or not an object, gets the JSON editor: the form never refuses to
    render, since the workflow is the one that judges answers.
    """
    try:
        root = json.loads(response_schema)
    except ValueError:
        return AnswerForm(kind=FormKind.JSON, schema_text=_text(response_schema))
    schema_text = json.dumps(root, indent=2, ensure_ascii=False)
    if not isinstance(root, dict):
        return AnswerForm(kind=FormKind.JSON, schema_text=schema_text)
    reader = _SchemaReader(root)
    schema, nullable = reader.simplify(root)
    title = _string(schema.get("title"))
    description = _string(schema.get("description"))
    base = AnswerForm(
        kind=FormKind.JSON, title=title, description=description, schema_text=schema_text
    )
    if nullable:
        return base
    choices = _choices(schema)
    if choices is not None:
        return replace(base, kind=FormKind.CHOICE, choices=choices)
    kind = _single_type(schema)
    if kind == "boolean":
        return replace(base, kind=FormKind.APPROVAL)
    if kind == "object" and _has_properties(schema):
        fields = reader.object_fields(schema, path=(), depth=0)
        return replace(base, kind=FormKind.FIELDS, fields=fields)
    return base


def _text(raw: bytes | str) -> str:
    return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw


def _string(value: object) -> str:
    return value if isinstance(value, str) else ""


def _has_properties(schema: Mapping[str, Any]) -> bool:
    properties = schema.get("properties")
    return isinstance(properties, dict) and bool(properties)


def _single_type(schema: Mapping[str, Any]) -> str | None:
    kind = schema.get("type")
    if isinstance(kind, str):
        return kind
    if isinstance(kind, list) and len(kind) == 1 and isinstance(kind[0], str):
        return kind[0]
    return None


def _json_text(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _choices(schema: Mapping[str, Any]) -> tuple[Choice, ...] | None:
    members: object = schema.get("enum")
    if "const" in schema and members is None:
        members = [schema["const"]]
    if not isinstance(members, list) or not members:
        return None
    return tuple(
        Choice(
            value=_json_text(member),
            label=member if isinstance(member, str) else _json_text(member),
        )
        for member in members
    )


def _number_text(value: object) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return _json_text(value)


class _SchemaReader:
    """Walks one response schema into fields, resolving wrappers with :class:`SchemaResolver`."""

    def __init__(self, root: Mapping[str, Any]) -> None:
        self.simplify = SchemaResolver(root).simplify

    def object_fields(
        self, schema: Mapping[str, Any], *, path: tuple[str, ...], depth: int
    ) -> tuple[FormField, ...]:
        properties: Mapping[str, Any] = schema.get("properties") or {}
        required_keys = schema.get("required")
        required = set(required_keys) if isinstance(required_keys, list) else set()
        return tuple(
            self.field(
                key,
                prop if isinstance(prop, dict) else {},
                path=(*path, key),
                required=key in required,
                depth=depth,
            )
            for key, prop in properties.items()
        )

    def field(
        self, key: str, raw: Mapping[str, Any], *, path: tuple[str, ...], required: bool, depth: int
    ) -> FormField:
        schema, nullable = self.simplify(raw)
        base: dict[str, Any] = {
            "name": field_name(path),
            "key": key,
            "label": _string(schema.get("title")) or key,
            "required": required,
            "nullable": nullable,
            "description": _string(schema.get("description")),
        }
        default = schema.get("default")
        choices = _choices(schema)
        if choices is not None:
            chosen = _json_text(default) if "default" in schema else None
            return FormField(kind=FieldKind.CHOICE, choices=choices, default=chosen, **base)
        kind = _single_type(schema)
        if kind == "string":
            return _text_field(schema, base)
        if kind in ("integer", "number"):
            return _number_field(schema, base, integer=kind == "integer")
        if kind == "boolean":
            field_kind = FieldKind.CHECKBOX if required and not nullable else FieldKind.YES_NO
            text = _json_text(default) if isinstance(default, bool) else None
            return FormField(kind=field_kind, default=text, **base)
        if kind == "object" and _has_properties(schema) and depth < _MAX_DEPTH:
            children = self.object_fields(schema, path=path, depth=depth + 1)
            return FormField(kind=FieldKind.GROUP, children=children, **base)
        if kind == "array":
            listed = self._array_field(schema, base)
            if listed is not None:
                return listed
        text = json.dumps(default, ensure_ascii=False) if "default" in schema else None
        hints = ("JSON matching: " + json.dumps(raw, ensure_ascii=False),)
        return FormField(kind=FieldKind.JSON, hints=hints, default=text, **base)

    def _array_field(self, schema: Mapping[str, Any], base: Mapping[str, Any]) -> FormField | None:
        items = schema.get("items")
        if not isinstance(items, dict) or "prefixItems" in schema:
            return None
        item, item_nullable = self.simplify(items)
        if item_nullable:
            return None
        hints = list(_array_hints(schema))
        choices = _choices(item)
        if choices is not None:
            return FormField(
                kind=FieldKind.MULTI_CHOICE, choices=choices, hints=tuple(hints), **base
            )
        item_type = _single_type(item)
        if item_type not in _SIMPLE_ITEM_TYPES or set(item) & {"anyOf", "oneOf", "allOf", "not"}:
            return None
        item_kind = {"string": FieldKind.TEXT, "integer": FieldKind.INTEGER}.get(
            item_type or "", FieldKind.NUMBER
        )
        hints.insert(0, f"one {item_type} per line")
        hints.extend(f"each: {hint}" for hint in _scalar_hints(item))
        default = schema.get("default")
        text = None
        if isinstance(default, list):
            text = "\n".join(v if isinstance(v, str) else _json_text(v) for v in default)
        return FormField(
            kind=FieldKind.LIST, item_kind=item_kind, hints=tuple(hints), default=text, **base
        )


_INPUT_TYPES = {"email": "email", "uri": "url", "url": "url", "date": "date"}


def _text_field(schema: Mapping[str, Any], base: Mapping[str, Any]) -> FormField:
    attributes: list[tuple[str, str]] = []
    min_length, max_length = schema.get("minLength"), schema.get("maxLength")
    if isinstance(min_length, int) and not isinstance(min_length, bool):
        attributes.append(("minlength", str(min_length)))
    if isinstance(max_length, int) and not isinstance(max_length, bool):
        attributes.append(("maxlength", str(max_length)))
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        # HTML anchors its pattern at both ends; JSON Schema's matches anywhere.
        head = "" if pattern.startswith("^") else ".*"
        tail = "" if pattern.endswith("$") and not pattern.endswith("\\$") else ".*"
        html_pattern = pattern if not head and not tail else f"{head}(?:{pattern}){tail}"
        attributes.append(("pattern", html_pattern))
    form_format = _string(schema.get("format"))
    default = schema.get("default")
    return FormField(
        kind=FieldKind.TEXT,
        input_type=_INPUT_TYPES.get(form_format, "text"),
        hints=_scalar_hints(schema),
        attributes=tuple(attributes),
        multiline=isinstance(max_length, int) and max_length >= _LONG_TEXT,
        default=default if isinstance(default, str) else None,
        **base,
    )


def _number_field(
    schema: Mapping[str, Any], base: Mapping[str, Any], *, integer: bool
) -> FormField:
    attributes: list[tuple[str, str]] = []
    minimum, maximum = _number_text(schema.get("minimum")), _number_text(schema.get("maximum"))
    if minimum is not None:
        attributes.append(("min", minimum))
    if maximum is not None:
        attributes.append(("max", maximum))
    step = "1" if integer else "any"
    multiple = schema.get("multipleOf")
    if integer and isinstance(multiple, int) and not isinstance(multiple, bool) and minimum is None:
        step = str(multiple)
    attributes.append(("step", step))
    return FormField(
        kind=FieldKind.INTEGER if integer else FieldKind.NUMBER,
        input_type="number",
        hints=(("whole number",) if integer else ()) + _scalar_hints(schema),
        attributes=tuple(attributes),
        default=_number_text(schema.get("default")),
        **base,
    )


def _scalar_hints(schema: Mapping[str, Any]) -> tuple[str, ...]:
    words = {
        "minLength": "at least {} characters",
        "maxLength": "at most {} characters",
        "minimum": "at least {}",
        "exclusiveMinimum": "more than {}",
        "maximum": "at most {}",
        "exclusiveMaximum": "less than {}",
        "multipleOf": "a multiple of {}",
        "pattern": "matching {}",
        "format": "format: {}",
    }
    return tuple(
        template.format(
            schema[keyword] if isinstance(schema[keyword], str) else _json_text(schema[keyword])
        )
        for keyword, template in words.items()
        if keyword in schema
    )


def _array_hints(schema: Mapping[str, Any]) -> tuple[str, ...]:
    hints = []
    if "minItems" in schema:
        hints.append(f"at least {_json_text(schema['minItems'])} items")
    if "maxItems" in schema:
        hints.append(f"at most {_json_text(schema['maxItems'])} items")
    if schema.get("uniqueItems") is True:
        hints.append("no duplicates")
    return tuple(hints)
