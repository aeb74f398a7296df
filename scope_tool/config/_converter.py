"""The data converter every client and worker of scope-tool must share.

Temporal's default JSON converter turns ``bytes`` into arrays of numbers and flattens nested
dataclasses with ``dataclasses.asdict``, which would lose an :class:`~scope_tool.Output`'s own
encoding. This one keeps raw JSON readable in the Web UI and exact:

* ``bytes`` (always UTF-8 JSON text here) travel as a JSON string and come back as the same bytes;
* an :class:`~scope_tool.Output` travels as its own ``to_json()`` text and is rebuilt with
  ``Output.from_json`` (so it is validated again on the way in);
* dataclasses are encoded one level at a time, so the rules above apply at any depth; they are
  decoded as Temporal does, with each class's field types resolved once per process instead of
  on every payload (``typing.get_type_hints`` evaluates every annotation of a module written with
  ``from __future__ import annotations`` again each time: most of a wire value's decoding time).

Everything else is Temporal's default behaviour, so values of other shapes still work.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from typing import Any

from temporalio.client import Client
from temporalio.converter import (
    AdvancedJSONEncoder,
    CompositePayloadConverter,
    DataConverter,
    DefaultFailureConverter,
    DefaultFailureConverterWithEncodedAttributes,
    DefaultPayloadConverter,
    JSONPlainPayloadConverter,
    JSONTypeConverter,
    value_to_type,
)

from scope_tool import Output
from scope_tool.config.codec import (
    EncryptedPayloadGuard,
    UndecryptablePayloadGuard,
    compose_codecs,
    contains_encryption,
    encryption_codec_from_environment,
    marking_undecryptable,
)

__all__ = [
    "DATA_CONVERTER",
    "ScopeToolPayloadConverter",
    "for_workflow_worker",
    "with_scope_tool_converter",
]


class _Encoder(AdvancedJSONEncoder):
    def default(self, o: Any) -> Any:
        if isinstance(o, Output):
            return o.to_json().decode("utf-8")
        if isinstance(o, bytes | bytearray | memoryview):
            try:
                return bytes(o).decode("utf-8")
            except UnicodeDecodeError:
                return list(bytes(o))
        if dataclasses.is_dataclass(o) and not isinstance(o, type):
            return {field.name: getattr(o, field.name) for field in dataclasses.fields(o)}
        return super().default(o)


class _TypeConverter(JSONTypeConverter):
    def to_typed_value(self, hint: type, value: Any) -> Any:
        if hint is bytes:
            if isinstance(value, str):
                return value.encode("utf-8")
            if isinstance(value, list):
                return bytes(value)
            raise TypeError(f"expected JSON text for bytes, got {type(value).__name__}")
        if hint is Output:
            if not isinstance(value, str):
                raise TypeError(f"expected Output JSON text, got {type(value).__name__}")
            return Output.from_json(value.encode("utf-8"))
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            return self._dataclass(hint, value)
        return JSONTypeConverter.Unhandled

    def _dataclass(self, hint: type, value: Any) -> Any:
        """Temporal's dataclass decoding (same checks, same errors), field types cached."""
        if not isinstance(value, dict):
            raise TypeError(f"Cannot convert to dataclass {hint}, value is {type(value)} not dict")
        converters = [self]
        init_values: dict[str, Any] = {}
        later: dict[str, Any] = {}
        for name, field_hint, init in _fields(hint):
            field_value = value.get(name, dataclasses.MISSING)
            if field_value is dataclasses.MISSING:
                continue  # the constructor raises for a missing required field
            try:
                converted = value_to_type(field_hint, field_value, converters)
            except Exception as err:
                raise TypeError(f"Failed converting field {name} on dataclass {hint}") from err
            (init_values if init else later)[name] = converted
        obj = hint(**init_values)
        for name, field_value in later.items():
            object.__setattr__(obj, name, field_value)
        return obj


@functools.lru_cache(maxsize=512)  # bounded: a sandboxed worker makes classes per run
def _fields(cls: type) -> tuple[tuple[str, Any, bool], ...]:
    """``cls``'s fields as (name, resolved type, passed to ``__init__``), resolved once."""
    hints = typing.get_type_hints(cls)
    return tuple((field.name, hints[field.name], field.init) for field in dataclasses.fields(cls))


class ScopeToolPayloadConverter(CompositePayloadConverter):
    """Temporal's default payload converters with the JSON one replaced as described above."""

    def __init__(self) -> None:
        json_converter = JSONPlainPayloadConverter(
            encoder=_Encoder, custom_type_converters=[_TypeConverter()]
        )
        super().__init__(
            *(
                json_converter if isinstance(each, JSONPlainPayloadConverter) else each
                for each in DefaultPayloadConverter.default_encoding_payload_converters
            ),
            EncryptedPayloadGuard(),  # a sealed payload without keys: a clear error
            UndecryptablePayloadGuard(),  # one a workflow worker could not open: its error
        )


DATA_CONVERTER = dataclasses.replace(
    DataConverter.default, payload_converter_class=ScopeToolPayloadConverter
)
"""Pass this as ``data_converter`` to ``Client.connect`` (``ToolCalls.connect`` does)."""


def with_scope_tool_converter(client: Client) -> Client:
    """``client`` itself if it already converts and encrypts as scope-tool needs, else a copy.

    The copy shares the connection and keeps the client's own payload codec and failure
    converter; it swaps in :class:`ScopeToolPayloadConverter` and, when
    ``SCOPE_TOOL_ENCRYPTION_KEYS`` (or ``_FILE``) is set, chains the encryption codec after the
    client's codec (see :mod:`scope_tool.config.codec`).

    Raises:
        EncryptionConfigError: the encryption setting is malformed.
    """
    converter = client.data_converter
    if converter.payload_converter_class is not ScopeToolPayloadConverter:
        converter = dataclasses.replace(
            converter, payload_converter_class=ScopeToolPayloadConverter
        )
    if not contains_encryption(converter.payload_codec):
        encryption = encryption_codec_from_environment()
        if encryption is not None:
            converter = dataclasses.replace(
                converter,
                payload_codec=compose_codecs(converter.payload_codec, encryption),
                # Failure messages and stack traces become payloads too, so they are sealed.
                failure_converter_class=(
                    DefaultFailureConverterWithEncodedAttributes
                    if converter.failure_converter_class is DefaultFailureConverter
                    else converter.failure_converter_class
                ),
            )
    if converter is client.data_converter:
        return client
    config = client.config()
    config["data_converter"] = converter
    return Client(**config)


def for_workflow_worker(client: Client) -> Client:
    """``client`` (already through :func:`with_scope_tool_converter`) for a workflow worker.

    Its encryption codec marks payloads it cannot open instead of raising, so one signal sealed
    with other keys cannot fail every workflow task of a call (see
    :class:`~scope_tool.config.codec.MarkUndecryptable`).
    """
    converter = client.data_converter
    codec = marking_undecryptable(converter.payload_codec)
    if codec is converter.payload_codec:
        return client
    config = client.config()
    config["data_converter"] = dataclasses.replace(converter, payload_codec=codec)
    return Client(**config)
