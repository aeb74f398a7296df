"""A fast exact engine: the common 2020-12 keywords compiled to closures, numbers exact.

python-jsonschema spends ~10 µs per keyword application (it evolves a validator, builds a
resource and, for every failed ``anyOf`` branch, a ``ValidationError`` with a ``repr`` of the
value). A 1 MiB answer of 200 000 decimals against ``items: {anyOf: [...]}`` took seconds, and
answers are checked in workflow code, which must yield within 2 s. The Rust engine is fast
but exact only for some numbers, and its exact ``multipleOf`` is slow too.

This engine compiles each subschema once into a closure that returns ``None`` or the first
failure, with the same number semantics as ``_schema_exact`` (``int``/``Decimal``; ``1.0`` is
an integer; ``multipleOf`` never rounds; ``pattern``/``format`` mean what the Rust engine
means; ``patternProperties`` what Python's ``re`` means, as in python-jsonschema). It takes
only schemas whose every keyword it implements and whose evaluation graph is acyclic
(``_schema_graph``); everything else stays with the exact engine. The conformance suite runs
through it too (``tests/protocol/test_schema_fast.py``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sized
from decimal import (
    MAX_EMAX,
    MIN_EMIN,
    Clamped,
    Context,
    Decimal,
    DecimalException,
    DivisionByZero,
    Inexact,
    InvalidOperation,
    Overflow,
    Rounded,
    Subnormal,
    Underflow,
    localcontext,
)
from itertools import repeat, takewhile
from typing import Any, Final

from scope_tool._ijson import JSONDecimal
from scope_tool._schema_exact import FORMAT_CHECKER, is_multiple, rust_pattern
from scope_tool._schema_limits import Meter, OverBudget

__all__ = ["FastCheck", "charge", "compile_fast"]

Failure = tuple[list[str], str]
Valid = Callable[[Any, Meter], bool]
Explain = Callable[[Any, Meter], Failure | None]


class FastCheck:
    """A compiled schema: ``valid`` decides, ``explain`` (run once, on refusal) says why."""

    __slots__ = ("explain", "valid", "weight")

    def __init__(self, valid: Valid, explain: Explain, weight: int) -> None:
        self.valid = valid
        self.explain = explain
        self.weight = weight  # steps one application costs, not counting nested containers


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
_MAX_MESSAGE: Final = 400
_MAX_WEIGHT: Final = 1 << 40


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
        with localcontext(_EXACT_CONTEXT):
            return root.valid(value, meter)

    def explain(value: Any, meter: Meter) -> Failure | None:
        with localcontext(_EXACT_CONTEXT):
            return root.explain(value, meter)

    return FastCheck(valid, explain, root.weight)


def charge(meter: Meter, steps: int) -> None:
    """Spend ``steps`` of the meter's budget before doing the work; OverBudget if it cannot."""
    meter.steps += steps
    if meter.max_steps is not None and meter.steps > meter.max_steps:
        raise OverBudget


def _show(value: Any) -> str:
    if isinstance(value, str):
        text = '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    elif value is True or value is False:
        text = "true" if value else "false"
    elif value is None:
        text = "null"
    elif isinstance(value, int | Decimal):
        text = str(value)
    else:
        text = "an array" if isinstance(value, list) else "an object"
    return text if len(text) <= _MAX_MESSAGE else text[:_MAX_MESSAGE] + "..."


# --- types and values ----------------------------------------------------------------------


def _is_integer(value: Any, _meter: object = None) -> bool:
    if type(value) is int:
        return True
    if type(value) not in _DECIMALS and not isinstance(value, Decimal):
        return False
    try:
        return not value % 1  # exact under _EXACT_CONTEXT, or a signal is raised
    except DecimalException:  # too many digits, or beyond the exponent range: exact, slower
        return is_multiple(value, 1)


_DECIMALS: Final = frozenset({Decimal, JSONDecimal})
_NUMBERS: Final = frozenset({int, Decimal, JSONDecimal})


def _is_number(value: Any, _meter: object = None) -> bool:
    return type(value) in _NUMBERS or isinstance(value, Decimal)


