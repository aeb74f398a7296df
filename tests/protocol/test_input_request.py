"""InputRequest and Continuation: validation at construction, answers, sealing, JSON."""

from __future__ import annotations

import json
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scope_tool._ijson import MAX_INPUT_BYTES
from scope_tool._input_request import Continuation, InputRequest
from scope_tool._result import Result
from scope_tool._schema import CompiledSchema
from scope_tool.errors import InvalidInputRequestError

BOOLEAN = b'{"type":"boolean"}'


def approve() -> InputRequest:
    return InputRequest(
        prompt=b'"Approve the write?"', response_schema=BOOLEAN, state=b'{"record":"draft"}'
    )


def refused(make, message: str) -> str:
    with pytest.raises(InvalidInputRequestError) as caught:
        make()
    assert str(caught.value).startswith("tool: invalid input request: ")
    assert message in str(caught.value), str(caught.value)
    return str(caught.value)


def sized(size: int) -> bytes:
    """A JSON string document of exactly ``size`` bytes."""
    return b'"' + b"x" * (size - 2) + b'"'


def test_seed_example(capsys):
    request = approve()
    result = Result(input_request=request)
    assert result.input_request is not None
    continuation = result.input_request.continuation(b"true")
    print(continuation.state.decode(), continuation.response.decode())
    assert capsys.readouterr().out == '{"record":"draft"} true\n'


def test_accessors_keep_bytes_and_canonical_schema():
    request = InputRequest(
        prompt=' {"q": "ok?"} ', response_schema={"type": "boolean"}, state=b"[1, 2.50]"
    )
    assert request.prompt == b' {"q": "ok?"} '
    assert request.state == b"[1, 2.50]"
    assert request.response_schema == BOOLEAN
    spaced = InputRequest(prompt=b"1", response_schema=b' { "type" : "boolean" } ', state=b"1")
    assert spaced.response_schema == BOOLEAN
    compiled = CompiledSchema.parse(BOOLEAN)
    assert (
        InputRequest(prompt=b"1", response_schema=compiled, state=b"1").response_schema == BOOLEAN
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"prompt": b""}, "prompt is not one valid RFC 7493 JSON document: document is empty"),
        ({"prompt": b'{"a":1,"a":2}'}, "prompt is not one valid RFC 7493 JSON document: duplicate"),
        ({"prompt": '"\\ud800"'}, "lone surrogate"),
        ({"prompt": 5}, "prompt must be JSON bytes or str"),
        ({"state": b""}, "state is not one valid RFC 7493 JSON document"),
        ({"state": b"{} {}"}, "state is not one valid RFC 7493 JSON document: trailing data"),
        ({"state": b"\xff"}, "invalid UTF-8 at byte 0"),
        (
            {"response_schema": b""},
            "response schema: jsonschema: invalid schema: document is empty",
        ),
        (
            {"response_schema": b'{"type":12}'},
            "response schema: jsonschema: invalid schema: compile:",
        ),
        ({"response_schema": b'{"$ref":"https://example.com/x"}'}, "remote references"),
        ({"response_schema": {"bad": float("inf")}}, "response schema is not JSON"),
    ],
)
def test_construction_validates(kwargs, message):
    arguments = {"prompt": b'"ok?"', "response_schema": BOOLEAN, "state": b"{}"} | kwargs
    refused(lambda: InputRequest(**arguments), message)


def test_size_limits_at_the_boundary():
    exactly = sized(MAX_INPUT_BYTES)
    request = InputRequest(prompt=exactly, response_schema=b'{"type":"string"}', state=exactly)
    assert request.continuation(exactly).response == exactly
    over = sized(MAX_INPUT_BYTES + 1)
    refused(
        lambda: InputRequest(prompt=over, response_schema=BOOLEAN, state=b"{}"),
        "prompt exceeds 1048576 bytes",
    )
    refused(
        lambda: InputRequest(prompt=b"1", response_schema=BOOLEAN, state=over),
        "state exceeds 1048576 bytes",
    )
    refused(lambda: request.continuation(over), "response exceeds 1048576 bytes")


def test_requests_are_immutable_values():
    request = approve()
    with pytest.raises(AttributeError, match="immutable"):
        request._prompt = b"1"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        request.prompt = b"1"  # type: ignore[misc]
    assert request == approve()
    assert hash(request) == hash(approve())
    assert request != InputRequest(prompt=b'"Approve?"', response_schema=BOOLEAN, state=b"{}")
    assert pickle.loads(pickle.dumps(request)) == request


# --- answers -----------------------------------------------------------------------------------


