"""The exact JSON Schema engine: python-jsonschema with Go's number semantics.

Go's validator (santhosh-tekuri) compares numbers as big rationals. This engine gets the same
by validating values whose numbers are ``int`` / ``Decimal`` (never ``float``), with a type
checker where ``Decimal("1.0")`` is an integer and a ``multipleOf`` that never rounds. It is
the authority for every value: ``CompiledSchema`` only uses the faster Rust engine for values
and schemas whose numbers it has proved to be exact (see ``_schema.py``).

So that both engines mean the same thing, ``format``, ``pattern`` and the patterns of
``patternProperties`` (``_schema_patterns``) are delegated to ``jsonschema_rs`` here (its format set is also the richer one: date-time, uri, hostname... are
asserted like Go's ``AssertFormat``). Remote ``$ref`` is refused at compile time.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from typing import Any, Final, cast

import attrs
import jsonschema_rs
import referencing
import referencing.exceptions
import referencing.jsonschema

# python-jsonschema ships no type information (its stubs live in types-jsonschema).
from jsonschema import (  # type: ignore[import-untyped]
    Draft202012Validator,
    FormatChecker,
    validators,
)
from jsonschema import _keywords as upstream_keywords
from jsonschema.exceptions import ValidationError, best_match  # type: ignore[import-untyped]
from jsonschema.protocols import Validator  # type: ignore[import-untyped]
from jsonschema_specifications import REGISTRY as SPECIFICATIONS  # type: ignore[import-untyped]

from scope_tool._schema_graph import Shape, shape_of
from scope_tool._schema_limits import Meter, current_meter
from scope_tool._schema_patterns import (
    additional_properties,
    pattern_properties,
    rust_pattern,
    unevaluated_properties,
)
from scope_tool.errors import ToolError

__all__ = [
    "FORMAT_CHECKER",
    "CompileError",
    "compile_exact",
    "compile_exact_shaped",
    "first_error",
    "first_violation",
    "is_multiple",
]

_MAX_MESSAGE: Final = 400
_FORMATS: Final = (
    "date",
    "date-time",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
    "uuid",
)


class CompileError(ToolError, ValueError):
    """The schema does not compile; the text is the ``compile: ...`` detail."""


# --- exact numbers ---------------------------------------------------------------------------


def _is_integral(value: Decimal) -> bool:
    # Exact, context free: no rounding and no huge allocation for 1e999999999.
    _sign, digits, exponent = value.as_tuple()
    if not isinstance(exponent, int):
        return False
    return exponent >= 0 or all(digit == 0 for digit in digits[exponent:])


def _is_number(_checker: object, instance: object) -> bool:
    return isinstance(instance, int | Decimal) and not isinstance(instance, bool)


def _is_integer(_checker: object, instance: object) -> bool:
    if isinstance(instance, bool):
        return False
    if isinstance(instance, int):
        return True
    return isinstance(instance, Decimal) and _is_integral(instance)


def _scaled(value: int | Decimal) -> tuple[int, int]:
    """``value`` as ``(coefficient, exponent)`` with ``value == coefficient * 10**exponent``."""
    if isinstance(value, int):
        return value, 0
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    # int(Decimal) is exact and, unlike int(str), has no digit limit.
    return int(Decimal((sign, digits, 0))), exponent


def is_multiple(value: int | Decimal, divisor: int | Decimal) -> bool:
    """Exact ``multipleOf`` without materialising huge powers of ten."""
    numerator, shift = _scaled(value)
    denominator, divisor_shift = _scaled(divisor)
    if denominator == 0:
        return False
    shift -= divisor_shift
    if numerator == 0:
        return True
    if shift >= 0:
        remainder: int = (numerator % denominator) * pow(10, shift, abs(denominator))
        return remainder % denominator == 0
    if -shift > abs(numerator).bit_length():
        return False  # 0 < |numerator| < 2**-shift < 10**-shift: not a multiple
    scale: int = pow(10, -shift)
    return numerator % (denominator * scale) == 0


def _show(value: Any) -> str:
    if isinstance(value, int | Decimal) and not isinstance(value, bool):
        return str(value)
    return json.dumps(value, default=str, ensure_ascii=False)


def _multiple_of(
    validator: Validator, divisor: Any, instance: Any, _schema: Any
) -> Iterator[ValidationError]:
    if validator.is_type(instance, "number") and not is_multiple(instance, divisor):
        yield ValidationError(f"{_show(instance)} is not a multiple of {_show(divisor)}")


# --- format and pattern mean what the Rust engine means --------------------------------------


def _pattern(
    _validator: Validator, pattern: str, instance: Any, _schema: Any
) -> Iterator[ValidationError]:
    if isinstance(instance, str) and not rust_pattern(pattern).is_valid(instance):
        yield ValidationError(f"{_show(instance)} does not match {_show(pattern)}")


def _format_checker() -> Any:
    checker = FormatChecker(formats=())
    for name in _FORMATS:
        rust = jsonschema_rs.validator_for({"format": name}, validate_formats=True)

        def check(instance: object, rust: Any = rust) -> bool:
            return not isinstance(instance, str) or bool(rust.is_valid(instance))

        checker.checks(name)(check)
    return checker


FORMAT_CHECKER: Final = _format_checker()

# --- remote references are refused ------------------------------------------------------------


def _refuse_retrieval(uri: str) -> referencing.Resource[Any]:
    raise referencing.exceptions.NoSuchResource(ref=uri)  # type: ignore[call-arg]


_REFUSING_REGISTRY: Final = referencing.Registry(retrieve=_refuse_retrieval)  # type: ignore[call-arg]


def _check_references(
    schema: Any, specification: referencing.Specification[Any], registry: referencing.Registry[Any]
) -> dict[int, Any]:
    """Resolve every ``$ref`` and ``$dynamicRef`` now, so a bad or remote one fails at compile
    time, as in Go.

    Each subschema is resolved from its own resource scope exactly as the validator will at
    validation time (``Resolver.in_subresource``), so URN bases (``urn:uuid:...``) and
    resources embedded by their own ``$id`` resolve here as they do there. Returns each
    ``$ref``'s target by ``id()`` of the subschema holding it (for ``_schema_graph``).
    """
    targets: dict[int, Any] = {}
    pending: list[tuple[Any, Any]] = [(schema, registry.resolver())]
    while pending:
        node, resolver = pending.pop()
        if not isinstance(node, dict):
            continue
        resolver = resolver.in_subresource(specification.create_resource(node))
        for keyword in ("$ref", "$dynamicRef"):
            reference = node.get(keyword)
            if not isinstance(reference, str):
                continue
            try:
                resolved = resolver.lookup(reference)
            except referencing.exceptions.Unresolvable as exc:
                # A bare Unresolvable means no document has that URI (the retriever refused
                # to fetch it); its subclasses mean the document exists but the fragment
                # does not.
                remote = type(exc) is referencing.exceptions.Unresolvable
                raise CompileError(
                    f"compile: {keyword} {json.dumps(reference)} cannot be resolved"
                    + (" (remote references are never loaded)" if remote else "")
                ) from None
            if keyword == "$ref":
                targets[id(node)] = resolved.contents
        pending.extend((child, resolver) for child in specification.subresources_of(node))
    return targets


# --- compiling -------------------------------------------------------------------------------

_EXACT_CLASSES: dict[Any, Any] = {}
# Returned by ``validator_for`` when ``$schema`` names no draft it knows.
_ECMA_PROPERTY_KEYWORDS: Final = {
    "patternProperties": pattern_properties,
    "additionalProperties": additional_properties,
    "unevaluatedProperties": unevaluated_properties,
}
_UPSTREAM_PROPERTY_KEYWORDS: Final = {
    "patternProperties": upstream_keywords.patternProperties,
    "additionalProperties": upstream_keywords.additionalProperties,
    "unevaluatedProperties": upstream_keywords.unevaluatedProperties,
}
_UNKNOWN: Final = cast("type[Validator]", object())


def _exact_class(base: Any) -> Any:
    """``base`` with exact numbers and the Rust engine's ``pattern``."""
    exact = _EXACT_CLASSES.get(base)
    if exact is None:
        type_checker = base.TYPE_CHECKER.redefine_many(
            {"number": _is_number, "integer": _is_integer}
        )
        keywords = {**base.VALIDATORS, "multipleOf": _multiple_of, "pattern": _pattern}
        # Property names are matched as ECMA 262 too (``_schema_patterns``), where the draft
        # has the keyword in python-jsonschema's own form.
        keywords.update(
            (name, function)
            for name, function in _ECMA_PROPERTY_KEYWORDS.items()
            if keywords.get(name) is _UPSTREAM_PROPERTY_KEYWORDS[name]
        )
        exact = validators.extend(
            base,
            validators={name: _metered(function) for name, function in keywords.items()},
            type_checker=type_checker,
        )
        exact.evolve = _exact_evolve
        _EXACT_CLASSES[base] = exact
        _BASES[exact] = base
    return exact


