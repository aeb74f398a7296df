"""The generated answer forms across schema shapes, and form values -> JSON conversion."""

from __future__ import annotations

import json

import pytest

from scope_tool.inbox.form_values import AnswerFormError, answer_from_form
from scope_tool.inbox.forms import FieldKind, FormKind, build_answer_form, field_name


def _schema(value: object) -> bytes:
    return json.dumps(value).encode()


def _fields(form):
    return {field.name: field for field in form.fields}


# -- shapes ------------------------------------------------------------------------------------


def test_boolean_is_an_approval_with_two_buttons() -> None:
    form = build_answer_form(b'{"type":"boolean","title":"Ship it?"}')
    assert form.kind is FormKind.APPROVAL
    assert form.title == "Ship it?"
    assert answer_from_form(form, {"_decision": ["true"]}) is True
    assert answer_from_form(form, {"_decision": ["false"]}) is False
    with pytest.raises(AnswerFormError, match="choose Approve or Decline"):
        answer_from_form(form, {})


def test_enum_offers_each_member_and_keeps_its_json_type() -> None:
    form = build_answer_form(_schema({"enum": ["canary", 1, None]}))
    assert form.kind is FormKind.CHOICE
    assert [(c.value, c.label) for c in form.choices] == [
        ('"canary"', "canary"),
        ("1", "1"),
        ("null", "null"),
    ]
    assert answer_from_form(form, {"_decision": ["1"]}) == 1
    assert answer_from_form(form, {"_decision": ['"canary"']}) == "canary"
    with pytest.raises(AnswerFormError, match="not one of the options"):
        answer_from_form(form, {"_decision": ['"2"']})


def test_a_string_enum_with_type_is_still_a_choice() -> None:
    form = build_answer_form(_schema({"type": "string", "enum": ["a", "b"]}))
    assert form.kind is FormKind.CHOICE
    assert len(form.choices) == 2


def test_object_fields_carry_labels_constraints_and_html_attributes() -> None:
    form = build_answer_form(
        _schema(
            {
                "type": "object",
                "properties": {
                    "reason": {
                        "type": "string",
                        "title": "Why",
                        "description": "for the audit log",
                        "minLength": 3,
                        "maxLength": 500,
                        "pattern": "^[A-Z]",
                    },
                    "email": {"type": "string", "format": "email"},
                    "count": {"type": "integer", "minimum": 1, "maximum": 9},
                    "ratio": {"type": "number", "exclusiveMaximum": 1},
                    "urgent": {"type": "boolean"},
                    "notify": {"type": "boolean"},
                    "code": {"type": "string", "pattern": "ab+"},
                    "zip": {"type": "string", "pattern": "^[0-9]{5}$"},
                },
                "required": ["reason", "count", "urgent"],
            }
        )
    )
    assert form.kind is FormKind.FIELDS
    fields = _fields(form)
    reason = fields["/reason"]
    assert reason.label == "Why"
    assert reason.description == "for the audit log"
    assert reason.required
    assert reason.multiline  # maxLength 500 gets a text area
    assert dict(reason.attributes) == {
        "minlength": "3",
        "maxlength": "500",
        "pattern": "(?:^[A-Z]).*",
    }
    assert "at least 3 characters" in reason.hints
    assert fields["/email"].input_type == "email"
    assert not fields["/email"].required
    count = fields["/count"]
    assert count.kind is FieldKind.INTEGER
    assert dict(count.attributes) == {"min": "1", "max": "9", "step": "1"}
    assert fields["/ratio"].kind is FieldKind.NUMBER
    assert "less than 1" in fields["/ratio"].hints
    assert fields["/urgent"].kind is FieldKind.CHECKBOX  # required boolean
    assert fields["/notify"].kind is FieldKind.YES_NO  # optional: yes / no / not set
    # JSON Schema patterns match anywhere; HTML anchors them, so unanchored ones are widened.
    assert dict(fields["/code"].attributes)["pattern"] == ".*(?:ab+).*"
    assert dict(fields["/zip"].attributes)["pattern"] == "^[0-9]{5}$"


