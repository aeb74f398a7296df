"""Asking for external input: :class:`InputRequest` and its answer, :class:`Continuation`.

A resumable tool returns ``Result(input_request=InputRequest(...))`` instead of completing.
The driving runtime commits the request (its :meth:`InputRequest.to_json` bytes), waits for
an answer, turns it into a :class:`Continuation` with :meth:`InputRequest.continuation`
(which validates the answer against the request's schema) and passes it to
``Contract.prepare`` for the same call. Only that method can make a :class:`Continuation`,
so a tool that receives one knows the answer was checked against its own request.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from scope_tool._ijson import (
    MAX_INPUT_BYTES,
    IJSONError,
    check_ijson,
)
from scope_tool._json_form import closed_object_model, json_text_bytes, known_members
from scope_tool._read_only import ReadOnly
from scope_tool._schema import CompiledSchema, SchemaError, SchemaValidationError
from scope_tool._schema_check import SchemaCheck
from scope_tool._sealed import Immutable, Sealed, mint_sealed
from scope_tool.errors import InvalidInputRequestError

__all__ = ["Continuation", "InputRequest"]

_MEMBERS: Final = ("prompt", "response_schema", "state")


def _json_bytes(value: object, what: str) -> bytes:
    raw = json_text_bytes(value)
    if raw is not None:
        return raw
    raise InvalidInputRequestError(f"{what} must be JSON bytes or str, not {type(value).__name__}")


def _document(value: object, what: str) -> bytes:
    """One I-JSON document of at most MAX_INPUT_BYTES, or InvalidInputRequestError."""
    raw = _json_bytes(value, what)
    if len(raw) > MAX_INPUT_BYTES:
        raise InvalidInputRequestError(f"{what} exceeds {MAX_INPUT_BYTES} bytes")
    try:
        check_ijson(raw)
    except IJSONError as exc:
        raise InvalidInputRequestError(
            f"{what} is not one valid RFC 7493 JSON document: {exc}"
        ) from exc
    return raw


def _compiled(schema: object) -> CompiledSchema:
    if isinstance(schema, CompiledSchema):
        return schema
    if isinstance(schema, Mapping):
        try:
            schema = json.dumps(schema, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        except (TypeError, ValueError) as exc:
            raise InvalidInputRequestError(f"response schema is not JSON: {exc}") from exc
    raw = _json_bytes(schema, "response schema")
    try:
        return CompiledSchema.parse(raw)
    except SchemaError as exc:
        raise InvalidInputRequestError(f"response schema: {exc}") from exc


class InputRequest(Immutable):
    """A frozen re-entry checkpoint: what to ask, the answer's contract, and the tool's state.

    Validated at construction (:class:`~scope_tool.errors.InvalidInputRequestError`):
    ``prompt`` and ``state`` are one I-JSON document each, at most ``MAX_INPUT_BYTES``;
    ``response_schema`` compiles (it is stored canonical). A tool must request input before
    any external effect, or keep enough in ``state`` to re-enter safely.

    Args:
        prompt: JSON shown to whoever answers (bytes or str), kept byte-exact.
        response_schema: JSON Schema of the answer: bytes, str, a Mapping or a
            ``CompiledSchema``.
        state: The tool's own checkpoint (JSON), handed back in the continuation.
    """

    __slots__ = ("_prompt", "_schema", "_state")

    _prompt: bytes
    _schema: CompiledSchema
    _state: bytes

    def __init__(self, *, prompt: bytes | str, response_schema: object, state: bytes | str) -> None:
        checked_prompt = _document(prompt, "prompt")
        checked_schema = _compiled(response_schema)
        checked_state = _document(state, "state")
        self._set_slots(_prompt=checked_prompt, _schema=checked_schema, _state=checked_state)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, InputRequest):
            return NotImplemented
        return (self._prompt, self._schema.canonical, self._state) == (
            other._prompt,
            other._schema.canonical,
            other._state,
        )

    def __hash__(self) -> int:
        return hash((self._prompt, self._schema.canonical, self._state))

    def __repr__(self) -> str:
        return (
            f"InputRequest(prompt={self._prompt!r}, "
            f"response_schema={self._schema.canonical!r}, state={self._state!r})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_input_request, (self._prompt, self._schema.canonical, self._state))

    @property
    def prompt(self) -> bytes:
        """The prompt's exact JSON bytes."""
        return self._prompt

    @property
    def response_schema(self) -> bytes:
        """The answer's JSON Schema, canonical JSON bytes."""
        return self._schema.canonical

    @property
    def state(self) -> bytes:
        """The tool's checkpoint, exact JSON bytes."""
        return self._state

    def continuation(self, response: bytes | str) -> Continuation:
        """Validate an answer to this exact request and freeze it with the state.

        Raises:
            InvalidInputRequestError: the response exceeds ``MAX_INPUT_BYTES``, is not one
                I-JSON document, or does not satisfy the response schema (the schema's
                message is kept in the detail).
        """
        raw = _json_bytes(response, "response")
        if len(raw) > MAX_INPUT_BYTES:
            raise InvalidInputRequestError(f"response exceeds {MAX_INPUT_BYTES} bytes")
        try:
            self._schema.validate(raw)
        except SchemaValidationError as exc:
            raise InvalidInputRequestError(f"response: {exc}") from exc
        return Continuation._freeze(state=self._state, response=raw)

    def check_response(self, response: bytes, *, max_steps: int | None = None) -> SchemaCheck:
        """The schema's verdict on ``response`` within ``max_steps`` (see ``CompiledSchema.check``).

        Workflow code checks answers with a budget so no answer can stall a workflow task; an
        over-budget verdict is finished by an activity with no budget. The size limit is the
        caller's (:meth:`continuation` checks it); the I-JSON check is made here, in the same
        parse as the values the schema needs.

        Raises:
            IJSONError: ``response`` is not one I-JSON document (the message says why).
        """
        return self._schema.check_json(response, max_steps=max_steps)

    def to_json(self) -> bytes:
        """``{"prompt":…,"response_schema":…,"state":…}`` with the raw bytes spliced in.

        :meth:`from_json` gives back an equal request, and ``to_json`` of that is the same
        bytes: this is what the durable runtime commits.
        """
        return b"".join(
            (
                b'{"prompt":',
                self._prompt,
                b',"response_schema":',
                self._schema.canonical,
                b',"state":',
                self._state,
                b"}",
            )
        )

    @classmethod
    def from_json(cls, data: bytes | str) -> InputRequest:
        """Decode strictly and atomically: exactly the three members, each valid.

        Raises:
            InvalidInputRequestError: the text is not one I-JSON object, a member is
                missing or unknown, or the request it holds is invalid.
        """
        members = known_members(
            _json_bytes(data, "input request JSON"),
            allowed=_MEMBERS,
            what="input request JSON",
            error=InvalidInputRequestError,
        )
        for key in _MEMBERS:
            if key not in members:
                raise InvalidInputRequestError(
                    f"input request JSON: missing member {json.dumps(key)}"
                )
        return cls(
            prompt=members["prompt"],
            response_schema=members["response_schema"],
            state=members["state"],
        )

    @classmethod
    def json_schema_model(cls) -> dict[str, Any]:
        """The JSON Schema (2020-12) of an input request's JSON form, as a fresh dict."""
        properties = {"prompt": {}, "response_schema": {"type": ["object", "boolean"]}, "state": {}}
        return closed_object_model("InputRequest", properties, required=_MEMBERS)


