"""The model-visible description of a tool: a :class:`Definition`."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from scope_tool._ijson import IJSONError, parse_ijson
from scope_tool._json_form import closed_object_model, json_text_bytes, known_members
from scope_tool.errors import InvalidDefinitionError

__all__ = ["Definition"]

NAME_PATTERN: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""Tool names: what every major model provider accepts (matched with ``fullmatch``)."""

_MEMBERS: Final = frozenset({"name", "description", "input_schema"})


def _schema_bytes(input_schema: object) -> bytes:
    raw = json_text_bytes(input_schema)
    if raw is not None:
        return raw
    if isinstance(input_schema, Mapping):
        try:
            text = json.dumps(
                input_schema, ensure_ascii=False, allow_nan=False, separators=(",", ":")
            )
        except (TypeError, ValueError) as exc:
            raise InvalidDefinitionError(f"input schema is not JSON: {exc}") from exc
        return text.encode("utf-8", "surrogatepass")
    raise TypeError(
        "Definition.input_schema must be JSON bytes, str or a Mapping, "
        f"not {type(input_schema).__name__}"
    )


@dataclass(frozen=True, slots=True, init=False)
class Definition:
    """What a model sees of a tool: its name, description and JSON Schema for arguments.

    A definition is a plain immutable value; :meth:`validate` checks the protocol shape
    (``bind`` and ``Guard`` call it). ``input_schema`` accepts JSON ``bytes``, ``str`` or a
    ``Mapping`` and is always stored as ``bytes``, exactly as given for bytes and str.

    Attributes:
        name: Matches ``^[A-Za-z0-9_-]{1,64}$``.
        description: Free text for the model; may be empty.
        input_schema: The JSON Schema of the arguments; its root is an object schema.
    """

    name: str
    description: str
    input_schema: bytes

    def __init__(
        self,
        name: str,
        description: str = "",
        input_schema: bytes | str | Mapping[str, Any] = b"",
    ) -> None:
        for member, value in (("name", name), ("description", description)):
            if not isinstance(value, str):
                raise TypeError(f"Definition.{member} must be a str, not {type(value).__name__}")
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "description", description)
        object.__setattr__(self, "input_schema", _schema_bytes(input_schema))

    def validate(self) -> None:
        """Check the protocol shape, in Go's order: name, description, schema.

        The schema is only checked to be an I-JSON object whose ``"type"`` member is the
        string ``"object"``; compiling it is ``bind``'s job.

        Raises:
            InvalidDefinitionError: with a detail naming the broken rule.
        """
        if NAME_PATTERN.fullmatch(self.name) is None:
            raise InvalidDefinitionError(
                f"name {json.dumps(self.name)} must match ^[A-Za-z0-9_-]{{1,64}}$"
            )
        try:
            self.description.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidDefinitionError("description is not valid UTF-8 text") from None
        if not self.input_schema:
            raise InvalidDefinitionError("input schema is empty")
        try:
            schema = parse_ijson(self.input_schema)
        except IJSONError as exc:
            raise InvalidDefinitionError(f"input schema is not valid RFC 7493 JSON: {exc}") from exc
        if not isinstance(schema, dict):
            raise InvalidDefinitionError("input schema must be a JSON object")
        if schema.get("type") != "object":
            raise InvalidDefinitionError('input schema "type" must be the string "object"')

    def to_json(self) -> bytes:
        """``{"name":…,"description":…,"input_schema":…}``; the schema bytes are spliced in
        exactly, and an empty description is omitted (Go's ``omitempty``).

        Raises:
            InvalidDefinitionError: the definition is not valid (it is checked first).
        """
        self.validate()
        parts = [b'{"name":', _json_string(self.name)]
        if self.description:
            parts += [b',"description":', _json_string(self.description)]
        parts += [b',"input_schema":', self.input_schema, b"}"]
        return b"".join(parts)

    @classmethod
    def from_json(cls, data: bytes | str) -> Definition:
        """Decode strictly and atomically: the JSON must be one I-JSON object with exactly
        the members ``name`` (string), optional ``description`` (string) and
        ``input_schema``, and the result must validate.

        Raises:
            InvalidDefinitionError: the text or the definition it holds is malformed.
        """
        members = known_members(
            data, allowed=_MEMBERS, what="definition JSON", error=InvalidDefinitionError
        )
        if "name" not in members:
            raise InvalidDefinitionError('definition JSON: missing member "name"')
        if "input_schema" not in members:
            raise InvalidDefinitionError('definition JSON: missing member "input_schema"')
        name = _string_member(members, "name")
        description = _string_member(members, "description") if "description" in members else ""
        definition = cls(name=name, description=description, input_schema=members["input_schema"])
        definition.validate()
        return definition

    @classmethod
    def json_schema_model(cls) -> dict[str, Any]:
        """The JSON Schema (2020-12) of a definition's JSON form, as a fresh dict."""
        input_schema = {
            "type": "object",
            "properties": {"type": {"const": "object"}},
            "required": ["type"],
        }
        return closed_object_model(
            "Definition",
            {
                "name": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"},
                "description": {"type": "string"},
                "input_schema": input_schema,
            },
            required=("name", "input_schema"),
        )


def _json_string(text: str) -> bytes:
    return json.dumps(text, ensure_ascii=False).encode("utf-8", "surrogatepass")


def _string_member(members: Mapping[str, bytes], key: str) -> str:
    value = parse_ijson(members[key])
    if not isinstance(value, str):
        raise InvalidDefinitionError(f"definition JSON: member {json.dumps(key)} must be a string")
    return value