def _metered(function: Any) -> Any:
    """``function`` (a keyword) counted by the active :class:`Meter`, if any (see ``_schema_limits``).

    Each keyword application is one level while it runs and one step, so the evaluation depth
    and the work are counted, never inferred from the Python stack.
    """

    def keyword(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        meter = current_meter()
        if meter is None:
            return function(validator, value, instance, schema)
        return _counted(meter, function, validator, value, instance, schema)

    return keyword


def _counted(meter: Meter, function: Any, *arguments: Any) -> Iterator[ValidationError]:
    meter.enter()
    try:
        errors = function(*arguments)
        if errors is not None:
            yield from errors
    finally:
        meter.leave()


_BASES: dict[Any, Any] = {}
_EVOLVE_FIELDS: Final = tuple(
    (field.name, field.alias) for field in attrs.fields(Draft202012Validator) if field.init
)


def _exact_evolve(self: Any, **changes: Any) -> Any:
    """python-jsonschema's ``evolve``, but a subschema's ``$schema`` picks an *exact* class.

    The stock ``evolve`` picks the stock class of any subschema that declares ``$schema``
    (a ``$ref`` back to a root that declares it, an embedded resource, every metaschema
    vocabulary), which would silently drop exact numbers there: ``2.0`` would stop being an
    integer and ``multipleOf`` would round.
    """
    schema = changes.setdefault("schema", self.schema)
    exact = type(self)
    if isinstance(schema, dict) and "$schema" in schema:
        exact = _exact_class(validators.validator_for(schema, default=_BASES[exact]))
    for name, alias in _EVOLVE_FIELDS:
        if alias not in changes:
            changes[alias] = getattr(self, name)
    return exact(**changes)


def _meta_validator(exact: Any) -> Validator:
    """The validator of ``exact``'s metaschema, built once per validator class."""
    meta = _META_VALIDATORS.get(exact)
    if meta is None:
        meta = exact(exact.META_SCHEMA, format_checker=FORMAT_CHECKER)
        _META_VALIDATORS[exact] = meta
    return meta


_META_VALIDATORS: dict[Any, Validator] = {}


def first_error(validator: Validator, value: Any) -> str | None:
    """``<json pointer>: <message>`` of the most relevant error, or None when valid."""
    found = first_violation(validator, value)
    return None if found is None else f"{found[0] or '(root)'}: {found[1]}"


def first_violation(validator: Validator, value: Any) -> tuple[str, str] | None:
    """The most relevant error as (JSON pointer, "" for the root; message), or None when valid."""
    error = best_match(validator.iter_errors(value))
    if error is None:
        return None
    pointer = "".join(
        "/" + str(part).replace("~", "~0").replace("/", "~1") for part in error.absolute_path
    )
    text: str = error.message
    if len(text) > _MAX_MESSAGE:
        text = text[:_MAX_MESSAGE] + "..."
    return pointer, text


def compile_exact(schema: Any) -> Validator:
    """Compile a parsed schema (numbers as int/Decimal) or raise :class:`CompileError`."""
    return compile_exact_shaped(schema)[0]


def compile_exact_shaped(schema: Any) -> tuple[Validator, Shape]:
    """:func:`compile_exact`, and the :class:`Shape` of the schema's evaluation graph."""
    if not isinstance(schema, dict | bool):
        kind = "an array" if isinstance(schema, list) else type(schema).__name__
        raise CompileError(f"compile: a schema must be an object or a boolean, not {kind}")
    declared = schema.get("$schema") if isinstance(schema, dict) else None
    base: Any = Draft202012Validator
    if declared is not None:
        if not isinstance(declared, str):
            raise CompileError("compile: $schema must be a string")
        base = validators.validator_for(schema, default=_UNKNOWN)
        if base is _UNKNOWN:
            raise CompileError(
                f"compile: unknown $schema {json.dumps(declared)} "
                "(remote metaschemas are never loaded)"
            )
    exact = _exact_class(base)
    problem = first_error(_meta_validator(exact), schema)
    if problem is not None:
        raise CompileError(f"compile: {problem}")
    specification = referencing.jsonschema.specification_with(
        str(exact.META_SCHEMA.get("$id") or exact.META_SCHEMA.get("id") or ""),
        default=referencing.jsonschema.DRAFT202012,
    )
    resource = specification.create_resource(schema)
    registry = _REFUSING_REGISTRY.with_resource(resource.id() or "", resource).crawl()
    targets = _check_references(schema, specification, SPECIFICATIONS.combine(registry))
    validator = exact(schema, format_checker=FORMAT_CHECKER, registry=registry)
    return validator, shape_of(schema, targets)