_TYPES: Final[dict[str, Callable[..., bool]]] = {
    "null": lambda value, _meter=None: value is None,
    "boolean": lambda value, _meter=None: value is True or value is False,
    "integer": _is_integer,
    "number": _is_number,
    "string": lambda value, _meter=None: type(value) is str,
    "array": lambda value, _meter=None: type(value) is list,
    "object": lambda value, _meter=None: type(value) is dict,
}


def _key(value: Any) -> Any:
    """A hashable key equal for equal JSON values (1 == 1.0, true != 1, key order ignored)."""
    if value is True or value is False:
        return ("b", value)
    if type(value) is int or isinstance(value, Decimal):
        return ("n", value)  # int and Decimal compare and hash by value
    if type(value) is str:
        return ("s", value)
    if value is None:
        return ("z",)
    if type(value) is list:
        return ("l", tuple(_key(item) for item in value))
    return ("o", frozenset((name, _key(item)) for name, item in value.items()))


def _multiple(value: Any, divisor: Any) -> bool:
    if type(value) is int and type(divisor) is int:
        return value % divisor == 0
    try:
        return not value % divisor  # exact under _EXACT_CONTEXT, or a signal is raised
    except DecimalException:
        return is_multiple(value, divisor)


# Decimal arithmetic in the fast engine runs under this context: every signal that could mean
# a rounded or flushed result (1e-1000030 % 0.01 underflows to 0 under the default context)
# raises instead, and the exact integer routine answers. Set once per check, never per number.
_EXACT_CONTEXT: Final = Context(
    prec=400,
    Emin=MIN_EMIN,
    Emax=MAX_EMAX,
    traps=[InvalidOperation, Inexact, Rounded, Subnormal, Underflow, Overflow, Clamped,
           DivisionByZero],
)  # fmt: skip


# --- compiling -----------------------------------------------------------------------------

_ACCEPT: Final = FastCheck(lambda _value, _meter: True, lambda _value, _meter: None, 0)
_REFUSE: Final = FastCheck(
    lambda _value, _meter: False,
    lambda value, _meter: ([], f"False schema does not allow {_show(value)}"),
    0,
)


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
        maker = _MAKERS.get(word)
        if maker is not None:
            made = maker(schema[word], schema, sub)
            if made is not None:
                checks.append(made)
    made = _conjunction(checks)
    compiled[id(schema)] = made
    return made


def _conjunction(checks: list[FastCheck]) -> FastCheck:
    weight = min(sum(check.weight for check in checks), _MAX_WEIGHT)
    if not checks:
        return FastCheck(_ACCEPT.valid, _ACCEPT.explain, weight)
    if len(checks) == 1:
        return checks[0]
    tests = tuple(check.valid for check in checks)
    if len(tests) == 2:
        first, second = tests

        def valid(value: Any, meter: Meter) -> bool:
            return first(value, meter) and second(value, meter)

    else:

        def valid(value: Any, meter: Meter) -> bool:
            for test in tests:  # noqa: SIM110 - a plain loop is faster than all(<genexpr>)
                if not test(value, meter):
                    return False
            return True

    def explain(value: Any, meter: Meter) -> Failure | None:
        for check in checks:
            failure = check.explain(value, meter)
            if failure is not None:
                return failure
        return None

    return FastCheck(valid, explain, weight)


Sub = Callable[[Any], FastCheck]
Maker = Callable[[Any, dict[str, Any], Sub], FastCheck | None]


def _leaf(test: Callable[..., bool], message: Callable[[Any], str]) -> FastCheck:
    """A check of the value alone (no subschema): one step. ``test`` takes an optional
    second argument (the meter, ignored) so it is called directly, without a wrapper."""

    def explain(value: Any, _meter: Meter) -> Failure | None:
        return None if test(value) else ([], message(value))

    return FastCheck(test, explain, 1)


def _type(types: Any, _schema: dict[str, Any], _sub: Sub) -> FastCheck:
    names = [types] if isinstance(types, str) else list(types)
    tests = tuple(_TYPES[name] for name in names)
    shown = ", ".join(repr(name) for name in names)
    if len(tests) == 1:
        test = tests[0]
    else:

        def test(value: Any, _meter: object = None) -> bool:
            return any(each(value) for each in tests)

    return _leaf(test, lambda value: f"{_show(value)} is not of type {shown}")


