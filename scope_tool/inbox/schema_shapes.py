"""Seeing through schema wrappers: local ``$ref``, ``allOf`` of one, and "X or null".

Generated schemas (pydantic's in particular) wrap the shape a form needs: a property is
``{"$ref": "#/$defs/Refund"}``, or ``{"anyOf": [{...}, {"type": "null"}]}`` for an optional
model, or ``{"allOf": [{"$ref": ...}], "description": ...}``. The form generator asks
:class:`SchemaResolver` for the plain schema underneath and whether ``null`` is also allowed.
Only references inside the same document are followed (never a remote one), and a cycle of
references stops after a bounded number of steps.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["SchemaResolver"]

_MAX_STEPS = 32
_KEPT_ON_RESOLVE = frozenset({"title", "description", "default"})
"""Annotations of a wrapper that win over its target's (the property's own title stays)."""
_IGNORABLE = frozenset({"$defs", "definitions", "$schema", "$id", "$comment", "examples"})
"""Keywords that do not constrain the value, so a wrapper carrying them still resolves."""


class SchemaResolver:
    """Resolves wrappers inside one schema document.

    Args:
        root: The whole schema, against which ``#/...`` references are resolved.
    """

    def __init__(self, root: Mapping[str, Any]) -> None:
        self._root = root

    def simplify(self, schema: Mapping[str, Any]) -> tuple[Mapping[str, Any], bool]:
        """Resolve ``$ref``, single ``allOf`` and "X or null" into (plain schema, nullable)."""
        nullable = False
        current: Mapping[str, Any] = schema
        for _ in range(_MAX_STEPS):
            outer = {k: v for k, v in current.items() if k in _KEPT_ON_RESOLVE}
            ref = current.get("$ref")
            if isinstance(ref, str) and not current.keys() - {"$ref", *outer, *_IGNORABLE}:
                target = self._resolve(ref)
                if target is None:
                    return current, nullable
                current = {**target, **outer}
                continue
            all_of = current.get("allOf")
            if (
                isinstance(all_of, list)
                and len(all_of) == 1
                and isinstance(all_of[0], dict)
                and not current.keys() - {"allOf", *outer, *_IGNORABLE}
            ):
                current = {**all_of[0], **outer}
                continue
            for keyword in ("anyOf", "oneOf"):
                branches = current.get(keyword)
                if not isinstance(branches, list) or len(branches) != 2:
                    continue
                others = [b for b in branches if b != {"type": "null"}]
                if (
                    len(others) == 1
                    and isinstance(others[0], dict)
                    and not current.keys() - {keyword, *outer, *_IGNORABLE}
                ):
                    nullable = True
                    current = {**others[0], **outer}
                    break
            else:
                kind = current.get("type")
                if isinstance(kind, list) and "null" in kind and len(kind) == 2:
                    nullable = True
                    current = {**current, "type": next(k for k in kind if k != "null")}
                return current, nullable
        return current, nullable

    def _resolve(self, ref: str) -> Mapping[str, Any] | None:
        if not ref.startswith("#"):
            return None
        node: object = self._root
        for part in ref[1:].split("/")[1:]:
            key = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, dict) or key not in node:
                return None
            node = node[key]
        return node if isinstance(node, dict) else None
