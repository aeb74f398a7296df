"""Typed function tools: :class:`Func` and the :func:`func_tool` decorator.

A :class:`Func` adapts an ordinary function taking one typed value (a pydantic model, a
dataclass or a ``TypedDict``) into a :class:`~scope_tool.Tool`. The model-visible schema is
derived from that type, and admission is a *strict decode* into it: the same decoder is the
tool's input validator, so :meth:`Contract.prepare <scope_tool.Contract.prepare>` refuses
anything the function could not receive before the function ever runs. A ``Func`` always
completes; a tool that asks for input implements :class:`~scope_tool.Tool` itself.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import math
import re
import typing
from collections.abc import Callable
from typing import Any

import pydantic_core
import typing_extensions
from pydantic import BaseModel, TypeAdapter, ValidationError

from scope_tool._definition import Definition
from scope_tool._ijson import check_ijson
from scope_tool._invocation import Invocation
from scope_tool._output import Output
from scope_tool._result import Result
from scope_tool._schema import CompiledSchema, SchemaError
from scope_tool.errors import (
    InvalidDefinitionError,
    InvalidInvocationError,
    InvalidToolError,
    ToolError,
)

__all__ = ["Func", "func_tool"]

#: Schema keywords whose value is one subschema, a list of them, or a name -> subschema map.
_SUBSCHEMA = frozenset(
    {
        "items",
        "additionalProperties",
        "not",
        "if",
        "then",
        "else",
        "contains",
        "propertyNames",
        "unevaluatedItems",
        "unevaluatedProperties",
    }
)
_SUBSCHEMA_LISTS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_SUBSCHEMA_MAPS = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)

#: Only a number with a 3-digit exponent or a 309-digit mantissa can overflow a float; anything
#: else skips the overflow parse (a string that merely looks like one costs one extra parse).
_THREE_DIGIT_EXPONENT = re.compile(rb"[eE][+-]?[0-9]{3}")
_LONG_MANTISSA = re.compile(rb"[0-9]{309}")


def _may_overflow_a_float(arguments: bytes) -> bool:
    # Cheap substring tests first: this runs on every prepare of a Func tool.
    if (b"e" in arguments or b"E" in arguments) and _THREE_DIGIT_EXPONENT.search(arguments):
        return True
    return len(arguments) > 309 and _LONG_MANTISSA.search(arguments) is not None


class _StrictDecoder:
    """Decodes arguments into the input type, refusing anything a lenient parser would fix.

    It holds only the input type's adapter, never the :class:`Func` or its function, so a
    contract can keep it as the input validator after the tool is gone. I-JSON comes first
    because pydantic's parser silently keeps the last of duplicate keys and accepts ``NaN``.
    """

    __slots__ = ("_check_floats", "_type_name", "_validate_json")

    def __init__(self, adapter: TypeAdapter[Any], type_name: str, *, check_floats: bool) -> None:
        # pydantic-core's validator directly: TypeAdapter's wrapper costs a third of the decode.
        self._validate_json = adapter.validator.validate_json
        self._type_name = type_name
        self._check_floats = check_floats

    def decode(self, arguments: bytes) -> Any:
        """Return the decoded value; :class:`ValueError` says what was refused."""
        check_ijson(arguments)
        return self.decode_checked_ijson(arguments)

    def decode_checked_ijson(self, arguments: bytes) -> Any:
        """:meth:`decode` for text already known to be one I-JSON document.

        ``Contract.prepare`` has parsed the arguments for the schema step by the time the
        validator runs; skipping the second I-JSON parse saves about a tenth of ``prepare``.
        """
        if self._check_floats and _may_overflow_a_float(arguments):
            _refuse_float_overflow(arguments, self._type_name)
        try:
            return self._validate_json(arguments, strict=True, extra="forbid")
        except ValidationError as exc:
            raise ValueError(f"decode {self._type_name}: {_describe(exc)}") from exc

    # The validator, for text already known to be one I-JSON document (the value is dropped).
    validate_checked_ijson = decode_checked_ijson

    def raw_check(self) -> Callable[..., Any] | None:
        """pydantic-core's own ``validate_json``, with no frame of ours around it, or None
        when a float overflow must be looked for first. Call it with ``strict=True,
        extra="forbid"`` (a ``functools.partial`` merging them costs more than our frame).

        It raises pydantic's error, not this decoder's: a caller takes its success as the
        verdict and, on any exception, calls :meth:`validate_checked_ijson` for the refusal
        (``Contract.prepare``'s hot path; the decode is deterministic, so both agree).
        """
        if self._check_floats:
            return None
        return self._validate_json

    def __call__(self, arguments: bytes) -> None:
        """Validate without keeping the value: the input-validator contract."""
        self.decode(arguments)

    def __repr__(self) -> str:
        return f"<strict decoder for {self._type_name}>"


class Func:
    """A tool made from a typed ``def`` or ``async def`` that takes one argument.

    Synchronous functions run in a worker thread (:func:`asyncio.to_thread`) so they never
    block the event loop; context variables are copied into that thread. Cancellation requested
    before the call skips the function. Once dispatched, the function owns the outcome: an
    ``async def`` sees the cancellation at its next ``await`` and may handle it, while a thread
    cannot be interrupted, so it runs to its end and a cancellation meanwhile discards its result. A ``str`` result
    (including ``str`` subclasses such as ``StrEnum``) becomes a text output, ``""`` the empty
    output; anything else becomes JSON details encoded by pydantic (``5`` gives details ``5``).
    Exceptions raised by the function propagate unchanged.

    Args:
        function: Takes exactly one argument annotated with a pydantic model, a dataclass or a
            ``typing_extensions.TypedDict``.
        name: The tool name (``^[A-Za-z0-9_-]{1,64}$``).
        description: What the tool does, for the model.

    Raises:
        InvalidToolError: The function's shape or input type is unusable, or the definition is
            invalid; the message names the offending type or value.
    """

    __slots__ = ("__weakref__", "_decoder", "_definition", "_function", "_is_async", "_serialize")

    def __init__(self, function: Callable[[Any], Any], *, name: str, description: str = "") -> None:
        if function is None:
            raise InvalidToolError("function is None")
        if not callable(function):
            raise InvalidToolError(f"function must be callable, got {type(function).__qualname__}")
        input_type, return_type = _signature_types(function)
        type_name = _type_name(input_type)
        try:
            adapter: TypeAdapter[Any] = TypeAdapter(input_type)
            derived = adapter.json_schema(mode="validation")
        except Exception as exc:  # pydantic raises several unrelated types here
            raise InvalidToolError(
                f"jsonschema: invalid schema: derive {type_name}: {exc}"
            ) from exc
        try:
            schema = CompiledSchema.parse(_schema_bytes(derived))
        except (SchemaError, ValueError) as exc:
            raise InvalidToolError(
                f"jsonschema: invalid schema: derive {type_name}: {exc}"
            ) from exc
        definition = Definition(name=name, description=description, input_schema=schema.canonical)
        try:
            definition.validate()
        except InvalidDefinitionError as exc:
            raise InvalidToolError(f"definition: {exc}") from exc
        self._definition = definition
        self._decoder = _StrictDecoder(
            adapter, type_name, check_floats=_may_hold_floats(_close_objects(derived))
        )
        self._function = function
        self._is_async = _is_coroutine_function(function)
        self._serialize = _serializer(return_type)

    def definition(self) -> Definition:
        """The definition with the canonical schema derived from the input type."""
        return self._definition

    def input_validator(self) -> Callable[[bytes], None]:
        """The strict decoder, which captures neither this ``Func`` nor its function."""
        return self._decoder

    async def call(self, invocation: Invocation) -> Result:
        """Decode the arguments, run the function once, and encode its result.

        Raises:
            asyncio.CancelledError: Cancellation was requested before the function started.
            ToolError: ``tool: decode function arguments: ...`` (only for an invocation the
                validator never saw) or ``tool: encode function result: ...``.
            Exception: Whatever the function raised, unchanged.
        """
        if not isinstance(invocation, Invocation):
            raise InvalidInvocationError(
                f"Func.call needs an Invocation, got {type(invocation).__qualname__}"
            )
        try:
            value = self._decoder.decode(invocation.arguments)
        except ValueError as exc:
            raise ToolError(f"tool: decode function arguments: {exc}") from exc
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise asyncio.CancelledError()
        if self._is_async:
            result = await self._function(value)
        else:
            result = await asyncio.to_thread(self._function, value)
        return Result(output=self._encode(result))

    def _encode(self, result: object) -> Output:
        if isinstance(result, str):
            return Output.text_output(str.__str__(result))
        try:
            return Output.json_output(self._serialize(result))
        except Exception as exc:
            raise ToolError(f"tool: encode function result: {exc}") from exc

    def __repr__(self) -> str:
        return f"Func(name={self._definition.name!r})"


def func_tool(*, name: str, description: str = "") -> Callable[[Callable[[Any], Any]], Func]:
    """Decorator form of :class:`Func`: ``@func_tool(name="add")`` replaces the function.

    Raises:
        InvalidToolError: As :class:`Func` does, when the decorated function is unusable.
    """

    def decorate(function: Callable[[Any], Any]) -> Func:
        return Func(function, name=name, description=description)

    return decorate


def _signature_types(function: Callable[..., Any]) -> tuple[Any, Any]:
    """Return (input type, return annotation or ``None``) of a one-argument function."""
    label = getattr(function, "__qualname__", type(function).__qualname__)
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError) as exc:
        raise InvalidToolError(f"function {label} has no inspectable signature: {exc}") from exc
    parameters = tuple(signature.parameters.values())
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if len(parameters) != 1 or parameters[0].kind not in positional:
        raise InvalidToolError(
            f"function {label} must take exactly one positional argument, got ({signature})"
        )
    target = (
        function
        if inspect.isfunction(function) or inspect.ismethod(function)
        else type(function).__call__
    )
    try:
        hints = typing.get_type_hints(target)
    except Exception as exc:
        raise InvalidToolError(f"function {label}: cannot resolve type hints: {exc}") from exc
    parameter = parameters[0].name
    if parameter not in hints:
        raise InvalidToolError(f"function {label}: argument {parameter!r} has no type annotation")
    input_type = hints[parameter]
    if not _is_object_type(input_type):
        raise InvalidToolError(
            f"tool: function input type {_type_name(input_type)} must be a pydantic model, "
            "dataclass or TypedDict"
        )
    return input_type, hints.get("return")


def _is_object_type(candidate: object) -> bool:
    # typing_extensions' check also recognises typing.TypedDict (pydantic then explains that
    # on Python 3.11 it needs the typing_extensions one).
    if typing_extensions.is_typeddict(candidate):
        return True
    if not isinstance(candidate, type):
        return False
    return issubclass(candidate, BaseModel) or dataclasses.is_dataclass(candidate)


def _type_name(annotation: object) -> str:
    if isinstance(annotation, type):
        return annotation.__qualname__
    return repr(annotation)


def _is_coroutine_function(function: Callable[..., Any]) -> bool:
    if inspect.iscoroutinefunction(function):
        return True
    if inspect.isfunction(function) or inspect.ismethod(function):
        return False
    return inspect.iscoroutinefunction(type(function).__call__)


def _serializer(return_type: Any) -> Callable[[object], bytes]:
    """Encode with the declared result type when there is one, else by runtime type."""
    if return_type is None or return_type is Any or return_type is object:
        return pydantic_core.to_json
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(return_type)
    except Exception as exc:
        raise InvalidToolError(
            f"function result type {_type_name(return_type)} cannot be encoded as JSON: {exc}"
        ) from exc
    return adapter.dump_json


def _schema_bytes(derived: dict[str, Any]) -> bytes:
    """Close every object schema and inline a root ``$ref`` so the root is an object."""
    closed = _close_objects(derived)
    reference = closed.get("$ref")
    definitions = closed.get("$defs", {})
    if "type" not in closed and isinstance(reference, str) and reference.startswith("#/$defs/"):
        target = definitions.get(reference.removeprefix("#/$defs/"))
        if isinstance(target, dict):
            closed = {**target, "$defs": definitions}
    return json.dumps(closed, ensure_ascii=False, allow_nan=False).encode()


def _close_objects(schema: Any) -> Any:
    """Return ``schema`` with ``additionalProperties: false`` on every structured object.

    Only nodes with ``properties`` (models, dataclasses, ``TypedDict``) are closed; a
    ``dict[str, X]`` field keeps its ``additionalProperties`` schema.
    """
    if not isinstance(schema, dict):
        return schema
    closed: dict[str, Any] = {}
    for keyword, value in schema.items():
        if keyword in _SUBSCHEMA:
            closed[keyword] = _close_objects(value)
        elif keyword in _SUBSCHEMA_LISTS and isinstance(value, list):
            closed[keyword] = [_close_objects(item) for item in value]
        elif keyword in _SUBSCHEMA_MAPS and isinstance(value, dict):
            closed[keyword] = {key: _close_objects(item) for key, item in value.items()}
        else:
            closed[keyword] = value
    if "properties" in closed:
        closed["additionalProperties"] = False
    return closed


def _refuse_float_overflow(arguments: bytes, type_name: str) -> None:
    """Refuse numbers no float can hold (``1e999``), which pydantic would turn into ``inf``.

    I-JSON deliberately does not range-check numbers; typed decoding does, as Go's does.
    """

    def finite(lexeme: str) -> float:
        value = float(lexeme)
        if math.isinf(value):
            shown = lexeme if len(lexeme) <= 40 else f"{lexeme[:37]}..."
            raise ValueError(f"decode {type_name}: number {shown} is out of range for a float")
        return value

    # Integers are Python ints of any size; only the typed field can bound them.
    json.loads(arguments, parse_float=finite, parse_int=str)


_COMBINATORS = frozenset({"$ref", "anyOf", "oneOf", "allOf", "enum", "const"})


def _may_hold_floats(schema: Any) -> bool:
    """Whether a value the derived schema admits could contain a JSON float.

    True for a ``number`` type anywhere, or an untyped subschema (``Any``), which admits any
    JSON value. Integer-, string- and bool-only inputs then skip the float-overflow check.
    """
    if schema is True:
        return True
    if not isinstance(schema, dict):
        return False
    declared = schema.get("type")
    if declared is None and not _COMBINATORS.intersection(schema):
        return True
    if declared == "number" or (isinstance(declared, list) and "number" in declared):
        return True
    for keyword, value in schema.items():
        if keyword in _SUBSCHEMA:
            children: list[Any] = [value]
        elif keyword in _SUBSCHEMA_LISTS and isinstance(value, list):
            children = value
        elif keyword in _SUBSCHEMA_MAPS and isinstance(value, dict):
            children = list(value.values())
        else:
            continue
        if any(_may_hold_floats(child) for child in children):
            return True
    return False


def _describe(error: ValidationError) -> str:
    """One line per pydantic error: ``loc: message``."""
    parts = []
    for item in error.errors(include_url=False):
        location = ".".join(str(part) for part in item["loc"])
        parts.append(f"{location}: {item['msg']}" if location else item["msg"])
    return "; ".join(parts)
