"""JSON Schema documents: parsed once, canonicalised, compiled, then validated exactly.

This ports Go's ``core/jsonschema`` as ``core/tool`` uses it (go-reference-behaviour §2.4):

* ``CompiledSchema.parse`` refuses empty documents, documents over 1 MiB and documents that
  are not I-JSON, canonicalises the text (the canonical bytes are what a contract exposes),
  and compiles it: draft 2020-12 unless ``$schema`` names another known draft, ``format``
  *asserted*, no remote ``$ref`` loading (in-document references and the standard
  metaschemas still resolve).
* ``validate`` checks the instance is I-JSON, decodes numbers exactly (``int``/``Decimal``,
  never ``float``) and validates; ``1.0`` counts as an integer, as in Go's validator.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from typing import Any, Final, cast
from urllib.parse import urljoin

import referencing
import referencing.exceptions
import referencing.jsonschema

# python-jsonschema ships no type information (its stubs live in types-jsonschema).
from jsonschema import Draft202012Validator, exceptions, validators  # type: ignore[import-untyped]
from jsonschema.exceptions import best_match  # type: ignore[import-untyped]
from jsonschema.protocols import Validator  # type: ignore[import-untyped]
from jsonschema_specifications import REGISTRY as SPECIFICATIONS  # type: ignore[import-untyped]

from scope_tool._ijson import IJSONError, canonical_json, parse_ijson

__all__ = ["MAX_SCHEMA_BYTES", "CompiledSchema", "SchemaError", "SchemaValidationError"]

MAX_SCHEMA_BYTES = 1 << 20
"""Largest schema document accepted (1 MiB), before and after canonicalisation."""

_INVALID_SCHEMA: Final = "jsonschema: invalid schema"
_INVALID_VALUE: Final = "jsonschema: value must be one valid RFC 7493 JSON document"
_VALIDATE_VALUE: Final = "jsonschema: validate value"
_MAX_MESSAGE: Final = 400


class SchemaError(ValueError):
    """``jsonschema: invalid schema: <detail>``: the document cannot be a schema."""

    def __init__(self, detail: str) -> None:
        self.detail = detail
        super().__init__(f"{_INVALID_SCHEMA}: {detail}")


class SchemaValidationError(ValueError):
    """A value does not satisfy a schema.

    Text is ``jsonschema: value must be one valid RFC 7493 JSON document`` or
    ``jsonschema: validate value: <detail>``.
    """


# --- exact numbers ---------------------------------------------------------------------------


def _is_integral(value: Decimal) -> bool:
    # Exact, context free: no rounding and no huge allocation for 1e999999999.
    _sign, digits, exponent = value.as_tuple()
    if not isinstance(exponent, int):
        return False
    return exponent >= 0 or all(digit == 0 for digit in digits[exponent:])


def _is_number(_checker: Any, instance: Any) -> bool:
    return isinstance(instance, int | Decimal) and not isinstance(instance, bool)


def _is_integer(_checker: Any, instance: Any) -> bool:
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


def _is_multiple(value: int | Decimal, divisor: int | Decimal) -> bool:
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


def _multiple_of(
    validator: Validator, divisor: Any, instance: Any, schema: Any
) -> Iterator[exceptions.ValidationError]:
    if not validator.is_type(instance, "number"):
        return
    if not _is_multiple(instance, divisor):
        yield exceptions.ValidationError(f"{_show(instance)} is not a multiple of {_show(divisor)}")


def _show(value: Any) -> str:
    return str(value) if isinstance(value, int | Decimal) else repr(value)


# --- remote references are refused -----------------------------------------------------------


def _refuse_retrieval(uri: str) -> referencing.Resource[Any]:
    raise referencing.exceptions.NoSuchResource(ref=uri)  # type: ignore[call-arg]


_REFUSING_REGISTRY: Final = referencing.Registry(retrieve=_refuse_retrieval)  # type: ignore[call-arg]


def _check_references(
    schema: Any, specification: referencing.Specification[Any], registry: referencing.Registry[Any]
) -> None:
    """Resolve every ``$ref`` now, so a remote reference fails at compile time, like Go."""
    resolver = registry.resolver()
    pending: list[tuple[Any, str]] = [(schema, "")]
    while pending:
        node, base = pending.pop()
        if not isinstance(node, dict):
            continue
        node_id = specification.id_of(node)
        if node_id is not None:
            base = urljoin(base, node_id)
        reference = node.get("$ref")
        if isinstance(reference, str):
            target = urljoin(base, reference)
            try:
                resolver.lookup(target)
            except referencing.exceptions.Unresolvable:
                remote = (
                    ""
                    if target.startswith(base + "#") or target.startswith("#")
                    else (" (remote references are never loaded)")
                )
                raise SchemaError(
                    f"compile: $ref {json.dumps(reference)} cannot be resolved{remote}"
                ) from None
        pending.extend((child, base) for child in specification.subresources_of(node))


# --- the compiled schema ---------------------------------------------------------------------

_VALIDATOR_CLASSES: dict[type[Validator], type[Validator]] = {}


def _exact_class(base: type[Validator]) -> type[Validator]:
    """``base`` with exact-number typing (Decimal integers) and exact ``multipleOf``."""
    exact = _VALIDATOR_CLASSES.get(base)
    if exact is None:
        type_checker = base.TYPE_CHECKER.redefine_many(
            {"number": _is_number, "integer": _is_integer}
        )
        exact = validators.extend(
            base, validators={"multipleOf": _multiple_of}, type_checker=type_checker
        )
        _VALIDATOR_CLASSES[base] = exact
    return exact


def _message(error: exceptions.ValidationError) -> str:
    pointer = "".join(
        "/" + str(part).replace("~", "~0").replace("/", "~1") for part in error.absolute_path
    )
    text = error.message
    if len(text) > _MAX_MESSAGE:
        text = text[:_MAX_MESSAGE] + "..."
    return f"{pointer or '/'}: {text}" if pointer else f"(root): {text}"


class CompiledSchema:
    """An immutable compiled schema that owns its canonical JSON bytes.

    Instances are only made by :meth:`parse`; they are safe to share between threads and
    cheap to validate against, because compilation happens once.
    """

    __slots__ = ("_canonical", "_validator")

    _canonical: bytes
    _validator: Validator

    def __init__(self, *, _canonical: bytes, _validator: Validator) -> None:
        object.__setattr__(self, "_canonical", _canonical)
        object.__setattr__(self, "_validator", _validator)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"CompiledSchema is immutable; cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"CompiledSchema is immutable; cannot delete {name!r}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CompiledSchema):
            return NotImplemented
        return self._canonical == other._canonical

    def __hash__(self) -> int:
        return hash(self._canonical)

    def __repr__(self) -> str:
        return f"CompiledSchema({self._canonical!r})"

    @classmethod
    def parse(cls, raw: bytes) -> CompiledSchema:
        """Check size/I-JSON, canonicalise, compile (2020-12, format asserted, no remote $ref).

        Raises:
            SchemaError: ``jsonschema: invalid schema: <detail>`` where detail is
                ``document is empty``, ``document exceeds 1048576 bytes``,
                ``document is not valid RFC 7493 JSON: ...`` or ``compile: ...``.
        """
        if not isinstance(raw, bytes | bytearray | memoryview):
            raise TypeError(f"schema document must be bytes, not {type(raw).__name__}")
        raw = bytes(raw)
        if not raw:
            raise SchemaError("document is empty")
        if len(raw) > MAX_SCHEMA_BYTES:
            raise SchemaError(f"document exceeds {MAX_SCHEMA_BYTES} bytes")
        try:
            canonical = canonical_json(raw)
        except IJSONError as exc:
            raise SchemaError(f"document is not valid RFC 7493 JSON: {exc}") from None
        if len(canonical) > MAX_SCHEMA_BYTES:
            raise SchemaError(f"canonical document exceeds {MAX_SCHEMA_BYTES} bytes")
        schema = parse_ijson(canonical)
        return cls(_canonical=canonical, _validator=_compile(schema))

    @property
    def canonical(self) -> bytes:
        """The canonical JSON of the schema."""
        return self._canonical

    def validate(self, instance: bytes) -> None:
        """Raise SchemaValidationError unless ``instance`` is I-JSON and satisfies the schema."""
        try:
            value = parse_ijson(instance)
        except IJSONError as exc:
            raise SchemaValidationError(_INVALID_VALUE) from exc
        self.validate_value(value)

    def validate_value(self, value: Any) -> None:
        """Validate an already parsed value (numbers as int/Decimal)."""
        try:
            error = best_match(self._validator.iter_errors(value))
        except RecursionError:
            raise SchemaValidationError(
                f"{_VALIDATE_VALUE}: value nests too deeply to validate"
            ) from None
        except referencing.exceptions.Unresolvable as exc:
            raise SchemaValidationError(
                f"{_VALIDATE_VALUE}: unresolvable reference {exc}"
            ) from None
        if error is not None:
            raise SchemaValidationError(f"{_VALIDATE_VALUE}: {_message(error)}")


def _compile(schema: Any) -> Validator:
    if not isinstance(schema, dict | bool):
        raise SchemaError(f"compile: a schema must be an object or a boolean, not {schema!r}"[:200])
    declared = schema.get("$schema") if isinstance(schema, dict) else None
    if declared is not None:
        if not isinstance(declared, str):
            raise SchemaError("compile: $schema must be a string")
        base = validators.validator_for(schema, default=_UNKNOWN)
        if base is _UNKNOWN:
            raise SchemaError(
                f"compile: unknown $schema {declared!r} (remote metaschemas are never loaded)"
            )
    else:
        base = Draft202012Validator
    exact = _exact_class(base)
    meta = exact(exact.META_SCHEMA, format_checker=exact.FORMAT_CHECKER)
    error = best_match(meta.iter_errors(schema))
    if error is not None:
        raise SchemaError(f"compile: {_message(error)}")
    specification = referencing.jsonschema.specification_with(
        str(exact.META_SCHEMA.get("$id") or exact.META_SCHEMA.get("id") or ""),
        default=referencing.jsonschema.DRAFT202012,
    )
    resource = specification.create_resource(schema)
    registry = _REFUSING_REGISTRY.with_resource(resource.id() or "", resource).crawl()
    _check_references(schema, specification, SPECIFICATIONS.combine(registry))
    return exact(schema, format_checker=exact.FORMAT_CHECKER, registry=registry)


# Returned by ``validator_for`` when ``$schema`` names no draft it knows.
_UNKNOWN: Final = cast("type[Validator]", object())
