"""A fast exact engine: the common 2020-12 keywords compiled to closures, numbers exact.

python-jsonschema spends ~10 µs per keyword application (it evolves a validator, builds a
resource and, for every failed ``anyOf`` branch, a ``ValidationError`` with a ``repr`` of the
value). A 1 MiB answer of 200 000 decimals against ``items: {anyOf: [...]}`` took seconds, and
answers are checked in workflow code, which must yield within 2 s. The Rust engine is fast
but exact only for some numbers, and its exact ``multipleOf`` is slow too.

This engine compiles each subschema once into a closure that returns ``None`` or the first
failure, with the same number semantics as ``_schema_exact`` (``int``/``Decimal``; ``1.0`` is
an integer; ``multipleOf`` never rounds; ``pattern``, ``patternProperties`` and ``format``
mean what the Rust engine means, ECMA 262 regexes, see ``_schema_patterns``). It takes
only schemas whose every keyword it implements and whose evaluation graph is acyclic
(``_schema_graph``); everything else stays with the exact engine. The conformance suite runs
through it too (``tests/protocol/test_schema_fast.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import localcontext
from typing import Any, Final

from scope_tool._schema_fast_checks import (
    _ACCEPT,
    _REFUSE,
    EXACT_CONTEXT,
    Failure,
    FastCheck,
    _conjunction,
    charge,
)
from scope_tool._schema_fast_keywords import MAKERS
from scope_tool._schema_limits import Meter

__all__ = ["FastCheck", "charge", "compile_fast"]

_DIALECTS: Final = frozenset(
    {
        "https://json-schema.org/draft/2020-12/schema",
        "https://json-schema.org/draft/2020-12/schema#",
    }
)
_SUPPORTED: Final = frozenset(
    {
        "$ref", "type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum",
        "minimum", "exclusiveMinimum", "maxLength", "minLength", "pattern", "format",
        "items", "prefixItems", "maxItems", "minItems", "uniqueItems", "properties",
        "patternProperties", "additionalProperties", "required", "dependentRequired",
        "maxProperties", "minProperties", "propertyNames", "allOf", "anyOf", "oneOf", "not",
        "if", "then", "else",
    }
)  # fmt: skip
# Keywords python-jsonschema evaluates in 2020-12; a schema using one not supported above
# is left to the exact engine. Everything else (annotations, $defs, unknown words) is inert.
_EVALUATED: Final = _SUPPORTED | {
    "contains", "minContains", "maxContains", "dependentSchemas", "unevaluatedItems",
    "unevaluatedProperties", "$dynamicRef", "$recursiveRef", "dependencies", "additionalItems",
}  # fmt: skip


class _Unsupported(Exception):
    pass


def compile_fast(schema: Any, ref_targets: Mapping[int, Any]) -> FastCheck | None:
    """The compiled check for ``schema``, or None when it uses something left to the exact
    engine. Call only for a schema whose evaluation graph is acyclic (``Shape.bounded``)."""
    compiled: dict[int, FastCheck] = {}
    try:
        root = _node(schema, ref_targets, compiled)
    except _Unsupported:
        return None

    def valid(value: Any, meter: Meter) -> bool:
        with localcontext(EXACT_CONTEXT):
            return root.valid(value, meter)

    def explain(value: Any, meter: Meter) -> Failure | None:
        with localcontext(EXACT_CONTEXT):
            return root.explain(value, meter)

    return FastCheck(valid, explain, root.weight)


# --- compiling -----------------------------------------------------------------------------


def _node(schema: Any, refs: Mapping[int, Any], compiled: dict[int, FastCheck]) -> FastCheck:
    if schema is True:
        return _ACCEPT
    if schema is False:
        return _REFUSE
    if not isinstance(schema, dict):
        raise _Unsupported
    known = compiled.get(id(schema))
    if known is not None:
        return known
    declared = schema.get("$schema")
    if declared is not None and declared not in _DIALECTS:
        raise _Unsupported
    if any(word in _EVALUATED and word not in _SUPPORTED for word in schema):
        raise _Unsupported

    def sub(child: Any) -> FastCheck:
        return _node(child, refs, compiled)

    checks: list[FastCheck] = []
    for word in schema:
        if word == "$ref":
            target = sub(refs[id(schema)])
            checks.append(FastCheck(target.valid, target.explain, 1 + target.weight))
            continue
        maker = MAKERS.get(word)
        if maker is not None:
            made = maker(schema[word], schema, sub)
            if made is not None:
                checks.append(made)
    made = _conjunction(checks)
    compiled[id(schema)] = made
    return made
