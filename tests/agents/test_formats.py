"""Exported tool definitions against the providers' published shapes, and the strict-mode check.

The shapes are written from the providers' reference documentation as JSON Schemas:

* OpenAI Chat Completions ``tools[]``: ``{"type": "function", "function": {"name",
  "description"?, "parameters"?, "strict"?}}``; the name is ``a-z, A-Z, 0-9, _ and -``, at most
  64 characters. Responses API: the same members at the top level next to ``"type"``.
* Anthropic Messages ``tools[]`` (client tools): ``{"name", "description"?, "input_schema"}``
  with ``input_schema`` an object schema (``"type": "object"``).
* MCP ``Tool`` (``tools/list`` result, 2025-06-18 schema): ``{"name", "title"?,
  "description"?, "inputSchema": {"type": "object", "properties"?, "required"?}, ...}``.
"""

from __future__ import annotations

import json

import jsonschema
import pytest
from helpers.agent_tools import PLAIN, REGISTRY

from scope_tool import Definition, Registry
from scope_tool.agents import (
    StrictModeError,
    anthropic_tools,
    mcp_tools,
    openai_strict_problems,
    openai_tools,
)

NAME = {"type": "string", "pattern": "^[a-zA-Z0-9_-]{1,64}$"}
OBJECT_SCHEMA = {
    "type": "object",
    "properties": {"type": {"const": "object"}},
    "required": ["type"],
}


