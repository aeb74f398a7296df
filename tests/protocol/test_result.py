"""Result: completes or requests input, never both; JSON round trip."""

from __future__ import annotations

import dataclasses

import pytest

from scope_tool._input_request import InputRequest
from scope_tool._output import Output, TextBlock
from scope_tool._result import Result
from scope_tool.errors import InvalidResultError


def request() -> InputRequest:
    return InputRequest(prompt=b'"ok?"', response_schema=b'{"type":"boolean"}', state=b"{}")


def test_zero_result_completes_with_empty_output():
    result = Result()
    assert result.output == Output()
    assert result.input_request is None
    assert result.completed


def test_completed_and_suspended_results():
    assert Result(output=Output.text_output("5")).output.text() == "5"
    suspended = Result(input_request=request())
    assert not suspended.completed
    assert suspended.output == Output()
    # The zero output beside an input request is fine: it is "no output".
    assert Result(output=Output(), input_request=request()) == suspended


def test_both_output_and_input_request_are_refused():
    with pytest.raises(InvalidResultError) as caught:
        Result(output=Output.text_output("done"), input_request=request())
    assert str(caught.value) == (
        "tool: invalid result: an input request carries no completed output"
    )
    with pytest.raises(InvalidResultError):
        Result(output=Output.json_output(b"null"), input_request=request())


def test_wrong_types_are_refused():
    with pytest.raises(InvalidResultError, match="output must be an Output"):
        Result(output="5")  # type: ignore[arg-type]
    with pytest.raises(InvalidResultError, match="input_request must be an InputRequest"):
        Result(input_request={"prompt": 1})  # type: ignore[arg-type]


def test_frozen_and_hashable():
    result = Result(output=Output(content=(TextBlock("a"),)))
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.output = Output()  # type: ignore[misc]
    assert hash(result) == hash(Result(output=Output.text_output("a")))


@pytest.mark.parametrize(
    "result",
    [Result(), Result(output=Output.json_output(b' {"a": 1} ')), Result(input_request=request())],
)
def test_round_trip_is_byte_exact(result):
    encoded = result.to_json()
    assert Result.from_json(encoded) == result
    assert Result.from_json(encoded).to_json() == encoded


def test_json_shape():
    assert Result().to_json() == b'{"output":{}}'
    assert Result(input_request=request()).to_json().startswith(b'{"input_request":{"prompt":')


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (b"[]", "must be a JSON object"),
        (b'{"x":1}', 'unknown member "x"'),
        (b'{"output":{"content":1}}', '"content" must be an array'),
        (b'{"input_request":{"prompt":1}}', 'missing member "response_schema"'),
        (
            b'{"output":{"content":[{"type":"text","text":"a"}]},'
            b'"input_request":{"prompt":1,"response_schema":true,"state":1}}',
            "an input request carries no completed output",
        ),
    ],
)
def test_from_json_is_strict(text, message):
    with pytest.raises(InvalidResultError) as caught:
        Result.from_json(text)
    assert message in str(caught.value)
