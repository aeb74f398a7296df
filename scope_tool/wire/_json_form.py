"""A frozen dataclass's JSON form: its fields in order, each converted by one rule.

The values a caller sees of a call (status, outcome, refusals, history) each own their JSON:
the one documented shape of ``--json``, the inbox API and webhooks. That shape is the value's
fields, in declaration order, converted the same way everywhere, so :func:`json_members` reads
it off the dataclass instead of each value listing ``"name": self.name`` for every field:

* ``None`` stays ``None``; ``str``, ``int``, ``float`` and ``bool`` are kept as they are;
* an enum becomes its value (``Phase.FAILED`` -> ``"FAILED"``);
* raw JSON kept as ``bytes`` becomes the JSON value it encodes (:func:`json_value`);
* a time becomes ISO 8601 in UTC with ``Z`` and milliseconds (:func:`iso_time`);
* a tuple or list becomes a list, each element converted by these rules;
* a value with its own ``to_json_dict()`` becomes what that returns.

What differs from the rules is said where the shape is defined: a keyword names the member and
gives its JSON (``principal=principal_json(self.principal)``), and ``leave_out`` names the fields
that are not part of the shape (``CallStatus.route``). A member of any other type raises
``TypeError``, so a field added later cannot slip into the JSON unconverted.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from datetime import UTC, datetime
from enum import Enum
from functools import cache
from typing import TYPE_CHECKING, Any

from scope_tool.wire._prompt import json_value

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = ["iso_time", "json_members"]


def json_members(
    value: DataclassInstance, /, *, leave_out: Collection[str] = (), **converted: object
) -> dict[str, Any]:
    """``value``'s fields as a JSON object, in declaration order, by the module's rules.

    Args:
        value: a dataclass instance (the values of :mod:`scope_tool.wire._status`, ...).
        leave_out: fields that are not part of the JSON shape.
        **converted: members whose JSON is not the rules' (each already converted).

    Raises:
        TypeError: a keyword or ``leave_out`` names no field of ``value``, or a member has
            no JSON form by the rules and no keyword gives one.
    """
    names = _field_names(type(value))
    unknown = sorted({*converted, *leave_out}.difference(names))
    if unknown:
        raise TypeError(f"{type(value).__name__} has no field {', '.join(unknown)}")
    return {
        name: (
            converted[name]
            if name in converted
            else _member_json(getattr(value, name), type(value), name)
        )
        for name in names
        if name not in leave_out
    }


def iso_time(moment: datetime | None) -> str | None:
    """ISO 8601 in UTC with ``Z`` and milliseconds (naive times are taken as UTC)."""
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    text = moment.astimezone(UTC).isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z")


@cache
def _field_names(cls: type[DataclassInstance]) -> tuple[str, ...]:
    return tuple(each.name for each in dataclasses.fields(cls))


def _member_json(member: object, owner: type, name: str) -> Any:
    # Enum before str: a StrEnum member is a str, and its JSON is its plain value.
    if member is None:
        return None
    if isinstance(member, Enum):
        return member.value
    if isinstance(member, str | int | float):  # bool is an int
        return member
    if isinstance(member, bytes):
        return json_value(member)
    if isinstance(member, datetime):
        return iso_time(member)
    if isinstance(member, tuple | list):
        return [_member_json(each, owner, name) for each in member]
    to_json_dict = getattr(member, "to_json_dict", None)
    if callable(to_json_dict):
        return to_json_dict()
    raise TypeError(
        f"{owner.__name__}.{name}: {type(member).__name__} has no JSON form;"
        f" give it as json_members(..., {name}=...)"
    )
