"""Output, TextBlock, MediaBlock: validation, text projection, byte-exact JSON round trip."""

from __future__ import annotations

import dataclasses
import json
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scope_tool._output import MediaBlock, Output, TextBlock
from scope_tool._schema import CompiledSchema
from scope_tool.errors import InvalidOutputError

PNG = b"\x89PNG\r\n\x1a\n"


def refused(make, message: str) -> None:
    with pytest.raises(InvalidOutputError) as caught:
        make()
    assert str(caught.value).startswith("tool: invalid output: ")
    assert message in str(caught.value)


# --- blocks ------------------------------------------------------------------------------------


def test_text_block_needs_non_empty_text():
    assert TextBlock("hi").text == "hi"
    refused(lambda: TextBlock(""), "text block: text must not be empty")
    refused(lambda: TextBlock(None), "text block: text must be a str")  # type: ignore[arg-type]
    refused(lambda: TextBlock("\udc80"), "text block: text is not valid UTF-8 text")


def test_media_block_needs_a_mime_type_and_exactly_one_source():
    assert MediaBlock("image/png", data=PNG).data == PNG
    assert (
        MediaBlock("image/png", uri="https://example.com/a.png").uri == "https://example.com/a.png"
    )
    assert MediaBlock("image/png", data=bytearray(PNG)).data == PNG
    refused(lambda: MediaBlock("", data=PNG), "media block: mime type must not be empty")
    refused(lambda: MediaBlock("image/png"), "exactly one of data and uri must be set")
    refused(
        lambda: MediaBlock("image/png", data=PNG, uri="https://x"),
        "exactly one of data and uri must be set",
    )
    refused(lambda: MediaBlock("image/png", data=b""), "media block: data must not be empty")
    refused(lambda: MediaBlock("image/png", uri=""), "media block: uri must not be empty")
    refused(lambda: MediaBlock("image/png", data="x"), "data must be bytes")  # type: ignore[arg-type]


def test_blocks_are_frozen_values():
    block = TextBlock("a")
    with pytest.raises(dataclasses.FrozenInstanceError):
        block.text = "b"  # type: ignore[misc]
    assert block == TextBlock("a")
    assert hash(MediaBlock("a/b", uri="u")) == hash(MediaBlock("a/b", uri="u"))


# --- output ------------------------------------------------------------------------------------


def test_zero_output():
    zero = Output()
    assert zero.content == ()
    assert zero.details is None
    assert zero.text() == ""
    assert zero.to_json() == b"{}"
    assert Output(details=b"") == zero  # empty details mean none


def test_content_is_stored_as_a_tuple_and_checked():
    output = Output(content=[TextBlock("a"), MediaBlock("image/png", data=PNG)])
    assert isinstance(output.content, tuple)
    refused(lambda: Output(content=["a"]), "content[0] must be a TextBlock or MediaBlock")  # type: ignore[list-item]
    refused(lambda: Output(content="abc"), "content must be a sequence of blocks")  # type: ignore[arg-type]


def test_details_must_be_one_ijson_document():
    refused(lambda: Output(details=b"{"), "details is not one valid RFC 7493 JSON document")
    refused(lambda: Output(details=b'{"a":1,"a":2}'), "duplicate object key")
    refused(lambda: Output(details=b"1 2"), "trailing data")
    refused(lambda: Output(details=1), "details must be JSON bytes or None")  # type: ignore[arg-type]