def _enum(options: Any, _schema: dict[str, Any], _sub: Sub) -> FastCheck:
    keys = frozenset(_key(option) for option in options)
    return _leaf(
        lambda value, _meter=None: _key(value) in keys,
        lambda value: f"{_show(value)} is not one of the enumerated values",
    )


def _const(constant: Any, _schema: dict[str, Any], _sub: Sub) -> FastCheck:
    key = _key(constant)
    return _leaf(
        lambda value, _meter=None: _key(value) == key,
        lambda _value: f"{_show(constant)} was expected",
    )


def _numeric(test: Callable[[Any, Any], bool], wording: str) -> Maker:
    def make(bound: Any, _schema: dict[str, Any], _sub: Sub) -> FastCheck:
        return _leaf(
            lambda value, _meter=None: not _is_number(value) or test(value, bound),
            lambda value: f"{_show(value)} {wording} {_show(bound)}",
        )

    return make


def _length(test: Callable[[int, Any], bool], kind: type[Sized], wording: str) -> Maker:
    def make(limit: Any, _schema: dict[str, Any], _sub: Sub) -> FastCheck:
        def within(value: Any, _meter: object = None) -> bool:
            return not isinstance(value, kind) or test(len(value), limit)

        return _leaf(within, lambda value: f"{_show(value)} {wording} {_show(limit)}")

    return make


def _pattern(pattern: Any, _schema: dict[str, Any], _sub: Sub) -> FastCheck:
    rust = rust_pattern(pattern)
    return _leaf(
        lambda value, _meter=None: type(value) is not str or bool(rust.is_valid(value)),
        lambda value: f"{_show(value)} does not match {_show(pattern)}",
    )


def _format(name: Any, _schema: dict[str, Any], _sub: Sub) -> FastCheck:
    return _leaf(
        lambda value, _meter=None: bool(FORMAT_CHECKER.conforms(value, name)),
        lambda value: f"{_show(value)} is not a {_show(name)}",
    )


def _unique(unique: Any, _schema: dict[str, Any], _sub: Sub) -> FastCheck | None:
    if not unique:
        return None
    return _leaf(
        lambda value, _meter=None: (
            type(value) is not list or len({_key(item) for item in value}) == len(value)
        ),
        lambda value: f"{_show(value)} has non-unique elements",
    )


def _required(names: Any, _schema: dict[str, Any], _sub: Sub) -> FastCheck:
    def missing(value: Any) -> Any:
        if type(value) is dict:
            for name in names:
                if name not in value:
                    return name
        return None

    return _leaf(
        lambda value, _meter=None: missing(value) is None,
        lambda value: f"{_show(missing(value))} is a required property",
    )


def _dependent_required(dependencies: Any, _schema: dict[str, Any], _sub: Sub) -> FastCheck:
    def missing(value: Any) -> tuple[str, str] | None:
        if type(value) is dict:
            for name, needed in dependencies.items():
                if name in value:
                    for other in needed:
                        if other not in value:
                            return other, name
        return None

    def message(value: Any) -> str:
        other, name = missing(value) or ("", "")
        return f"{_show(other)} is a dependency of {_show(name)}"

    return _leaf(lambda value, _meter=None: missing(value) is None, message)


def _at(failure: Failure | None, part: str) -> Failure | None:
    if failure is not None:
        failure[0].append(part)
    return failure


def _over(
    pick: Callable[[Any], list[tuple[str, Any, FastCheck]]], kind: type, unit: int
) -> FastCheck:
    """A check of parts of the value: ``pick`` names (part, item, check) to apply."""

    def valid(value: Any, meter: Meter) -> bool:
        if type(value) is not kind:
            return True
        chosen = pick(value)
        charge(meter, unit + sum(check.weight for _, _, check in chosen))
        for _, item, check in chosen:  # noqa: SIM110 - faster than all(<genexpr>)
            if not check.valid(item, meter):
                return False
        return True

    def explain(value: Any, meter: Meter) -> Failure | None:
        if type(value) is not kind:
            return None
        for part, item, check in pick(value):
            failure = check.explain(item, meter)
            if failure is not None:
                return _at(failure, part)
        return None

    return FastCheck(valid, explain, 1)


