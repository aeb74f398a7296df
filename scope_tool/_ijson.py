"""STUB (interface fixed, body to be written): strict RFC 7493 (I-JSON) handling."""

from __future__ import annotations

from typing import Any

MAX_INPUT_BYTES = 1 << 20


class IJSONError(ValueError):
    """The text is not one valid I-JSON document; the message says why."""


def check_ijson(data: bytes) -> None:
    """Raise IJSONError unless ``data`` is exactly one I-JSON document."""
    raise NotImplementedError


def parse_ijson(data: bytes) -> Any:
    """check_ijson, then return the value with numbers kept exact (int / Decimal)."""
    raise NotImplementedError


def is_blank(data: bytes | str) -> bool:
    """True when ``data`` holds only Go's unicode.IsSpace characters (or nothing)."""
    raise NotImplementedError


def canonical_json(data: bytes) -> bytes:
    """Minified JSON, object keys sorted by UTF-16 code units, number lexemes kept."""
    raise NotImplementedError
