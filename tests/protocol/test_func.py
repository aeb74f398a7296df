"""Func and func_tool: typed function tools (go-reference §2.10 and §4)."""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import enum
import gc
import json
import threading
import typing
import weakref
from typing import Any

import pytest
import typing_extensions
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field

from scope_tool import (
    Func,
    InputValidatingTool,
    InvalidInvocationError,
    InvalidToolError,
    Output,
    Request,
    Result,
    Tool,
    ToolError,
    bind,
    func_tool,
)


class AddInput(BaseModel):
    a: int
    b: int


class Point(BaseModel):
    x: int
    y: int


class Shape(BaseModel):
    name: str
    points: list[Point]
    tags: dict[str, int] = {}
    scale: float = 1.0


class Loose(BaseModel):
    model_config = ConfigDict(extra="allow")
    a: int


@dataclasses.dataclass
class DataInput:
    text: str
    count: int = 1


class TypedInput(typing_extensions.TypedDict):
    city: str


class Colour(enum.StrEnum):
    RED = "red"


class Node(BaseModel):
    value: int
    children: list[Node] = []


class Bounded(BaseModel):
    level: int = Field(ge=0, le=10)


async def add(value: AddInput) -> int:
    return value.a + value.b


async def prepare_and_call(tool: Func, arguments: str) -> Result:
    binding = bind(tool)
    name = binding.contract.name
    return await binding.call(binding.contract.prepare(Request(name=name, arguments=arguments)))


def schema_of(tool: Func) -> dict[str, Any]:
    return json.loads(tool.definition().input_schema)


# --- construction ----------------------------------------------------------------------------


def test_the_seed_add_tool_has_the_derived_canonical_schema():
    tool = Func(add, name="add", description="add two integers")
    definition = tool.definition()
    assert definition.name == "add"
    assert definition.description == "add two integers"
    schema = json.loads(definition.input_schema)
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["a", "b"]
    assert schema["properties"]["a"]["type"] == "integer"
    # canonical: minified, keys sorted
    assert definition.input_schema == bind(tool).contract.definition.input_schema
    assert b" " not in definition.input_schema
    assert isinstance(tool, Tool)
    assert isinstance(tool, InputValidatingTool)


def test_every_object_in_the_schema_is_closed_including_defs():
    schema = schema_of(Func(shape_tool, name="shape"))
    assert schema["additionalProperties"] is False
    point = schema["$defs"]["Point"]
    assert point["additionalProperties"] is False
    # a dict field keeps its value schema
    assert schema["properties"]["tags"]["additionalProperties"] == {"type": "integer"}


def shape_tool(value: Shape) -> str:
    return value.name


def test_a_permissive_model_is_closed_too():
    def loose(value: Loose) -> int:
        return value.a

    schema = schema_of(Func(loose, name="loose"))
    assert schema["additionalProperties"] is False


def test_a_recursive_model_gets_an_object_root():
    def count(value: Node) -> int:
        return len(value.children)

    schema = schema_of(Func(count, name="count"))
    assert schema["type"] == "object"
    assert schema["$defs"]["Node"]["additionalProperties"] is False


def test_dataclass_and_typeddict_inputs_work():
    def shout(value: DataInput) -> str:
        return value.text.upper() * value.count

    def weather(value: TypedInput) -> str:
        return f"sunny in {value['city']}"

    assert schema_of(Func(shout, name="shout"))["additionalProperties"] is False
    assert schema_of(Func(weather, name="weather"))["required"] == ["city"]


class OldTypedDict(typing.TypedDict):
    city: str


@pytest.mark.parametrize(
    ("annotation", "shown"),
    [
        (int, "int"),
        (str, "str"),
        (Any, "Any"),
        (AddInput | None, "AddInput | None"),
        (list[AddInput], "list[test_func.AddInput]"),
        (dict, "dict"),
    ],
)
def test_input_types_that_are_not_objects_are_refused_by_name(annotation, shown):
    def function(value):  # annotated below
        return ""

    function.__annotations__ = {"value": annotation}
    with pytest.raises(InvalidToolError) as caught:
        Func(function, name="bad")
    message = str(caught.value)
    assert message.startswith("tool: invalid tool: tool: function input type ")
    assert message.endswith(" must be a pydantic model, dataclass or TypedDict")
    assert shown in message


def test_typing_typeddict_is_refused_with_pydantic_advice():
    def weather(value: OldTypedDict) -> str:
        return ""

    with pytest.raises(
        InvalidToolError, match=r"derive OldTypedDict: .*typing_extensions\.TypedDict"
    ):
        Func(weather, name="weather")


