"""The shape of a compiled schema's evaluation: is it recursive, and how deep can it go?

Evaluation walks from a subschema to the subschemas its keywords apply (``items``, ``anyOf``,
``properties`` ...) and to the targets of its ``$ref``. If that graph has no cycle, one
validation applies at most :attr:`Shape.depth` nested keywords *whatever the value*, so no
engine can reach the evaluation limit and every engine gives the same verdict. A cycle (or a
``$dynamicRef``, whose target depends on the path) makes the schema *recursive*: only the
metered exact engine validates against it (see ``_schema_limits``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from scope_tool._schema_limits import MAX_EVALUATION_DEPTH

__all__ = ["Shape", "applied_subschemas", "shape_of"]

_ONE: Final = (
    "additionalItems",
    "additionalProperties",
    "contains",
    "else",
    "if",
    "items",
    "not",
    "propertyNames",
    "then",
    "unevaluatedItems",
    "unevaluatedProperties",
)
_MANY: Final = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
_NAMED: Final = ("properties", "patternProperties", "dependentSchemas", "dependencies")


@dataclass(frozen=True, slots=True, kw_only=True)
class Shape:
    """``recursive``: evaluation can re-enter a subschema; ``depth``: most nested keyword
    applications (meaningful only when not recursive); ``ref_targets``: each ``$ref``'s
    resolved target by ``id()`` of the subschema holding it."""

    recursive: bool
    depth: int
    ref_targets: Mapping[int, Any]

    @property
    def bounded(self) -> bool:
        """Whether every validation stays within MAX_EVALUATION_DEPTH, whatever the value."""
        return not self.recursive and self.depth <= MAX_EVALUATION_DEPTH


def applied_subschemas(node: Mapping[str, Any]) -> Iterator[Any]:
    """The subschemas ``node``'s keywords apply to the value or its parts (not ``$defs``)."""
    for keyword in _ONE:
        child = node.get(keyword)
        if isinstance(child, dict | bool):
            yield child
    for keyword in _MANY:
        children = node.get(keyword)
        if isinstance(children, list):
            yield from (child for child in children if isinstance(child, dict | bool))
    for keyword in _NAMED:
        children = node.get(keyword)
        if isinstance(children, dict):
            yield from (child for child in children.values() if isinstance(child, dict | bool))


def shape_of(schema: Any, ref_targets: Mapping[int, Any]) -> Shape:
    """Walk the evaluation graph from ``schema`` iteratively (no recursion: schemas are untrusted).

    ``ref_targets`` maps ``id(subschema)`` to the resolved target of its ``$ref``.
    """
    depth: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[Any, bool]] = [(schema, False)]
    while stack:
        node, finished = stack.pop()
        if not isinstance(node, dict) or not node:
            continue
        key = id(node)
        if finished:
            on_path.discard(key)
            below = [depth.get(id(child), 0) for child in _edges(node, ref_targets)]
            depth[key] = 1 + max(below, default=0)
            continue
        if key in depth:
            continue
        if key in on_path or "$dynamicRef" in node or "$recursiveRef" in node:
            return Shape(recursive=True, depth=0, ref_targets=ref_targets)
        on_path.add(key)
        stack.append((node, True))
        for child in _edges(node, ref_targets):
            if isinstance(child, dict) and id(child) in on_path:
                return Shape(recursive=True, depth=0, ref_targets=ref_targets)
            stack.append((child, False))
    return Shape(recursive=False, depth=depth.get(id(schema), 0), ref_targets=ref_targets)


def _edges(node: Mapping[str, Any], ref_targets: Mapping[int, Any]) -> Iterator[Any]:
    yield from applied_subschemas(node)
    target = ref_targets.get(id(node))
    if target is not None:
        yield target
