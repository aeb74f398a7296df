"""STUB (interface fixed, body to be written): JSON Schema 2020-12 documents."""

from __future__ import annotations

from typing import Any

MAX_SCHEMA_BYTES = 1 << 20


class SchemaError(ValueError):
    """``jsonschema: invalid schema: <detail>``: the document cannot be a schema."""


class SchemaValidationError(ValueError):
    """A value does not satisfy a schema.

    Text is ``jsonschema: value must be one valid RFC 7493 JSON document`` or
    ``jsonschema: validate value: <detail>``.
    """


class CompiledSchema:
    """An immutable compiled schema that owns its canonical JSON bytes."""

    @classmethod
    def parse(cls, raw: bytes) -> CompiledSchema:
        """Check size/I-JSON, canonicalise, compile (2020-12, format asserted, no remote $ref)."""
        raise NotImplementedError

    @property
    def canonical(self) -> bytes:
        """The canonical JSON of the schema."""
        raise NotImplementedError

    def validate(self, instance: bytes) -> None:
        """Raise SchemaValidationError unless ``instance`` is I-JSON and satisfies the schema."""
        raise NotImplementedError

    def validate_value(self, value: Any) -> None:
        """Validate an already parsed value (numbers as int/Decimal)."""
        raise NotImplementedError
