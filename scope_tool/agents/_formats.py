"""Model-ready tool definitions: OpenAI function tools, Anthropic tools, MCP tools.

Each exporter takes a :class:`~scope_tool.Registry` (or definitions) and returns plain JSON
values (dicts and lists) a provider SDK accepts as they are. The input schema is the contract's
canonical schema, the one ``Contract.prepare`` enforces, so what a model is shown and what is
admitted never disagree.

OpenAI's strict mode (constrained decoding) accepts only a subset of JSON Schema.
:func:`openai_strict_problems` says exactly what in a definition breaks it (tool, JSON pointer,
rule); :func:`openai_tools` with ``strict=True`` refuses to export such a registry
(:class:`~scope_tool.agents.errors.StrictModeError`) rather than send a schema the API rejects,
and with ``strict="auto"`` marks each tool strict only when it has no problems.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import Any, Final, Literal

from scope_tool import Definition, Registry
from scope_tool.agents.errors import StrictModeError, StrictProblem

__all__ = [
    "StrictProblem",
    "anthropic_tools",
    "mcp_tools",
    "openai_strict_problems",
    "openai_tools",
]

# OpenAI's documented strict-mode subset (Structured Outputs, "Supported schemas").
_UNSUPPORTED_KEYWORDS: Final = (
    "allOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "patternProperties",
    "unevaluatedProperties",
    "unevaluatedItems",
    "propertyNames",
    "minProperties",
    "maxProperties",
    "contains",
    "minContains",
    "maxContains",
    "uniqueItems",
    "minLength",
    "maxLength",
    "default",
    "$anchor",
    "$dynamicRef",
    "$dynamicAnchor",
)
_STRICT_FORMATS: Final = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
_LOOKAROUND: Final = ("(?=", "(?!", "(?<=", "(?<!")
_TOP_LEVEL_DEFINITION: Final = re.compile(r"#/(\$defs|definitions)/[^/]+")
_TYPE_BEARING: Final = ("type", "$ref", "anyOf", "enum", "const")
_MAX_DEPTH: Final = 10
_MAX_PROPERTIES: Final = 5000
_NAMED: Final = ("properties", "$defs", "definitions")
_SINGLE: Final = ("items", "additionalProperties")
_LISTS: Final = ("anyOf", "allOf", "oneOf", "prefixItems")


def _definitions(source: Registry | Iterable[Definition]) -> list[Definition]:
    if isinstance(source, Registry):
        return source.definitions()
    definitions = list(source)
    for definition in definitions:
        if not isinstance(definition, Definition):
            raise TypeError(
                f"expected a Registry or Definitions, got a {type(definition).__name__}"
            )
        definition.validate()
    return definitions


def _schema(definition: Definition) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(definition.input_schema)
    return schema


def openai_strict_problems(source: Registry | Iterable[Definition]) -> list[StrictProblem]:
    """Everything in these definitions that OpenAI strict mode refuses (empty: all fine)."""
    problems: list[StrictProblem] = []
    for definition in _definitions(source):
        problems.extend(_strict_problems(definition.name, _schema(definition)))
    return problems


def openai_tools(
    source: Registry | Iterable[Definition],
    *,
    strict: bool | Literal["auto"] = False,
    api: Literal["chat", "responses"] = "chat",
) -> list[dict[str, Any]]:
    """The definitions as OpenAI function tools.

    Args:
        source: A registry (its definitions, sorted by name) or definitions.
        strict: ``True`` marks every tool strict and raises if any cannot be; ``"auto"`` marks
            strict exactly the tools without problems; ``False`` marks none.
        api: ``"chat"`` (Chat Completions: ``{"type":"function","function":{...}}``) or
            ``"responses"`` (Responses API: the function's members at the top level).

    Raises:
        StrictModeError: ``strict=True`` and some schema breaks strict mode (all problems are
            listed, not just the first).
        ValueError: ``api`` or ``strict`` is not one of the values above.
    """
    if api not in ("chat", "responses"):
        raise ValueError(f"api must be 'chat' or 'responses', got {api!r}")
    if strict not in (True, False, "auto"):
        raise ValueError(f"strict must be True, False or 'auto', got {strict!r}")
    definitions = _definitions(source)
    problems = {d.name: _strict_problems(d.name, _schema(d)) for d in definitions}
    if strict is True:
        found = [problem for definition in definitions for problem in problems[definition.name]]
        if found:
            raise StrictModeError(found)
    tools: list[dict[str, Any]] = []
    for definition in definitions:
        function = _tool_entry(definition, schema_key="parameters")
        function["strict"] = strict is True or (strict == "auto" and not problems[definition.name])
        if api == "chat":
            tools.append({"type": "function", "function": function})
        else:
            tools.append({"type": "function", **function})
    return tools


def anthropic_tools(source: Registry | Iterable[Definition]) -> list[dict[str, Any]]:
    """The definitions as Anthropic Messages API client tools (``name``, ``description``,
    ``input_schema``)."""
    return [_tool_entry(d, schema_key="input_schema") for d in _definitions(source)]


def mcp_tools(source: Registry | Iterable[Definition]) -> list[dict[str, Any]]:
    """The definitions as MCP ``Tool`` objects (``tools/list`` result items)."""
    return [_tool_entry(d, schema_key="inputSchema") for d in _definitions(source)]


def _tool_entry(definition: Definition, *, schema_key: str) -> dict[str, Any]:
    """``name``, ``description`` (when there is one) and the schema under each API's own key."""
    entry: dict[str, Any] = {"name": definition.name}
    if definition.description:
        entry["description"] = definition.description
    entry[schema_key] = _schema(definition)
    return entry


# --- the strict-mode check -----------------------------------------------------------------


def _strict_problems(tool: str, schema: dict[str, Any]) -> list[StrictProblem]:
    problems: list[StrictProblem] = []

    def report(pointer: str, rule: str) -> None:
        problems.append(StrictProblem(tool=tool, pointer=pointer, rule=rule))

    if schema.get("type") != "object" or "anyOf" in schema:
        report("", 'the root must be a plain object schema ("type": "object", no anyOf)')
    properties_seen = 0
    deepest = 0
    for pointer, node, depth in _walk(schema):
        deepest = max(deepest, depth)
        if not isinstance(node, dict) or not any(key in node for key in _TYPE_BEARING):
            if pointer and not pointer.endswith("/items"):  # an array's items: reported below
                report(pointer, "a schema needs a type (or $ref, anyOf, enum, const)")
            if not isinstance(node, dict):
                continue
        for keyword in _UNSUPPORTED_KEYWORDS:
            if keyword in node:
                report(f"{pointer}/{_escape(keyword)}", f"the keyword {keyword!r} is not supported")
        fmt = node.get("format")
        if isinstance(fmt, str) and fmt not in _STRICT_FORMATS:
            report(f"{pointer}/format", f"format {fmt!r} is not supported")
        pattern = node.get("pattern")
        if isinstance(pattern, str) and any(token in pattern for token in _LOOKAROUND):
            report(f"{pointer}/pattern", "lookaround in a pattern is not supported")
        ref = node.get("$ref")
        if isinstance(ref, str):
            if ref != "#" and not _TOP_LEVEL_DEFINITION.fullmatch(ref):
                report(f"{pointer}/$ref", f"$ref {ref!r} must be '#' or '#/$defs/NAME'")
            extra = sorted(set(node) - {"$ref", "description", "title"})
            if extra:
                report(pointer, f"$ref cannot have siblings ({', '.join(extra)})")
        types = node.get("type")
        type_list = types if isinstance(types, list) else [types]
        if "object" in type_list:
            properties = node.get("properties", {})
            if not isinstance(properties, dict):
                continue
            properties_seen += len(properties)
            if node.get("additionalProperties") is not False:
                report(pointer, 'every object needs "additionalProperties": false')
            required = node.get("required", [])
            missing = [name for name in properties if name not in required]
            if missing:
                report(
                    pointer,
                    "every property must be required (make optional ones nullable instead):"
                    f" {', '.join(missing)}",
                )
        if "array" in type_list:
            items = node.get("items")
            if not (isinstance(items, dict) and any(key in items for key in _TYPE_BEARING)):
                report(pointer, "an array needs typed items")
    if deepest > _MAX_DEPTH:
        report("", f"nesting is {deepest} levels deep; strict mode allows {_MAX_DEPTH}")
    if properties_seen > _MAX_PROPERTIES:
        report("", f"{properties_seen} properties; strict mode allows {_MAX_PROPERTIES}")
    return problems


def _walk(node: Any, pointer: str = "", depth: int = 0) -> Iterator[tuple[str, Any, int]]:
    """Every subschema with its JSON pointer and its object-nesting depth."""
    yield pointer, node, depth
    if not isinstance(node, dict):
        return
    nested = depth + (1 if node.get("type") == "object" else 0)
    for keyword in _NAMED:
        members = node.get(keyword)
        if isinstance(members, dict):
            inner = nested if keyword == "properties" else depth
            for name, child in members.items():
                yield from _walk(child, f"{pointer}/{keyword}/{_escape(name)}", inner)
    for keyword in _SINGLE:
        child = node.get(keyword)
        if isinstance(child, dict | bool) and not (
            keyword == "additionalProperties" and child is False
        ):
            yield from _walk(child, f"{pointer}/{keyword}", nested)
    for keyword in _LISTS:
        children = node.get(keyword)
        if isinstance(children, list):
            for index, child in enumerate(children):
                yield from _walk(child, f"{pointer}/{keyword}/{index}", depth)


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")