def closed(properties: dict, *required: str) -> dict:
    """The JSON Schema of an object with exactly ``properties``, ``required`` among them."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


OPENAI_FUNCTION = closed(
    {
        "name": NAME,
        "description": {"type": "string"},
        "parameters": {"type": "object"},
        "strict": {"type": ["boolean", "null"]},
    },
    "name",
)
OPENAI_CHAT_TOOL = closed(
    {"type": {"const": "function"}, "function": OPENAI_FUNCTION}, "type", "function"
)
OPENAI_RESPONSES_TOOL = closed(
    {"type": {"const": "function"}, **OPENAI_FUNCTION["properties"]},
    "type",
    "name",
    "parameters",
    "strict",
)
ANTHROPIC_TOOL = closed(
    {"name": NAME, "description": {"type": "string"}, "input_schema": OBJECT_SCHEMA},
    "name",
    "input_schema",
)
MCP_TOOL = closed(
    {
        "name": {"type": "string"},
        "title": {"type": "string"},
        "description": {"type": "string"},
        "inputSchema": {
            "type": "object",
            "properties": {
                "type": {"const": "object"},
                "properties": {"type": "object", "additionalProperties": {"type": "object"}},
                "required": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["type"],
        },
        "outputSchema": {"type": "object"},
        "annotations": {"type": "object"},
        "_meta": {"type": "object"},
    },
    "name",
    "inputSchema",
)


def list_of(item: dict) -> dict:
    return {"type": "array", "items": item}


def test_openai_chat_tools_match_the_published_shape_and_keep_the_contract_schema():
    tools = openai_tools(REGISTRY)
    jsonschema.validate(tools, list_of(OPENAI_CHAT_TOOL))
    assert [tool["function"]["name"] for tool in tools] == ["boom", "fail", "sleep", "write_note"]
    note = tools[-1]["function"]
    definition = REGISTRY.resolve("write_note").contract.definition  # type: ignore[union-attr]
    assert note["parameters"] == json.loads(definition.input_schema)
    assert note["description"] == "Append a note to a ledger file."
    assert note["strict"] is False


def test_openai_responses_tools_match_the_published_shape():
    tools = openai_tools(REGISTRY, api="responses", strict="auto")
    jsonschema.validate(tools, list_of(OPENAI_RESPONSES_TOOL))


def test_anthropic_tools_match_the_published_shape():
    tools = anthropic_tools(REGISTRY)
    jsonschema.validate(tools, list_of(ANTHROPIC_TOOL))
    assert tools[0] == {
        "name": "boom",
        "description": "Always errors.",
        "input_schema": json.loads(REGISTRY.resolve("boom").contract.definition.input_schema),  # type: ignore[union-attr]
    }


def test_mcp_tools_match_the_published_shape():
    tools = mcp_tools(REGISTRY)
    jsonschema.validate(tools, list_of(MCP_TOOL))
    assert {tool["name"] for tool in tools} == {"boom", "fail", "sleep", "write_note"}


def test_an_empty_description_is_left_out_everywhere():
    bare = [Definition(name="bare", input_schema={"type": "object"})]
    assert openai_tools(bare)[0]["function"] == {
        "name": "bare",
        "parameters": {"type": "object"},
        "strict": False,
    }
    assert anthropic_tools(bare) == [{"name": "bare", "input_schema": {"type": "object"}}]
    assert mcp_tools(bare) == [{"name": "bare", "inputSchema": {"type": "object"}}]


def test_typed_functions_are_strict_compatible():
    """Func schemas close every object and require every field: strict mode takes them."""
    assert openai_strict_problems(PLAIN) == []
    tools = openai_tools(PLAIN, strict=True)
    assert all(tool["function"]["strict"] is True for tool in tools)


LOOSE = Definition(
    name="loose",
    input_schema={
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1},
            "when": {"type": "string", "format": "iso-week"},
            "tags": {"type": "array"},
            "meta": {"type": "object", "properties": {"a": {"type": "integer"}}},
            "kind": {"oneOf": [{"const": "a"}, {"const": "b"}]},
            "any": {},
        },
        "required": ["name"],
    },
)


def test_the_strict_report_names_every_problem_with_its_place():
    problems = openai_strict_problems([LOOSE])
    found = {(problem.pointer, problem.rule) for problem in problems}
    assert ("/properties/name/minLength", "the keyword 'minLength' is not supported") in found
    assert ("/properties/when/format", "format 'iso-week' is not supported") in found
    assert ("/properties/tags", "an array needs typed items") in found
    assert ("/properties/meta", 'every object needs "additionalProperties": false') in found
    assert ("/properties/kind/oneOf", "the keyword 'oneOf' is not supported") in found
    assert ("/properties/any", "a schema needs a type (or $ref, anyOf, enum, const)") in found
    assert ("", 'every object needs "additionalProperties": false') in found
    assert any(
        pointer == "" and rule.startswith("every property must be required") and "when" in rule
        for pointer, rule in found
    )
    assert all(problem.tool == "loose" for problem in problems)
    assert str(problems[0]).startswith("loose: ")


def test_strict_true_refuses_and_lists_all_problems_while_auto_marks_per_tool():
    registry_defs = [LOOSE, *PLAIN.definitions()]
    with pytest.raises(StrictModeError) as raised:
        openai_tools(registry_defs, strict=True)
    assert len(raised.value.problems) == len(openai_strict_problems([LOOSE]))
    assert "loose: /properties/name/minLength" in str(raised.value)
    auto = {
        tool["function"]["name"]: tool["function"]["strict"]
        for tool in openai_tools(registry_defs, strict="auto")
    }
    assert auto == {"loose": False, "boom": True, "fail": True, "sleep": True, "write_note": True}


def test_refs_depth_and_root_rules():
    deep: dict = {"type": "string"}
    for _ in range(11):
        deep = {
            "type": "object",
            "properties": {"x": deep},
            "required": ["x"],
            "additionalProperties": False,
        }
    definitions = [
        Definition(name="deep", input_schema=deep),
        Definition(
            name="refs",
            input_schema={
                "type": "object",
                "$defs": {"A": {"type": "string"}},
                "properties": {
                    "ok": {"$ref": "#/$defs/A"},
                    "far": {"$ref": "#/properties/ok"},
                    "sibling": {"$ref": "#/$defs/A", "maxLength": 3},
                },
                "required": ["ok", "far", "sibling"],
                "additionalProperties": False,
            },
        ),
    ]
    found = {(p.tool, p.pointer, p.rule) for p in openai_strict_problems(definitions)}
    assert ("deep", "", "nesting is 11 levels deep; strict mode allows 10") in found
    assert (
        "refs",
        "/properties/far/$ref",
        "$ref '#/properties/ok' must be '#' or '#/$defs/NAME'",
    ) in found
    assert ("refs", "/properties/sibling", "$ref cannot have siblings (maxLength)") in found
    assert not any(pointer == "/properties/ok" for _, pointer, _ in found)


def test_bad_arguments_are_refused_clearly():
    with pytest.raises(ValueError, match="api must be"):
        openai_tools(REGISTRY, api="assistants")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="strict must be"):
        openai_tools(REGISTRY, strict="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="expected a Registry or Definitions"):
        anthropic_tools(["not a definition"])  # type: ignore[list-item]
    assert openai_tools(Registry()) == []
