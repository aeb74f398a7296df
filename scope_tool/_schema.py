"""JSON Schema documents: parsed once, canonicalised, compiled, then validated exactly.

This ports Go's ``core/jsonschema`` as ``core/tool`` uses it (go-reference-behaviour §2.4);
``docs/schemas.md`` is the reference:

* :meth:`CompiledSchema.parse` refuses empty documents, documents over 1 MiB, documents that
  are not I-JSON and documents nested deeper than ``MAX_NESTING``, canonicalises the text (the
  canonical bytes are what a contract exposes) and compiles it: draft 2020-12 unless
  ``$schema`` names another known draft, ``format`` *asserted*, no remote ``$ref`` loading
  (in-document references, embedded resources and the standard metaschemas still resolve).
* :meth:`CompiledSchema.validate` checks the instance is I-JSON, decodes numbers exactly
  (``int``/``Decimal``, never ``float``) and validates; ``1.0`` counts as an integer.
  :meth:`CompiledSchema.check` does the same within a work budget and reports
  accepted / refused / over budget.

Three engines, one meaning. ``jsonschema_rs`` (Rust) validates a small argument object in
about 0.1 µs but only answers when every number involved is provably exact for it (schema
numbers that are integers or doubles of magnitude at most 2**53; instance numbers that are
integers, which it compares exactly whatever their size, while it compares a fraction that is
not a double as a double: docs/schemas.md#engines). A text holds such integers when it has no
fraction or exponent and no run of 16 digits; ``_ijson.small_object`` proves more cheaply that
a small object holds only integers (``Contract.prepare``'s hot path). The fast exact engine
(``_schema_fast``) takes the common keywords of schemas that cannot recurse, with exact numbers, at a few µs per
keyword-heavy item instead of python-jsonschema's tens. The exact engine (``_schema_exact``,
python-jsonschema with exact numbers) takes everything else; it delegates ``format`` and
``pattern`` to the Rust engine so the engines never disagree on those. Nesting and work are
counted (``_schema_limits``), so a verdict never depends on the caller's stack.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any, Final, cast

import jsonschema_rs
import referencing.exceptions

from scope_tool._ijson import (
    IJSONError,
    canonical_json,
    nested_deeper_than,
    parse_ijson,
    small_object,
)
from scope_tool._schema_check import CheckOutcome, SchemaCheck
from scope_tool._schema_exact import CompileError, compile_exact_shaped, first_violation
from scope_tool._schema_fast import FastCheck, charge, compile_fast
from scope_tool._schema_limits import (
    MAX_EVALUATION_DEPTH,
    MAX_NESTING,
    Meter,
    OverBudget,
    TooDeep,
    metered,
    on_enough_stack,
)
from scope_tool._sealed import Immutable
from scope_tool.errors import ToolError

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


class SchemaError(ToolError, ValueError):
    """``jsonschema: invalid schema: <detail>``: the document cannot be a schema."""

    def __init__(self, detail: str) -> None:
        self.detail = detail
        super().__init__(f"{_INVALID_SCHEMA}: {detail}")


class SchemaValidationError(ToolError, ValueError):
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

    @classmethod
    def of(cls, verdict: SchemaCheck) -> SchemaValidationError:
        """The error a refused ``verdict`` stands for, with its path and violation."""
        return cls(verdict.detail, path=verdict.path, violation=verdict.violation)


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


def _shape_of_value(value: Any) -> tuple[bool, bool]:
    """(nests deeper than MAX_NESTING, holds only integers of magnitude <= 2**53)."""
    only_small_integers = True
    pending: list[tuple[Any, int]] = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict | list):
            if depth >= MAX_NESTING:
                return True, False
            children = item.values() if isinstance(item, dict) else item
            pending.extend((child, depth + 1) for child in children)
        elif isinstance(item, Decimal) or (
            isinstance(item, int) and not isinstance(item, bool) and abs(item) > _EXACT_LIMIT
        ):
            only_small_integers = False
    return False, only_small_integers


def _rust_violation(error: Any) -> tuple[str, str]:
    pointer = "".join(
        "/" + str(part).replace("~", "~0").replace("/", "~1") for part in error.instance_path
    )
    text = str(error.message)
    if len(text) > _MAX_MESSAGE:
        text = text[:_MAX_MESSAGE] + "..."
    return pointer, text


def _compile_rust(canonical: bytes) -> Any:
    """The Rust validator for ``canonical``; raise CompileError when it refuses the schema."""
    schema = json.loads(canonical, parse_float=Decimal)
    try:
        return jsonschema_rs.validator_for(schema, validate_formats=True, offline=True)
    except (jsonschema_rs.ValidationError, jsonschema_rs.ReferencingError, ValueError) as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CompileError(f"compile: {first_line}") from None


class CompiledSchema(Immutable):
    """An immutable compiled schema that owns its canonical JSON bytes.

    Instances are only made by :meth:`parse`; they are safe to share between threads and
    cheap to validate against, because compilation happens once.

    Three engines, one meaning (see the module docstring): the Rust engine where every number
    is provably exact in binary floating point, the fast exact engine (``_schema_fast``)
    for the common keywords, and the metered exact engine (``_schema_exact``) for the rest.
    Limits (``_schema_limits``) are counted, never taken from the call stack, so the update
    validator, the update handler and the activity always reach the same verdict.
    """

    __slots__ = ("_bounded", "_canonical", "_exact", "_fast", "_rust")

    _canonical: bytes
    _exact: Any
    _rust: Any
    _fast: FastCheck | None
    _bounded: bool

    def __init__(
        self, *, _canonical: bytes, _exact: Any, _rust: Any, _fast: Any, _bounded: bool
    ) -> None:
        self._set_slots(
            _canonical=_canonical, _exact=_exact, _rust=_rust, _fast=_fast, _bounded=_bounded
        )

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
        """Check size/I-JSON/nesting, canonicalise, compile (2020-12, format asserted, no
        remote $ref).

        Raises:
            SchemaError: ``jsonschema: invalid schema: <detail>`` where detail is
                ``document is empty``, ``document exceeds 1048576 bytes``,
                ``document is not valid RFC 7493 JSON: ...``,
                ``document nests deeper than 64 levels`` or ``compile: ...``.
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
        if _nests_too_deep(canonical):
            raise SchemaError(f"document nests deeper than {MAX_NESTING} levels")
        try:
            schema = parse_ijson(canonical)
        except IJSONError as exc:  # a number no exact Decimal holds
            raise SchemaError(str(exc)) from None
        try:
            # The metaschema check and json.loads recurse with the document: give them a
            # stack with room for MAX_NESTING levels, whatever the caller's depth.
            exact, shape = on_enough_stack(lambda: compile_exact_shaped(schema))
            rust = on_enough_stack(lambda: _compile_rust(canonical))
        except CompileError as exc:
            raise SchemaError(str(exc)) from None
        fast = (
            on_enough_stack(lambda: compile_fast(schema, shape.ref_targets))
            if shape.bounded
            else None
        )
        return cls(
            _canonical=canonical,
            _exact=exact,
            _rust=rust if shape.bounded and _exact_in_double(schema) else None,
            _fast=fast,
            _bounded=shape.bounded,
        )

    @property
    def canonical(self) -> bytes:
        """The canonical JSON of the schema."""
        return self._canonical

    @property
    def small_object_verdict(self) -> Callable[[dict[str, Any]], bool] | None:
        """The exact verdict on an object :func:`~scope_tool._ijson.small_object` gave, or
        None when this schema has no such shortcut.

        It is the Rust engine's ``is_valid``: such an object holds only integers, which it
        compares exactly, and the schema's own numbers are exact as doubles. ``False`` decides
        nothing more than :meth:`validate` would explain (call it for the refusal).
        """
        rust = self._rust
        return None if rust is None else cast("Callable[[dict[str, Any]], bool]", rust.is_valid)

    def validate(self, instance: bytes) -> None:
        """Raise SchemaValidationError unless ``instance`` is I-JSON and satisfies the schema."""
        rust = self._rust
        if rust is not None:
            # The fast road for a small flat object that small_object proves is I-JSON and
            # holds only integers (which the Rust engine compares exactly), when the Rust
            # engine accepts it. Anything else (a refusal too, to explain it) takes the full
            # road below.
            small = small_object(instance)
            if small is not None and rust.is_valid(small):
                return
        try:
            value = parse_ijson(instance, plain_decimals=self._fast is not None)
        except IJSONError:
            raise SchemaValidationError(_INVALID_VALUE) from None
        verdict = self._verdict(instance, value, None)
        if verdict is not _ACCEPTED and verdict.outcome is not CheckOutcome.ACCEPTED:
            raise SchemaValidationError.of(verdict)

    def validate_value(self, value: Any) -> None:
        """Validate an already parsed value (numbers as int/Decimal)."""
        deep, small_integers = _shape_of_value(value)
        verdict = self._decide(value, deep=deep, rust_exact=small_integers, max_steps=None)
        if verdict.outcome is not CheckOutcome.ACCEPTED:
            raise SchemaValidationError.of(verdict)

    def check(self, instance: bytes, *, max_steps: int | None = None) -> SchemaCheck:
        """Check ``instance`` spending at most ``max_steps`` keyword applications.

        Unlike :meth:`validate` this never raises for a bad value: the verdict says accepted,
        refused (with the text :meth:`validate` would raise) or over budget. The same value
        and schema spend the same steps on every run and every stack, so a workflow can
        check within a budget and replay the same verdict; an over-budget value must be
        checked elsewhere (an activity) with no budget.

        Raises:
            ValueError: ``max_steps`` is negative.
        """
        try:
            return self.check_json(instance, max_steps=max_steps)
        except IJSONError:
            return SchemaCheck(outcome=CheckOutcome.REFUSED, detail=_INVALID_VALUE)

    def check_json(self, instance: bytes, *, max_steps: int | None = None) -> SchemaCheck:
        """:meth:`check`, but a text that is not I-JSON raises, saying why.

        The I-JSON check and the parse the schema needs are one pass, so a caller that wants
        the reason for invalid JSON (an answer's ``invalid_json`` refusal) never parses twice:
        for 1 MiB of decimals the second parse was a third of the verdict's time.

        Raises:
            IJSONError: ``instance`` is not one I-JSON document (the :func:`check_ijson` text).
            ValueError: ``max_steps`` is negative.
        """
        if max_steps is not None and max_steps < 0:
            raise ValueError(f"max_steps must be >= 0, not {max_steps}")
        # The fast engine shows numbers with str(), so it takes plain Decimals (built twice as
        # fast); python-jsonschema's messages use repr(), which JSONDecimal keeps readable.
        value = parse_ijson(instance, plain_decimals=self._fast is not None)
        return self._verdict(instance, value, max_steps)

    def _verdict(self, instance: bytes, value: Any, max_steps: int | None) -> SchemaCheck:
        """The verdict on ``value``, parsed from ``instance``.

        A small value whose numbers are exact as doubles goes straight to the Rust engine,
        positional arguments and no allocation: on ``{"a":2,"b":3}`` the layers around that
        one call had cost more than the call itself.
        """
        rust_exact = _INEXACT_NUMBER.search(instance) is None
        if len(instance) <= 2 * MAX_NESTING:
            rust = self._rust
            if rust is not None and rust_exact:
                if rust.is_valid(value):
                    return _ACCEPTED
                return _refused(*_rust_violation(next(iter(rust.iter_errors(value)))), 0)
            deep = False
        else:
            deep = nested_deeper_than(instance, MAX_NESTING)
        return self._decide(value, deep=deep, rust_exact=rust_exact, max_steps=max_steps)

    def _decide(
        self, value: Any, *, deep: bool, rust_exact: bool, max_steps: int | None
    ) -> SchemaCheck:
        # The common verdict (a small value the Rust engine accepts) allocates nothing: on
        # Contract.prepare's hot path a Meter and a fresh SchemaCheck were a third of the
        # schema step's own cost.
        if deep and not self._bounded:
            return _refused(
                "",
                f"value nests deeper than {MAX_NESTING} levels, the limit for a recursive schema",
                0,
            )
        if not deep and rust_exact and self._rust is not None:
            if self._rust.is_valid(value):
                return _ACCEPTED
            return _refused(*_rust_violation(next(iter(self._rust.iter_errors(value)))), 0)
        meter = Meter(max_steps=max_steps)
        try:
            problem = metered(meter, lambda: self._problem(value, meter), fresh_stack=deep)
        except OverBudget:
            return SchemaCheck(
                outcome=CheckOutcome.OVER_BUDGET,
                detail=f"checking needs more than {meter.max_steps} steps",
                steps=meter.steps,
            )
        if problem is None:
            return SchemaCheck(outcome=CheckOutcome.ACCEPTED, steps=meter.steps)
        return _refused(*problem, meter.steps)

    def _problem(self, value: Any, meter: Meter) -> tuple[str, str] | None:
        """(JSON pointer, "" for the root; reason) or None, from the fast engine if it can."""
        try:
            fast = self._fast
            if fast is not None:
                charge(meter, fast.weight)
                if fast.valid(value, meter):
                    return None
                # Explaining re-walks only the failing path, outside the budget: the
                # verdict is already decided.
                failure = fast.explain(value, Meter(failed_at=meter.failed_at))
                if failure is None:  # pragma: no cover - explain mirrors valid
                    return "", "value does not satisfy the schema"
                return _pointer(failure[0]), failure[1]
            return first_violation(self._exact, value)
        except TooDeep:
            return "", (
                f"validation descends more than {MAX_EVALUATION_DEPTH} levels"
                " (a recursive schema applied to a deeply nested value)"
            )
        except RecursionError:
            return "", "value nests too deeply to validate"
        except referencing.exceptions.Unresolvable as exc:
            return "", f"unresolvable reference {exc}"


_ACCEPTED: Final = SchemaCheck(outcome=CheckOutcome.ACCEPTED)


def _refused(pointer: str, violation: str, steps: int) -> SchemaCheck:
    return SchemaCheck(
        outcome=CheckOutcome.REFUSED,
        detail=f"{_VALIDATE_VALUE}: {pointer or '(root)'}: {violation}",
        steps=steps,
        path=pointer,
        violation=violation,
    )


def _pointer(parts: list[str]) -> str:
    return "".join("/" + part.replace("~", "~0").replace("/", "~1") for part in reversed(parts))


def _nests_too_deep(document: bytes) -> bool:
    return len(document) > 2 * MAX_NESTING and nested_deeper_than(document, MAX_NESTING)


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