def _rebuild_input_request(prompt: bytes, response_schema: bytes, state: bytes) -> InputRequest:
    return InputRequest(prompt=prompt, response_schema=response_schema, state=state)


class Continuation(Sealed):
    """The checkpoint and validated answer for one logical call.

    Only :meth:`InputRequest.continuation` makes one (calling the class raises
    :class:`TypeError`), so holding a ``Continuation`` proves the response was checked
    against the request that carried this state. Immutable, compared by value.
    """

    __slots__ = ("_response", "_state")

    _response: bytes
    _state: bytes

    _made_by = "InputRequest.continuation(response) to validate an answer"

    state: ReadOnly[bytes] = ReadOnly("The requesting tool's checkpoint, exact JSON bytes.")
    response: ReadOnly[bytes] = ReadOnly("The validated answer, exact JSON bytes.")

    @classmethod
    def _freeze(cls, *, state: bytes, response: bytes) -> Continuation:
        return mint_sealed(cls, _state=state, _response=response)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Continuation):
            return NotImplemented
        return (self._state, self._response) == (other._state, other._response)

    def __hash__(self) -> int:
        return hash((self._state, self._response))

    def __repr__(self) -> str:
        return f"Continuation(state={self._state!r}, response={self._response!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_continuation, (self._state, self._response))


def _rebuild_continuation(state: bytes, response: bytes) -> Continuation:
    # Unpickling restores a continuation that was validated when it was first made.
    return Continuation._freeze(state=state, response=response)
