"""JSON Schema documents: parsed once, canonicalised, compiled, then validated exactly.

This ports Go's ``core/jsonschema`` as ``core/tool`` uses it (go-reference-behaviour §2.4):

* :meth:`CompiledSchema.parse` refuses empty documents, documents over 1 MiB and documents
  that are not I-JSON, canonicalises the text (the canonical bytes are what a contract
  exposes) and compiles it: draft 2020-12 unless ``$schema`` names another known draft,
  ``format`` *asserted*, no remote ``$ref`` loading (in-document references and the standard
  metaschemas still resolve).
* :meth:`CompiledSchema.validate` checks the instance is I-JSON, decodes numbers exactly
  (``int``/``Decimal``, never ``float``) and validates; ``1.0`` counts as an integer.

Two engines, one meaning. ``jsonschema_rs`` (Rust) validates a small argument object in about
0.1 µs, python-jsonschema in about 9 µs, but the Rust engine rounds some numbers (a bound
beyond 2**64 against a long decimal, for example). So the Rust engine only answers when every
number involved is provably exact in binary floating point: schema numbers that are integers
or doubles of magnitude at most 2**53, and instance numbers that are integers of at most 15
digits. Everything else goes to the exact engine (``_schema_exact``), which also delegates
``format`` and ``pattern`` to the Rust engine so the two never disagree on those.
"""

from __future__ import annotations

import functools
import json
import re
from decimal import Decimal
from typing import Any, Final, NoReturn

import jsonschema_rs
import referencing.exceptions

from scope_tool._ijson import IJSONError, canonical_json, nested_deeper_than, parse_ijson
from scope_tool._schema_exact import CompileError, compile_exact, first_violation

__all__ = ["MAX_SCHEMA_BYTES", "CompiledSchema", "SchemaError", "SchemaValidationError"]

MAX_SCHEMA_BYTES = 1 << 20
"""Largest schema document accepted (1 MiB), before and after canonicalisation."""

_INVALID_SCHEMA: Final = "jsonschema: invalid schema"
_INVALID_VALUE: Final = "jsonschema: value must be one valid RFC 7493 JSON document"
_VALIDATE_VALUE: Final = "jsonschema: validate value"
_MAX_MESSAGE: Final = 400
_EXACT_LIMIT: Final = 1 << 53
# A number lexeme with a fraction or exponent, or 16+ digits (possibly beyond 2**53). Digits in
# strings can match too; that only sends the value to the exact engine.
_INEXACT_NUMBER: Final = re.compile(rb"[0-9][.eE]|[0-9]{16}")
# The Rust engine recurses on the native stack; keep deep documents away from it.
_RUST_DEPTH: Final = 128


class SchemaError(ValueError):
    """``jsonschema: invalid schema: <detail>``: the document cannot be a schema."""

    def __init__(self, detail: str) -> None:
        self.detail = detail
        super().__init__(f"{_INVALID_SCHEMA}: {detail}")


class SchemaValidationError(ValueError):
    """A value does not satisfy a schema.

    Text is ``jsonschema: value must be one valid RFC 7493 JSON document`` or
    ``jsonschema: validate value: <detail>``. For a violation, ``path`` is the JSON pointer of
    the offending value ("" for the root) and ``violation`` the validator's message, so callers
    show them without parsing the text.
    """

    def __init__(
        self, message: str, *, path: str | None = None, violation: str | None = None
    ) -> None:
        super().__init__(message)
        self.path = path
        self.violation = violation