def test_continuation_validates_the_response():
    request = approve()
    assert request.continuation("false").response == b"false"
    refused(lambda: request.continuation(b"1"), "response: jsonschema: validate value: (root): ")
    refused(
        lambda: request.continuation(b"tru"),
        "response: jsonschema: value must be one valid RFC 7493 JSON document",
    )
    refused(lambda: request.continuation(b""), "value must be one valid RFC 7493 JSON document")
    refused(lambda: request.continuation(None), "response must be JSON bytes or str")  # type: ignore[arg-type]


def test_continuation_carries_the_schema_message_and_pointer():
    request = InputRequest(
        prompt=b"1",
        response_schema=b'{"type":"object","properties":{"n":{"type":"integer"}}}',
        state=b"1",
    )
    message = refused(lambda: request.continuation(b'{"n":"x"}'), "validate value: /n: ")
    assert "integer" in message


def test_continuation_keeps_exact_bytes():
    request = InputRequest(prompt=b"1", response_schema=b'{"type":"number"}', state=b" [1.50] ")
    continuation = request.continuation(b" 1.50 ")
    assert continuation.response == b" 1.50 "
    assert continuation.state == b" [1.50] "


def test_continuation_cannot_be_made_directly():
    with pytest.raises(TypeError, match=r"InputRequest\.continuation"):
        Continuation()
    with pytest.raises(TypeError):
        Continuation(state=b"{}", response=b"true")  # type: ignore[call-arg]


def test_continuations_are_immutable_values():
    first = approve().continuation(b"true")
    with pytest.raises(AttributeError, match="immutable"):
        first._response = b"false"  # type: ignore[misc]
    assert first == approve().continuation(b"true")
    assert first != approve().continuation(b"false")
    assert hash(first) == hash(approve().continuation(b"true"))
    assert pickle.loads(pickle.dumps(first)) == first


# --- JSON --------------------------------------------------------------------------------------


def test_to_json_shape():
    assert approve().to_json() == (
        b'{"prompt":"Approve the write?","response_schema":{"type":"boolean"},'
        b'"state":{"record":"draft"}}'
    )


@pytest.mark.parametrize(
    "request_",
    [
        approve(),
        InputRequest(
            prompt=b' {"q" : "?"} ', response_schema=b'{"type":"string"}', state=b"\n[1e999]\t"
        ),
        InputRequest(prompt='"☃ \\u00e9"', response_schema=b"true", state=b"null"),
    ],
)
def test_round_trip_is_byte_exact(request_):
    encoded = request_.to_json()
    json.loads(encoded)
    decoded = InputRequest.from_json(encoded)
    assert decoded == request_
    assert decoded.to_json() == encoded
    assert decoded.continuation(b'"x"' if b"string" in encoded else b"true")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (b"", "input request JSON: document is empty"),
        (b"[]", "must be a JSON object"),
        (b'{"prompt":1,"prompt":1,"response_schema":true,"state":1}', "duplicate object key"),
        (b'{"prompt":1,"response_schema":true,"state":1,"x":1}', 'unknown member "x"'),
        (b'{"prompt":1,"response_schema":true}', 'missing member "state"'),
        (b'{"response_schema":true,"state":1}', 'missing member "prompt"'),
        (b'{"prompt":1,"state":1}', 'missing member "response_schema"'),
        (b'{"prompt":1,"response_schema":{"type":7},"state":1}', "response schema: jsonschema"),
        (b'{"prompt":1,"response_schema":[],"state":1}', "a schema must be an object or a boolean"),
    ],
)
def test_from_json_is_strict_and_atomic(text, message):
    refused(lambda: InputRequest.from_json(text), message)


def test_json_schema_model_accepts_what_to_json_writes():
    schema = CompiledSchema.parse(json.dumps(InputRequest.json_schema_model()).encode())
    schema.validate(approve().to_json())
    with pytest.raises(ValueError, match="validate value"):
        schema.validate(b'{"prompt":1,"state":1}')


documents = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(st.characters(exclude_categories=["Cs"])),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.text(st.characters(exclude_categories=["Cs"]), max_size=3), inner, max_size=3
        )
    ),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None, database=None)
@given(documents, documents, documents, st.sampled_from([None, 1, 2]))
def test_any_request_round_trips_and_answers(prompt, state, answer, indent):
    request = InputRequest(
        prompt=json.dumps(prompt, indent=indent),
        response_schema=b"{}",
        state=json.dumps(state, indent=indent).encode(),
    )
    assert InputRequest.from_json(request.to_json()) == request
    assert InputRequest.from_json(request.to_json()).to_json() == request.to_json()
    raw_answer = json.dumps(answer, indent=indent).encode()
    continuation = request.continuation(raw_answer)
    assert (continuation.state, continuation.response) == (request.state, raw_answer)