def test_nested_objects_become_groups_with_pointer_names() -> None:
    form = build_answer_form(
        _schema(
            {
                "type": "object",
                "properties": {
                    "refund": {
                        "type": "object",
                        "title": "Refund",
                        "properties": {
                            "method": {"enum": ["card", "voucher"]},
                            "address": {
                                "type": "object",
                                "properties": {"city/zip": {"type": "string"}},
                            },
                        },
                        "required": ["method"],
                    }
                },
            }
        )
    )
    (refund,) = form.fields
    assert refund.kind is FieldKind.GROUP
    assert refund.label == "Refund"
    method, address = refund.children
    assert method.name == "/refund/method"
    assert method.kind is FieldKind.CHOICE
    assert method.required
    (city,) = address.children
    assert city.name == "/refund/address/city~1zip"
    assert field_name(("a~b", "c/d")) == "/a~0b/c~1d"


def test_arrays_of_simple_items_are_lists_and_arrays_of_enum_are_checkboxes() -> None:
    form = build_answer_form(
        _schema(
            {
                "type": "object",
                "properties": {
                    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
                    "ids": {"type": "array", "items": {"type": "integer", "minimum": 0}},
                    "regions": {
                        "type": "array",
                        "items": {"enum": ["eu", "us"]},
                        "uniqueItems": True,
                    },
                    "rows": {"type": "array", "items": {"type": "object"}},
                },
            }
        )
    )
    fields = _fields(form)
    assert fields["/tags"].kind is FieldKind.LIST
    assert fields["/tags"].item_kind is FieldKind.TEXT
    assert "at most 3 items" in fields["/tags"].hints
    assert fields["/ids"].item_kind is FieldKind.INTEGER
    assert "each: at least 0" in fields["/ids"].hints
    assert fields["/regions"].kind is FieldKind.MULTI_CHOICE
    assert "no duplicates" in fields["/regions"].hints
    assert fields["/rows"].kind is FieldKind.JSON  # not simple: a JSON editor for that field


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string"},
        {"type": "array", "items": {"type": "string"}},
        {"type": "object"},
        {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        {},
        ["not", "an", "object"],
        {"type": ["boolean", "null"]},
    ],
)
def test_anything_else_gets_the_json_editor(schema: object) -> None:
    form = build_answer_form(_schema(schema))
    assert form.kind is FormKind.JSON
    assert answer_from_form(form, {"_answer_json": ['{"free": [1, 2]}']}) == {"free": [1, 2]}
    with pytest.raises(AnswerFormError, match="not valid JSON"):
        answer_from_form(form, {"_answer_json": ["{oops"]})
    with pytest.raises(AnswerFormError, match="write a JSON value"):
        answer_from_form(form, {"_answer_json": ["  "]})


def test_a_schema_that_is_not_json_still_renders_a_json_editor() -> None:
    form = build_answer_form(b"{not json")
    assert form.kind is FormKind.JSON
    assert form.schema_text == "{not json"


def test_pydantic_style_refs_and_optionals_are_understood() -> None:
    schema = {
        "$defs": {
            "Method": {"enum": ["card", "voucher"], "type": "string", "title": "Method"},
            "Address": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
        "type": "object",
        "properties": {
            "method": {"$ref": "#/$defs/Method"},
            "address": {"anyOf": [{"$ref": "#/$defs/Address"}, {"type": "null"}]},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
            "count": {"type": ["integer", "null"]},
        },
        "required": ["method", "count"],
    }
    form = build_answer_form(_schema(schema))
    fields = _fields(form)
    assert fields["/method"].kind is FieldKind.CHOICE
    assert fields["/address"].kind is FieldKind.GROUP
    assert fields["/address"].nullable
    assert fields["/note"].kind is FieldKind.TEXT
    assert fields["/count"].kind is FieldKind.INTEGER
    assert fields["/count"].nullable
    # An empty required-but-nullable input sends null; empty optional ones are left out.
    answer = answer_from_form(form, {"/method": ['"card"'], "/count": [""], "/note": [""]})
    assert answer == {"method": "card", "count": None}


def test_defaults_prefill_the_inputs() -> None:
    form = build_answer_form(
        _schema(
            {
                "type": "object",
                "properties": {
                    "n": {"type": "integer", "default": 3},
                    "s": {"type": "string", "default": "hi"},
                    "b": {"type": "boolean", "default": True},
                    "e": {"enum": ["x", "y"], "default": "y"},
                },
                "required": ["b"],
            }
        )
    )
    fields = _fields(form)
    assert [fields[name].default for name in ("/n", "/s", "/b", "/e")] == ["3", "hi", "true", '"y"']


def test_recursive_references_stop_instead_of_looping() -> None:
    schema = {
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {"next": {"$ref": "#/$defs/Node"}, "v": {"type": "integer"}},
            }
        },
        "$ref": "#/$defs/Node",
    }
    form = build_answer_form(_schema(schema))
    assert form.kind is FormKind.FIELDS
    depth, field = 0, _fields(form)["/next"]
    while field.kind is FieldKind.GROUP:
        depth += 1
        field = next(child for child in field.children if child.key == "next")
    assert field.kind is FieldKind.JSON
    assert depth == 8


