"""A protocol value's JSON form: read as a closed object, described by a JSON Schema.

``Definition``, ``Output``, ``InputRequest`` and ``Result`` each have a JSON form that is one
object with a fixed set of members. :func:`known_members` reads it (refusing unknown members the
same way for all), and :func:`closed_object_model` builds the schema their
``json_schema_model`` publishes for it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from scope_tool._ijson import IJSONError, raw_object_members

__all__ = ["closed_object_model", "json_text_bytes", "known_members"]


def known_members(
    data: str | bytes, *, allowed: Collection[str], what: str, error: Callable[[str], Exception]
) -> dict[str, bytes]:
    """:func:`raw_object_members` of a value's JSON form, refusing any member not ``allowed``.

    The values' ``from_json`` refuse malformed text the same way through it: ``error`` is
    raised with ``what`` and the problem (the first unknown member in sorted order), the
    :class:`IJSONError` chained.
    """
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    try:
        members = raw_object_members(raw)
    except IJSONError as exc:
        raise error(f"{what}: {exc}") from exc
    for key in sorted(members):
        if key not in allowed:
            raise error(f"{what}: unknown member {json.dumps(key)}")
    return members


def closed_object_model(
    title: str, properties: Mapping[str, Any], *, required: Sequence[str] = ()
) -> dict[str, Any]:
    """The JSON Schema (2020-12) of an object with exactly these ``properties``, as a fresh dict."""
    model: dict[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": title,
        "type": "object",
        "properties": dict(properties),
    }
    if required:
        model["required"] = list(required)
    model["additionalProperties"] = False
    return model


def json_text_bytes(value: object) -> bytes | None:
    """JSON text given as ``bytes``, a bytes-like view or ``str``, as bytes; else ``None``.

    A ``str`` keeps its lone surrogates (``surrogatepass``), so the I-JSON or schema check that
    follows reports them with the field's name, rather than the encoder failing first.
    """
    if isinstance(value, bytes):
        return value
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    return None