def test_function_shapes_are_checked():
    with pytest.raises(InvalidToolError, match=r"^tool: invalid tool: function is None$"):
        Func(None, name="x")  # type: ignore[arg-type]
    with pytest.raises(InvalidToolError, match="function must be callable, got int"):
        Func(3, name="x")  # type: ignore[arg-type]

    def two(a: AddInput, b: AddInput) -> str:
        return ""

    def none() -> str:
        return ""

    def unannotated(value):
        return ""

    def keyword_only(*, value: AddInput) -> str:
        return ""

    for function in (two, none, keyword_only):
        with pytest.raises(InvalidToolError, match="must take exactly one positional argument"):
            Func(function, name="x")
    with pytest.raises(InvalidToolError, match="argument 'value' has no type annotation"):
        Func(unannotated, name="x")


def test_unresolvable_hints_are_reported():
    def function(value: NotDefinedAnywhere) -> str:  # type: ignore[name-defined]  # noqa: F821
        return ""

    function.__annotations__ = {"value": "NotDefinedAnywhere"}
    with pytest.raises(InvalidToolError, match="cannot resolve type hints"):
        Func(function, name="x")


@pytest.mark.parametrize("name", ["", "bad name", "x" * 65, "ü"])
def test_the_definition_is_validated(name):
    with pytest.raises(InvalidToolError, match=r"^tool: invalid tool: definition: "):
        Func(add, name=name)


def test_the_decorator_builds_a_func():
    @func_tool(name="add", description="adds")
    async def decorated(value: AddInput) -> int:
        return value.a + value.b

    assert isinstance(decorated, Func)
    assert decorated.definition().name == "add"
    with pytest.raises(InvalidToolError):

        @func_tool(name="broken")
        def broken(value: int) -> int:
            return value


def test_methods_and_callable_objects_work():
    class Adder:
        def __init__(self, offset: int) -> None:
            self.offset = offset

        def method(self, value: AddInput) -> int:
            return value.a + self.offset

        async def __call__(self, value: AddInput) -> int:
            return value.b + self.offset

    adder = Adder(100)
    assert Func(adder.method, name="m").definition().name == "m"
    assert Func(adder, name="c").definition().name == "c"


async def test_methods_and_callable_objects_are_called():
    class Adder:
        def method(self, value: AddInput) -> int:
            return value.a + 100

        async def __call__(self, value: AddInput) -> int:
            return value.b + 100

    adder = Adder()
    assert (
        await prepare_and_call(Func(adder.method, name="m"), '{"a":1,"b":2}')
    ).output.text() == "101"
    assert (await prepare_and_call(Func(adder, name="c"), '{"a":1,"b":2}')).output.text() == "102"


# --- strict admission ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "why"),
    [
        ('{"a":1,"b":2,"c":3}', "unknown member"),
        ('{"a":1}', "missing member"),
        ('{"a":"1","b":2}', "string for int"),
        ('{"a":1.0,"b":2}', "1.0 for int"),
        ('{"a":1e0,"b":2}', "1e0 for int"),
        ('{"a":true,"b":2}', "bool for int"),
        ('{"A":1,"b":2}', "names are case-sensitive"),
        ('{"a":1,"a":2,"b":2}', "duplicate key"),
        ('{"a":NaN,"b":2}', "NaN"),
        ("[1,2]", "not an object"),
    ],
)
def test_prepare_refuses_what_the_strict_decoder_refuses(arguments, why):
    contract = bind(Func(add, name="add")).contract
    with pytest.raises(InvalidInvocationError, match=r"^tool: invalid invocation: arguments: "):
        contract.prepare(Request(name="add", arguments=arguments))


def test_the_validator_alone_is_strict():
    validator = Func(add, name="add").input_validator()
    validator(b'{"a":1,"b":2}')
    for bad in (b'{"a":1,"a":1,"b":2}', b'{"a":1.0,"b":2}', b'{"a":1,"b":2,"z":0}', b"{"):
        with pytest.raises(ValueError):
            validator(bad)


def test_validator_errors_name_the_type_and_field():
    validator = Func(add, name="add").input_validator()
    with pytest.raises(ValueError, match=r"^decode AddInput: a: Input should be a valid integer"):
        validator(b'{"a":"x","b":2}')


def test_nested_unknown_members_are_refused():
    contract = bind(Func(shape_tool, name="shape")).contract
    contract.prepare(Request(name="shape", arguments='{"name":"t","points":[{"x":1,"y":2}]}'))
    with pytest.raises(InvalidInvocationError):
        contract.prepare(
            Request(name="shape", arguments='{"name":"t","points":[{"x":1,"y":2,"z":3}]}')
        )


