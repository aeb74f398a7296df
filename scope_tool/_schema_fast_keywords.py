"""The keywords of the fast exact engine: one maker per 2020-12 keyword it implements.

A maker gets the keyword's value, the subschema holding it and ``sub`` (compile a child
subschema) and returns a :class:`~scope_tool._schema_fast_checks.FastCheck`, or None when the
keyword checks nothing (``uniqueItems: false``). Semantics follow python-jsonschema with exact
numbers; the conformance suite and a differential test hold them to it.
"""

from __future__ import annotations

from collections.abc import Callable, Sized
from itertools import repeat, takewhile
from typing import Any, Final

from scope_tool._schema_exact import FORMAT_CHECKER
from scope_tool._schema_fast_checks import (
    _ACCEPT,
    _MAX_WEIGHT,
    _TYPES,
    Failure,
    FastCheck,
    Maker,
    Sub,
    _at,
    _conjunction,
    _is_number,
    _key,
    _leaf,
    _multiple,
    _over,
    _show,
    charge,
)
from scope_tool._schema_limits import Meter
from scope_tool._schema_patterns import rust_pattern

__all__ = ["MAKERS"]


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
    checks = [(rust_pattern(pattern), sub(child)) for pattern, child in patterns.items()]
    return _over(
        lambda value: [
            (name, item, check)
            for matcher, check in checks
            for name, item in value.items()
            if matcher.is_valid(name)
        ],
        dict,
        1,
    )


def _additional(additional: Any, schema: dict[str, Any], sub: Sub) -> FastCheck:
    each = sub(additional)
    declared = schema.get("properties", {})
    matchers = [rust_pattern(pattern) for pattern in schema.get("patternProperties", {})]

    def extra(value: Any) -> list[tuple[str, Any, FastCheck]]:
        return [
            (name, item, each)
            for name, item in value.items()
            if name not in declared and not any(each.is_valid(name) for each in matchers)
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


MAKERS: Final[dict[str, Maker]] = {
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
