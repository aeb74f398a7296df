"""ECMA 262 regular expressions wherever a schema names one, in every engine.

JSON Schema's ``pattern``, ``patternProperties`` (and so ``additionalProperties`` and
``unevaluatedProperties``, which skip the names a pattern matched) are ECMA 262 regexes:
``\\p{Letter}`` is a Unicode property, ``\\d`` and ``\\w`` are ASCII. Python's ``re``, which
python-jsonschema uses for property names, refuses ``\\p{...}`` (``re.error``) and reads ``\\d``
and ``\\w`` as Unicode. So every engine asks the Rust engine's matcher (``jsonschema_rs``,
ECMA 262 as Go's validator reads it), the one the Rust engine itself and the metaschema's
``format: regex`` check use: the engines cannot disagree, and a pattern the metaschema check
let through always compiles.

The exact engine's three property keywords are python-jsonschema's (4.26) with only the
matcher changed; :func:`_evaluated_property_names` follows its
``find_evaluated_property_keys_by_schema`` (MIT licence) line for line for the same reason.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import jsonschema_rs
from jsonschema.exceptions import ValidationError  # type: ignore[import-untyped]

__all__ = [
    "additional_properties",
    "name_matches",
    "pattern_properties",
    "rust_pattern",
    "unevaluated_properties",
]


@functools.lru_cache(maxsize=1024)
def rust_pattern(pattern: str) -> Any:
    """The Rust engine's matcher for ``pattern`` (ECMA 262 as Go's validator reads it).

    Raises:
        ValueError: the Rust engine cannot read ``pattern`` (``jsonschema_rs.ValidationError``
            is a ``ValueError``); a compiled schema's patterns passed that check already.
    """
    return jsonschema_rs.validator_for({"pattern": pattern})


def name_matches(patterns: Iterable[str], name: str) -> bool:
    """Whether any of ``patterns`` matches (searches) ``name``."""
    return any(rust_pattern(pattern).is_valid(name) for pattern in patterns)


def _names(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def pattern_properties(
    validator: Any, patterns: Mapping[str, Any], instance: Any, _schema: Any
) -> Iterator[ValidationError]:
    """``patternProperties``."""
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        matcher = rust_pattern(pattern)
        for name, value in instance.items():
            if matcher.is_valid(name):
                yield from validator.descend(value, subschema, path=name, schema_path=pattern)


def _additional_names(instance: dict[str, Any], schema: Mapping[str, Any]) -> list[str]:
    declared = _names(schema.get("properties"))
    patterns = tuple(_names(schema.get("patternProperties")))
    return [name for name in instance if name not in declared and not name_matches(patterns, name)]


def additional_properties(
    validator: Any, additional: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    """``additionalProperties``."""
    if not validator.is_type(instance, "object"):
        return
    extras = _additional_names(instance, schema)
    if validator.is_type(additional, "object"):
        for name in extras:
            yield from validator.descend(instance[name], additional, path=name)
    elif not additional and extras:
        if "patternProperties" in schema:
            verb = "does" if len(extras) == 1 else "do"
            joined = ", ".join(repr(name) for name in sorted(extras))
            patterns = ", ".join(repr(each) for each in sorted(schema["patternProperties"]))
            yield ValidationError(f"{joined} {verb} not match any of the regexes: {patterns}")
        else:
            yield ValidationError(
                f"Additional properties are not allowed ({_listed(sorted(extras))} unexpected)"
            )


def _listed(names: list[str]) -> str:
    """``'a' was`` / ``'a', 'b' were`` as python-jsonschema words it."""
    return ", ".join(repr(name) for name in names) + (" was" if len(names) == 1 else " were")


def unevaluated_properties(
    validator: Any, unevaluated: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    """``unevaluatedProperties``."""
    if not validator.is_type(instance, "object"):
        return
    evaluated = set(_evaluated_property_names(validator, instance, schema))
    refused = [
        name
        for name in instance
        if name not in evaluated
        and next(validator.descend(instance[name], unevaluated, path=name), None) is not None
    ]
    if refused and unevaluated is False:
        yield ValidationError(
            f"Unevaluated properties are not allowed ({_listed(sorted(refused))} unexpected)"
        )
    elif refused:
        yield ValidationError(
            "Unevaluated properties are not valid under the given schema"
            f" ({_listed(refused)} unevaluated and invalid)"
        )


def _valid(errors: Iterator[ValidationError]) -> bool:
    return next(errors, None) is None


def _evaluated_property_names(
    validator: Any, instance: dict[str, Any], schema: Any
) -> Iterator[str]:
    if validator.is_type(schema, "boolean"):
        return
    for keyword in ("$ref", "$dynamicRef"):
        reference = schema.get(keyword)
        if reference is not None:
            resolved = validator._resolver.lookup(reference)
            yield from _evaluated_property_names(
                validator.evolve(schema=resolved.contents, _resolver=resolved.resolver),
                instance,
                resolved.contents,
            )
    yield from (name for name in _names(schema.get("properties")) if name in instance)
    for keyword in ("additionalProperties", "unevaluatedProperties"):
        subschema = schema.get(keyword)
        if subschema is not None:
            yield from (
                name
                for name, value in instance.items()
                if _valid(validator.descend(value, subschema))
            )
    patterns = tuple(_names(schema.get("patternProperties")))
    yield from (name for name in instance if name_matches(patterns, name))
    for name, subschema in _names(schema.get("dependentSchemas")).items():
        if name in instance:
            yield from _evaluated_property_names(validator, instance, subschema)
    for keyword in ("allOf", "oneOf", "anyOf"):
        for subschema in schema.get(keyword, ()):
            if _valid(validator.descend(instance, subschema)):
                yield from _evaluated_property_names(validator, instance, subschema)
    if "if" in schema:
        if validator.evolve(schema=schema["if"]).is_valid(instance):
            yield from _evaluated_property_names(validator, instance, schema["if"])
            if "then" in schema:
                yield from _evaluated_property_names(validator, instance, schema["then"])
        elif "else" in schema:
            yield from _evaluated_property_names(validator, instance, schema["else"])