def test_decoder_only_constraints_are_enforced_by_the_validator():
    def level(value: Bounded) -> int:
        return value.level

    contract = bind(Func(level, name="level")).contract
    contract.prepare(Request(name="level", arguments='{"level":10}'))
    with pytest.raises(InvalidInvocationError):
        contract.prepare(Request(name="level", arguments='{"level":11}'))


def test_the_validator_does_not_keep_the_func_or_the_function_alive():
    def make() -> tuple[Any, weakref.ref[Any], weakref.ref[Any]]:
        async def private(value: AddInput) -> int:
            return value.a

        tool = Func(private, name="private")
        return tool.input_validator(), weakref.ref(tool), weakref.ref(private)

    validator, tool_ref, function_ref = make()
    gc.collect()
    assert tool_ref() is None
    assert function_ref() is None
    validator(b'{"a":1,"b":2}')


def test_the_contract_does_not_keep_the_func_alive():
    async def private(value: AddInput) -> int:
        return value.a

    tool = Func(private, name="private")
    contract = bind(tool).contract
    tool_ref = weakref.ref(tool)
    del tool
    gc.collect()
    assert tool_ref() is None
    contract.prepare(Request(name="private", arguments='{"a":1,"b":2}'))


# --- results ---------------------------------------------------------------------------------


async def test_an_int_result_becomes_json_details():
    result = await prepare_and_call(Func(add, name="add"), '{"a":2,"b":3}')
    assert result.output.details == b"5"
    assert result.output.content == ()
    assert result.output.text() == "5"
    assert result.completed


async def test_string_results_become_text_and_empty_text_the_zero_output():
    def echo(value: DataInput) -> str:
        return value.text

    assert (await prepare_and_call(Func(echo, name="echo"), '{"text":"hi"}')).output == (
        Output.text_output("hi")
    )
    assert (await prepare_and_call(Func(echo, name="echo"), '{"text":""}')).output == Output()


async def test_str_subclasses_are_text():
    def colour(value: DataInput) -> Colour:
        return Colour.RED

    output = (await prepare_and_call(Func(colour, name="colour"), '{"text":""}')).output
    assert output == Output.text_output("red")
    assert type(output.content[0].text) is str  # type: ignore[union-attr]


async def test_structured_and_none_results_are_encoded_by_pydantic():
    def points(value: DataInput) -> list[Point]:
        return [Point(x=1, y=2)] * value.count

    def nothing(value: DataInput) -> None:
        return None

    def untyped(value: DataInput):  # no return annotation
        return {"k": [1, "two", None]}

    result = await prepare_and_call(Func(points, name="points"), '{"text":"","count":2}')
    assert result.output.details == b'[{"x":1,"y":2},{"x":1,"y":2}]'
    assert (
        await prepare_and_call(Func(nothing, name="n"), '{"text":""}')
    ).output.details == b"null"
    untyped_result = await prepare_and_call(Func(untyped, name="u"), '{"text":""}')
    assert untyped_result.output.details == b'{"k":[1,"two",null]}'


async def test_an_unencodable_result_is_an_encode_error():
    def bad(value: DataInput):
        return object()

    with pytest.raises(ToolError, match=r"^tool: encode function result: "):
        await prepare_and_call(Func(bad, name="bad"), '{"text":""}')


async def test_function_exceptions_propagate_unchanged():
    boom = ConnectionError("upstream down")

    async def failing(value: AddInput) -> int:
        raise boom

    with pytest.raises(ConnectionError) as caught:
        await prepare_and_call(Func(failing, name="failing"), '{"a":1,"b":2}')
    assert caught.value is boom


async def test_the_function_receives_the_decoded_value():
    seen: list[Any] = []

    def record(value: Shape) -> str:
        seen.append(value)
        return "ok"

    await prepare_and_call(
        Func(record, name="record"), '{"name":"tri","points":[{"x":1,"y":2}],"scale":2}'
    )
    (value,) = seen
    assert value == Shape(name="tri", points=[Point(x=1, y=2)], scale=2.0)


async def test_sync_functions_run_in_a_worker_thread_with_context():
    marker: contextvars.ContextVar[str] = contextvars.ContextVar("marker")
    seen: dict[str, Any] = {}

    def blocking(value: DataInput) -> str:
        seen["thread"] = threading.current_thread()
        seen["marker"] = marker.get()
        return "done"

    marker.set("caller identity")
    await prepare_and_call(Func(blocking, name="blocking"), '{"text":""}')
    assert seen["thread"] is not threading.main_thread()
    assert seen["marker"] == "caller identity"