def test_output_is_immutable_and_hashable():
    output = Output.text_output("x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        output.details = b"1"  # type: ignore[misc]
    assert hash(output) == hash(Output.text_output("x"))
    assert pickle.loads(pickle.dumps(output)) == output


def test_text_output():
    assert Output.text_output("") == Output()
    assert Output.text_output("5") == Output(content=(TextBlock("5"),))
    refused(lambda: Output.text_output(5), "text must be a str")  # type: ignore[arg-type]


def test_json_output_keeps_bytes_exactly():
    raw = b' {"b": 1,  "a": [1.50, 1e999]} '
    output = Output.json_output(raw)
    assert output.details == raw
    assert output.content == ()
    assert Output.json_output('{"a":"\u00e9"}').details == '{"a":"\u00e9"}'.encode()
    refused(lambda: Output.json_output(b""), "details is not one valid RFC 7493 JSON document")
    refused(lambda: Output.json_output(b"NaN"), "NaN")
    refused(lambda: Output.json_output(b'"\\udfff"'), "lone surrogate")


def test_text_projection():
    assert Output.text_output("hello").text() == "hello"
    assert Output(content=(TextBlock("a"), TextBlock("b"))).text() == "ab"
    assert Output(content=(TextBlock("a"), MediaBlock("image/png", data=PNG))).text() is None
    assert Output(content=(MediaBlock("image/png", uri="u"),)).text() is None
    assert Output.json_output(b'{"n": 5}').text() == '{"n": 5}'
    # Details are the fallback only when content is empty.
    assert Output(content=(TextBlock("t"),), details=b"1").text() == "t"


# --- JSON --------------------------------------------------------------------------------------

EXAMPLES = [
    Output(),
    Output.text_output("5"),
    Output.json_output(b' {"a": [1.0, "x"]} '),
    Output(
        content=(
            TextBlock('quote " back \\ slash \n ☃ \U0001f600'),
            MediaBlock("image/png", data=PNG),
            MediaBlock("application/pdf", uri="https://example.com/a.pdf"),
        ),
        details=b"null",
    ),
]


@pytest.mark.parametrize("output", EXAMPLES)
def test_round_trip_is_byte_exact(output):
    encoded = output.to_json()
    json.loads(encoded)  # plain JSON
    decoded = Output.from_json(encoded)
    assert decoded == output
    assert decoded.to_json() == encoded
    assert Output.from_json(encoded.decode()) == output


def test_json_shape():
    output = Output(content=(TextBlock("a"), MediaBlock("image/png", data=b"A")), details=b"[1]")
    assert output.to_json() == (
        b'{"content":[{"type":"text","text":"a"},'
        b'{"type":"media","mime_type":"image/png","data":"QQ=="}],"details":[1]}'
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (b"", "output JSON: document is empty"),
        (b"[]", "must be a JSON object"),
        (b'{"content":[],"content":[]}', "duplicate object key"),
        (b'{"extra":1}', 'unknown member "extra"'),
        (b'{"content":{}}', '"content" must be an array'),
        (b'{"content":[1]}', "content[0] must be an object"),
        (b'{"content":[{"type":"video"}]}', '"type" must be "text" or "media"'),
        (b'{"content":[{"text":"a"}]}', '"type" must be "text" or "media"'),
        (
            b'{"content":[{"type":"text","text":""}]}',
            "content[0]: text block: text must not be empty",
        ),
        (b'{"content":[{"type":"text","text":"a","uri":"u"}]}', 'unknown member "uri"'),
        (b'{"content":[{"type":"text","text":1}]}', 'member "text" must be a string'),
        (b'{"content":[{"type":"media","mime_type":"a/b"}]}', "exactly one of data and uri"),
        (
            b'{"content":[{"type":"media","mime_type":"a/b","data":"!!"}]}',
            '"data" is not valid base64',
        ),
        (
            b'{"content":[{"type":"media","mime_type":"a/b","data":"QR=="}]}',
            '"data" is not canonical base64',
        ),
        (b'{"content":[{"type":"media","mime_type":"a/b","data":"QQ"}]}', "base64"),
        (b'{"details":{"a":1,"a":2}}', "duplicate object key"),
    ],
)
def test_from_json_is_strict_and_atomic(text, message):
    with pytest.raises(InvalidOutputError) as caught:
        Output.from_json(text)
    assert message in str(caught.value)


def test_json_schema_model_accepts_what_to_json_writes():
    schema = CompiledSchema.parse(json.dumps(Output.json_schema_model()).encode())
    for output in EXAMPLES:
        schema.validate(output.to_json())
    with pytest.raises(ValueError, match="validate value"):
        schema.validate(b'{"content":[{"type":"media","mime_type":"a/b"}]}')


blocks = st.one_of(
    st.builds(TextBlock, st.text(st.characters(exclude_categories=["Cs"]), min_size=1)),
    st.builds(MediaBlock, st.sampled_from(["image/png", "audio/wav"]), data=st.binary(min_size=1)),
    st.builds(
        MediaBlock,
        st.just("text/html"),
        uri=st.text(st.characters(exclude_categories=["Cs"]), min_size=1),
    ),
)
details = st.one_of(
    st.none(),
    st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.text(st.characters(exclude_categories=["Cs"])),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(
                st.text(st.characters(exclude_categories=["Cs"]), max_size=3), inner, max_size=3
            )
        ),
        max_leaves=8,
    ).map(lambda value: json.dumps(value, indent=1).encode()),
)


@settings(max_examples=200, deadline=None, database=None)
@given(st.lists(blocks, max_size=4), details)
def test_any_output_round_trips_byte_exact(content, raw_details):
    output = Output(content=content, details=raw_details)
    encoded = output.to_json()
    assert Output.from_json(encoded) == output
    assert Output.from_json(encoded).to_json() == encoded