def _exact_in_double(value: Any) -> bool:
    """Whether every number in ``value`` is exact as a double of magnitude <= 2**53."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
        elif isinstance(item, bool):
            continue
        elif isinstance(item, int):
            if abs(item) > _EXACT_LIMIT:
                return False
        elif isinstance(item, Decimal) and (
            abs(item) > _EXACT_LIMIT or Decimal(float(item)) != item
        ):
            return False
    return True


def _rust_can_answer(value: Any) -> bool:
    """Whether an instance holds only integers of magnitude <= 2**53 and nests shallowly."""
    pending: list[tuple[Any, int]] = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict | list):
            if depth >= _RUST_DEPTH:
                return False
            children = item.values() if isinstance(item, dict) else item
            pending.extend((child, depth + 1) for child in children)
        elif isinstance(item, Decimal) or (
            isinstance(item, int) and not isinstance(item, bool) and abs(item) > _EXACT_LIMIT
        ):
            return False
    return True


def _rust_violation(error: Any) -> tuple[str, str]:
    pointer = "".join(
        "/" + str(part).replace("~", "~0").replace("/", "~1") for part in error.instance_path
    )
    text = str(error.message)
    if len(text) > _MAX_MESSAGE:
        text = text[:_MAX_MESSAGE] + "..."
    return pointer, text


def _violation_error(pointer: str, text: str) -> SchemaValidationError:
    return SchemaValidationError(
        f"{_VALIDATE_VALUE}: {pointer or '(root)'}: {text}", path=pointer, violation=text
    )


def _compile_rust(canonical: bytes) -> Any:
    """The Rust validator for ``canonical``; raise CompileError when it refuses the schema."""
    schema = json.loads(canonical, parse_float=Decimal)
    try:
        return jsonschema_rs.validator_for(schema, validate_formats=True, offline=True)
    except (jsonschema_rs.ValidationError, jsonschema_rs.ReferencingError, ValueError) as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CompileError(f"compile: {first_line}") from None


class CompiledSchema:
    """An immutable compiled schema that owns its canonical JSON bytes.

    Instances are only made by :meth:`parse`; they are safe to share between threads and
    cheap to validate against, because compilation happens once.
    """

    __slots__ = ("_canonical", "_exact", "_rust")

    _canonical: bytes
    _exact: Any
    _rust: Any

    def __init__(self, *, _canonical: bytes, _exact: Any, _rust: Any) -> None:
        object.__setattr__(self, "_canonical", _canonical)
        object.__setattr__(self, "_exact", _exact)
        object.__setattr__(self, "_rust", _rust)

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError(f"CompiledSchema is immutable; cannot set {name!r}")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError(f"CompiledSchema is immutable; cannot delete {name!r}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CompiledSchema):
            return NotImplemented
        return self._canonical == other._canonical

    def __hash__(self) -> int:
        return hash(self._canonical)

    def __repr__(self) -> str:
        return f"CompiledSchema({self._canonical!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (CompiledSchema.parse, (self._canonical,))

    @classmethod
    def parse(cls, raw: bytes) -> CompiledSchema:
        """Check size/I-JSON, canonicalise, compile (2020-12, format asserted, no remote $ref).

        Raises:
            SchemaError: ``jsonschema: invalid schema: <detail>`` where detail is
                ``document is empty``, ``document exceeds 1048576 bytes``,
                ``document is not valid RFC 7493 JSON: ...`` or ``compile: ...``.
            TypeError: ``raw`` is not bytes.
        """
        if not isinstance(raw, bytes | bytearray | memoryview):
            raise TypeError(f"schema document must be bytes, not {type(raw).__name__}")
        raw = bytes(raw)
        if len(raw) <= _CACHED_SCHEMA_BYTES:
            return _parse_cached(raw)
        return cls._parse(raw)

    @classmethod
    def _parse(cls, raw: bytes) -> CompiledSchema:
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
        rust = None
        try:
            exact = compile_exact(schema)
            if not _too_deep_for_rust(canonical):
                rust = _compile_rust(canonical)
        except CompileError as exc:
            raise SchemaError(str(exc)) from None
        except RecursionError:
            raise SchemaError("compile: schema nests too deeply") from None
        fast = rust if _exact_in_double(schema) else None
        return cls(_canonical=canonical, _exact=exact, _rust=fast)

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
        rust = self._rust
        if (
            rust is not None
            and _INEXACT_NUMBER.search(instance) is None
            and (len(instance) <= 2 * _RUST_DEPTH or not nested_deeper_than(instance, _RUST_DEPTH))
        ):
            if not rust.is_valid(value):
                self._refuse_rust(value)
        else:
            self._validate_exact(value)

    def validate_value(self, value: Any) -> None:
        """Validate an already parsed value (numbers as int/Decimal)."""
        if self._rust is not None and _rust_can_answer(value):
            if not self._rust.is_valid(value):
                self._refuse_rust(value)
        else:
            self._validate_exact(value)

    def _refuse_rust(self, value: Any) -> NoReturn:
        error = next(iter(self._rust.iter_errors(value)))
        raise _violation_error(*_rust_violation(error))

    def _validate_exact(self, value: Any) -> None:
        try:
            problem = first_violation(self._exact, value)
        except RecursionError:
            raise SchemaValidationError(
                f"{_VALIDATE_VALUE}: value nests too deeply to validate"
            ) from None
        except referencing.exceptions.Unresolvable as exc:
            raise SchemaValidationError(
                f"{_VALIDATE_VALUE}: unresolvable reference {exc}"
            ) from None
        if problem is not None:
            raise _violation_error(*problem)


def _too_deep_for_rust(document: bytes) -> bool:
    return len(document) > 2 * _RUST_DEPTH and nested_deeper_than(document, _RUST_DEPTH)


_CACHED_SCHEMA_BYTES: Final = 64 * 1024
"""Schemas up to this size are compiled once per process (at most 256 kept, <= 16 MiB)."""


@functools.lru_cache(maxsize=256)
def _parse_cached(raw: bytes) -> CompiledSchema:
    """``CompiledSchema._parse`` memoised: a compiled schema is immutable, so sharing it is safe.

    A tool asking for input builds the same ``InputRequest`` schema on every call, and the
    runtime rebuilds it from JSON when it commits the request and when it re-enters the tool;
    compiling (the metaschema check alone) costs ~0.5 ms each time. Refusals are not cached.
    """
    return CompiledSchema._parse(raw)