async def test_a_sync_function_does_not_block_the_event_loop():
    release = threading.Event()

    def waits(value: DataInput) -> str:
        assert release.wait(10)
        return "released"

    task = asyncio.create_task(prepare_and_call(Func(waits, name="waits"), '{"text":""}'))
    await asyncio.sleep(0.05)  # the loop keeps running while the function blocks
    assert not task.done()
    release.set()
    assert (await task).output.text() == "released"


async def test_async_functions_run_on_the_loop():
    seen: list[threading.Thread] = []

    async def on_loop(value: DataInput) -> str:
        seen.append(threading.current_thread())
        return ""

    await prepare_and_call(Func(on_loop, name="on_loop"), '{"text":""}')
    assert seen == [threading.current_thread()]


async def test_cancellation_requested_before_the_call_skips_the_function():
    calls: list[DataInput] = []

    async def record(value: DataInput) -> str:
        calls.append(value)
        return ""

    binding = bind(Func(record, name="record"))
    invocation = binding.contract.prepare(Request(name="record", arguments='{"text":""}'))

    async def cancelled() -> Result:
        task = asyncio.current_task()
        assert task is not None
        task.cancel()
        return await binding.call(invocation)

    with pytest.raises(asyncio.CancelledError):
        await asyncio.create_task(cancelled())
    assert calls == []


async def test_a_func_always_completes():
    result = await prepare_and_call(Func(add, name="add"), '{"a":0,"b":0}')
    assert result.input_request is None


async def test_calling_a_func_with_a_foreign_invocation_decodes_strictly():
    other = bind(Func(shape_tool, name="shape"))
    invocation = other.contract.prepare(Request(name="shape", arguments='{"name":"t","points":[]}'))
    with pytest.raises(ToolError, match=r"^tool: decode function arguments: decode AddInput"):
        await Func(add, name="add").call(invocation)
    with pytest.raises(InvalidInvocationError, match="needs an Invocation, got dict"):
        await Func(add, name="add").call({})  # type: ignore[arg-type]


class Measurement(BaseModel):
    value: float
    label: str = ""


class Counter(BaseModel):
    count: int


def test_a_float_that_overflows_is_refused_like_go():
    def measure(value: Measurement) -> float:
        return value.value

    contract = bind(Func(measure, name="measure")).contract
    contract.prepare(Request(name="measure", arguments='{"value":1e300}'))
    with pytest.raises(InvalidInvocationError) as caught:
        contract.prepare(Request(name="measure", arguments='{"value":1e999}'))
    assert str(caught.value) == (
        "tool: invalid invocation: arguments: "
        "decode Measurement: number 1e999 is out of range for a float"
    )
    # text that merely looks like an overflowing number is fine
    contract.prepare(Request(name="measure", arguments='{"value":1.5,"label":"1e999"}'))


def test_big_integers_are_python_ints():
    def count(value: Counter) -> int:
        return value.count

    contract = bind(Func(count, name="count")).contract
    big = "1" + "0" * 400
    invocation = contract.prepare(Request(name="count", arguments=f'{{"count":{big}}}'))
    assert invocation.arguments == f'{{"count":{big}}}'.encode()


SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=4)
)


@settings(max_examples=200, deadline=None)
@given(a=st.integers(), b=st.integers())
async def test_any_two_integers_add_exactly(a, b):
    result = await prepare_and_call(Func(add, name="add"), json.dumps({"a": a, "b": b}))
    assert result.output.details == str(a + b).encode()


@settings(max_examples=200, deadline=None)
@given(value=st.dictionaries(st.sampled_from(["a", "b", "c", "A"]), SCALARS, max_size=4))
async def test_admission_matches_the_strict_decode(value):
    contract = bind(Func(add, name="add")).contract
    raw = json.dumps(value)
    expected_ok = set(value) == {"a", "b"} and all(type(item) is int for item in value.values())
    try:
        contract.prepare(Request(name="add", arguments=raw))
        admitted = True
    except InvalidInvocationError:
        admitted = False
    assert admitted == expected_ok, raw


class Loosely(BaseModel):
    anything: Any


class Nested(BaseModel):
    values: list[Measurement]


@pytest.mark.parametrize(
    ("function_input", "arguments"),
    [
        (Loosely, '{"anything":[1,{"x":-2.5e400}]}'),
        (Nested, '{"values":[{"value":1},{"value":1E+999}]}'),
        (AddInput, '{"a":1e999,"b":1}'),
    ],
)
def test_an_overflowing_float_is_refused_wherever_the_type_could_hold_one(
    function_input, arguments
):
    def function(value):
        return ""

    function.__annotations__ = {"value": function_input}
    contract = bind(Func(function, name="f")).contract
    with pytest.raises(InvalidInvocationError, match="arguments: decode"):
        contract.prepare(Request(name="f", arguments=arguments))