# -- values -> JSON ----------------------------------------------------------------------------

REFUND = build_answer_form(
    _schema(
        {
            "type": "object",
            "properties": {
                "approved": {"type": "boolean"},
                "amount": {"type": "integer"},
                "ratio": {"type": "number"},
                "reason": {"type": "string"},
                "note": {"type": "string"},
                "notify": {"type": "boolean"},
                "method": {"enum": ["card", "voucher", 1]},
                "refund": {
                    "type": "object",
                    "properties": {"to": {"type": "string"}, "urgent": {"type": "boolean"}},
                    "required": ["to", "urgent"],
                },
                "tags": {"type": "array", "items": {"type": "string"}},
                "ids": {"type": "array", "items": {"type": "number"}},
                "regions": {"type": "array", "items": {"enum": ["eu", "us"]}},
                "extra": {"type": "array", "items": {"type": "object"}},
            },
            "required": ["approved", "amount", "reason"],
        }
    )
)


def test_values_convert_to_typed_json() -> None:
    answer = answer_from_form(
        REFUND,
        {
            "/approved": ["true"],
            "/amount": [" 42 "],
            "/ratio": ["2"],
            "/reason": ["  spaces kept  "],
            "/notify": ["false"],
            "/method": ["1"],
            "/refund/to": ["ops"],
            "/tags": ["a\r\n\r\n  b  \n"],
            "/ids": ["1\n2.5\n-3e2"],
            "/regions": ['"eu"', '"us"'],
            "/extra": ['[{"k": 1}]'],
        },
    )
    assert answer == {
        "approved": True,
        "amount": 42,
        "ratio": 2,
        "reason": "  spaces kept  ",
        "notify": False,
        "method": 1,
        "refund": {"to": "ops", "urgent": False},
        "tags": ["a", "b"],
        "ids": [1, 2.5, -300.0],
        "regions": ["eu", "us"],
        "extra": [{"k": 1}],
    }
    assert isinstance(answer["ratio"], int)


def test_empty_optional_inputs_are_left_out_and_an_unchecked_required_box_is_false() -> None:
    answer = answer_from_form(
        REFUND,
        {
            "/amount": ["1"],
            "/reason": ["ok"],
            "/ratio": [""],
            "/note": [""],
            "/notify": [""],
            "/method": [""],
            "/refund/to": [""],
            "/tags": ["\n  \n"],
            "/extra": [""],
        },
    )
    assert answer == {"approved": False, "amount": 1, "reason": "ok"}


def test_every_problem_is_reported_at_once_by_field() -> None:
    with pytest.raises(AnswerFormError) as caught:
        answer_from_form(
            REFUND,
            {
                "/amount": ["4.5"],
                "/reason": [""],
                "/ratio": ["nan"],
                "/notify": ["maybe"],
                "/method": ['"cash"'],
                "/refund/urgent": ["true"],
                "/ids": ["1\nx"],
                "/extra": ["[1,"],
            },
        )
    problems = {problem.name: problem.message for problem in caught.value.problems}
    assert problems == {
        "/amount": "'4.5' is not a whole number",
        "/reason": "required",
        "/ratio": "'nan' is not a finite number",
        "/notify": "choose yes or no, not 'maybe'",
        "/method": '"cash" is not one of the options',
        "/refund/to": "required",
        "/ids": "'x' is not a number",
        "/extra": "not valid JSON (Expecting value: line 1 column 4 (char 3))",
    }
    assert "amount: '4.5' is not a whole number" in str(caught.value)


def test_the_json_editor_is_the_answer_only_when_its_button_is_used() -> None:
    values = {"_answer_json": ['{"anything": true}'], "/amount": ["7"], "/reason": ["r"]}
    assert answer_from_form(REFUND, {**values, "_via": ["json"]}) == {"anything": True}
    assert answer_from_form(REFUND, values) == {"approved": False, "amount": 7, "reason": "r"}
    approval = build_answer_form(b'{"type":"boolean"}')
    assert answer_from_form(approval, {"_via": ["json"], "_answer_json": ["true"]}) is True