def _items(items: Any, schema: dict[str, Any], sub: Sub) -> FastCheck:
    each = sub(items)
    start = len(schema.get("prefixItems", ()))
    if each is _ACCEPT:
        return _leaf(lambda _value, _meter=None: True, str)

    def valid(value: Any, meter: Meter) -> bool:
        if type(value) is not list:
            return True
        charge(meter, 1 + each.weight * max(len(value) - start, 0))
        rest = value[start:] if start else value
        # C-level iteration; the run of passing items gives the first failure's index.
        passing = len(list(takewhile(bool, map(each.valid, rest, repeat(meter, len(rest))))))
        if passing == len(rest):
            return True
        meter.failed_at[id(value), id(each)] = start + passing  # explain starts there
        return False

    def explain(value: Any, meter: Meter) -> Failure | None:
        if type(value) is not list:
            return None
        hint = meter.failed_at.get((id(value), id(each)))
        if hint is not None:
            failure = each.explain(value[hint], meter)
            if failure is not None:
                return _at(failure, str(hint))
        for index in range(start, len(value)):
            if not each.valid(value[index], meter):
                return _at(each.explain(value[index], meter), str(index))
        return None

    return FastCheck(valid, explain, 1)


def _prefix_items(prefix: Any, _schema: dict[str, Any], sub: Sub) -> FastCheck:
    checks = [sub(child) for child in prefix]
    return _over(
        lambda value: [
            (str(index), item, check)
            for index, (check, item) in enumerate(zip(checks, value, strict=False))
        ],
        list,
        1,
    )


def _properties(properties: Any, _schema: dict[str, Any], sub: Sub) -> FastCheck:
    checks = [(name, sub(child)) for name, child in properties.items()]
    return _over(
        lambda value: [(name, value[name], check) for name, check in checks if name in value],
        dict,
        1,
    )


def _pattern_properties(patterns: Any, _schema: dict[str, Any], sub: Sub) -> FastCheck:
    checks = [(re.compile(pattern), sub(child)) for pattern, child in patterns.items()]
    return _over(
        lambda value: [
            (name, item, check)
            for pattern, check in checks
            for name, item in value.items()
            if pattern.search(name)
        ],
        dict,
        1,
    )


def _additional(additional: Any, schema: dict[str, Any], sub: Sub) -> FastCheck:
    each = sub(additional)
    declared = schema.get("properties", {})
    joined = "|".join(schema.get("patternProperties", {}))
    patterns = re.compile(joined) if joined else None

    def extra(value: Any) -> list[tuple[str, Any, FastCheck]]:
        return [
            (name, item, each)
            for name, item in value.items()
            if name not in declared and not (patterns is not None and patterns.search(name))
        ]

    checked = _over(extra, dict, 1)
    if additional is not False:
        return checked

    def explain(value: Any, meter: Meter) -> Failure | None:
        names = [name for name, _, _ in extra(value)] if type(value) is dict else []
        if not names:
            return None
        shown = ", ".join(_show(name) for name in names[:5])
        return [], f"Additional properties are not allowed ({shown} unexpected)"

    return FastCheck(checked.valid, explain, 1)


def _property_names(names: Any, _schema: dict[str, Any], sub: Sub) -> FastCheck:
    each = sub(names)
    checked = _over(lambda value: [(name, name, each) for name in value], dict, 1)

    def explain(value: Any, meter: Meter) -> Failure | None:
        failure = checked.explain(value, meter)
        if failure is None:
            return None
        return [], f"property name {_show(failure[0][0])} is invalid: {failure[1]}"

    return FastCheck(checked.valid, explain, 1)


def _all_of(children: Any, _schema: dict[str, Any], sub: Sub) -> FastCheck:
    made = _conjunction([sub(child) for child in children])
    return FastCheck(made.valid, made.explain, 1 + made.weight)


def _branches(children: Any, sub: Sub) -> tuple[list[FastCheck], int]:
    checks = [sub(child) for child in children]
    return checks, min(1 + sum(check.weight for check in checks), _MAX_WEIGHT)


def _any_of(children: Any, _schema: dict[str, Any], sub: Sub) -> FastCheck:
    checks, weight = _branches(children, sub)
    tests = tuple(check.valid for check in checks)

    def valid(value: Any, meter: Meter) -> bool:
        for test in tests:  # noqa: SIM110 - faster than any(<genexpr>)
            if test(value, meter):
                return True
        return False

    def explain(value: Any, meter: Meter) -> Failure | None:
        if valid(value, meter):
            return None
        return [], f"{_show(value)} is not valid under any of the given schemas"

    return FastCheck(valid, explain, weight)


def _one_of(children: Any, _schema: dict[str, Any], sub: Sub) -> FastCheck:
    checks, weight = _branches(children, sub)

    def count(value: Any, meter: Meter) -> int:
        return sum(1 for check in checks if check.valid(value, meter))

    def explain(value: Any, meter: Meter) -> Failure | None:
        matched = count(value, meter)
        if matched == 1:
            return None
        if matched == 0:
            return [], f"{_show(value)} is not valid under any of the given schemas"
        return [], f"{_show(value)} is valid under each of {matched} of the given schemas"

    return FastCheck(lambda value, meter: count(value, meter) == 1, explain, weight)


def _not(child: Any, _schema: dict[str, Any], sub: Sub) -> FastCheck:
    inner = sub(child)

    def explain(value: Any, meter: Meter) -> Failure | None:
        if not inner.valid(value, meter):
            return None
        return [], f"{_show(value)} should not be valid under {{'not': ...}}"

    return FastCheck(lambda value, meter: not inner.valid(value, meter), explain, 1 + inner.weight)


def _if(condition: Any, schema: dict[str, Any], sub: Sub) -> FastCheck:
    test = sub(condition)
    then = sub(schema["then"]) if "then" in schema else _ACCEPT
    otherwise = sub(schema["else"]) if "else" in schema else _ACCEPT
    weight = min(1 + test.weight + max(then.weight, otherwise.weight), _MAX_WEIGHT)

    def valid(value: Any, meter: Meter) -> bool:
        return (then if test.valid(value, meter) else otherwise).valid(value, meter)

    def explain(value: Any, meter: Meter) -> Failure | None:
        return (then if test.valid(value, meter) else otherwise).explain(value, meter)

    return FastCheck(valid, explain, weight)


_MAKERS: Final[dict[str, Maker]] = {
    "type": _type,
    "enum": _enum,
    "const": _const,
    "multipleOf": _numeric(_multiple, "is not a multiple of"),
    "maximum": _numeric(lambda value, bound: value <= bound, "is greater than the maximum of"),
    "exclusiveMaximum": _numeric(
        lambda value, bound: value < bound, "is greater than or equal to the maximum of"
    ),
    "minimum": _numeric(lambda value, bound: value >= bound, "is less than the minimum of"),
    "exclusiveMinimum": _numeric(
        lambda value, bound: value > bound, "is less than or equal to the minimum of"
    ),
    "maxLength": _length(lambda size, limit: size <= limit, str, "is longer than"),
    "minLength": _length(lambda size, limit: size >= limit, str, "is shorter than"),
    "maxItems": _length(lambda size, limit: size <= limit, list, "has more items than"),
    "minItems": _length(lambda size, limit: size >= limit, list, "has fewer items than"),
    "maxProperties": _length(lambda size, limit: size <= limit, dict, "has more properties than"),
    "minProperties": _length(lambda size, limit: size >= limit, dict, "has fewer properties than"),
    "pattern": _pattern,
    "format": _format,
    "items": _items,
    "prefixItems": _prefix_items,
    "uniqueItems": _unique,
    "properties": _properties,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional,
    "required": _required,
    "dependentRequired": _dependent_required,
    "propertyNames": _property_names,
    "allOf": _all_of,
    "anyOf": _any_of,
    "oneOf": _one_of,
    "not": _not,
    "if": _if,
}
