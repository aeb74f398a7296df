"""bind, Binding, Contract.prepare and Invocation: the trust boundary (go-reference §2.3, §2.5)."""

from __future__ import annotations

import copy
import json
import pickle
from collections.abc import Callable
from typing import Annotated

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, WithJsonSchema, field_validator

from scope_tool import (
    MAX_INPUT_BYTES,
    Binding,
    Contract,
    Definition,
    InputRequest,
    InputValidationPanicError,
    InvalidInvocationError,
    InvalidRequestError,
    InvalidToolError,
    Invocation,
    Output,
    Request,
    Result,
    bind,
)

OBJECT_SCHEMA = b'{"type":"object"}'


class RecordingTool:
    """A tool that counts definition() and call() and echoes its arguments."""

    def __init__(
        self,
        *,
        name: str = "echo",
        schema: bytes = OBJECT_SCHEMA,
        validator: Callable[[bytes], None] | None = None,
    ) -> None:
        self.name = name
        self.schema = schema
        self.validator = validator
        self.definition_calls = 0
        self.declarations = 0
        self.calls: list[Invocation] = []

    def definition(self) -> Definition:
        self.definition_calls += 1
        return Definition(name=self.name, description="echoes", input_schema=self.schema)

    async def call(self, invocation: Invocation) -> Result:
        self.calls.append(invocation)
        return Result(output=Output.text_output(invocation.arguments.decode()))


class ValidatingTool(RecordingTool):
    def input_validator(self) -> Callable[[bytes], None] | None:
        self.declarations += 1
        return self.validator


def prepare(tool: RecordingTool, arguments: str, name: str | None = None) -> Invocation:
    return bind(tool).contract.prepare(Request(name=name or tool.name, arguments=arguments))


# --- bind ------------------------------------------------------------------------------------


def test_bind_calls_definition_exactly_once_and_exposes_the_name():
    tool = RecordingTool()
    binding = bind(tool)
    assert tool.definition_calls == 1
    assert binding.contract.name == "echo"
    binding.contract.prepare(Request(name="echo", arguments="{}"))
    _ = binding.contract.definition
    assert tool.definition_calls == 1


def test_bind_refuses_none_and_non_tools():
    with pytest.raises(InvalidToolError, match=r"^tool: invalid tool: tool is None$"):
        bind(None)  # type: ignore[arg-type]
    with pytest.raises(InvalidToolError, match=r"^tool: invalid tool: int does not implement Tool"):
        bind(3)  # type: ignore[arg-type]


def test_bind_refuses_an_invalid_definition_with_the_definition_error_as_cause():
    with pytest.raises(InvalidToolError, match=r"^tool: invalid tool: definition: ") as caught:
        bind(RecordingTool(name="bad name"))
    assert caught.value.__cause__ is not None


def test_bind_refuses_a_definition_that_is_not_a_definition():
    class Wrong(RecordingTool):
        def definition(self) -> Definition:
            return {"name": "x"}  # type: ignore[return-value]

    with pytest.raises(InvalidToolError, match="definition: definition\\(\\) returned dict"):
        bind(Wrong())


def test_bind_refuses_a_schema_that_does_not_compile():
    tool = RecordingTool(schema=b'{"type":"object","properties":{"a":{"type":"nonsense"}}}')
    with pytest.raises(
        InvalidToolError, match=r"^tool: invalid tool: input schema: jsonschema: invalid schema: "
    ):
        bind(tool)


def test_bind_lets_an_exception_from_definition_propagate_unchanged():
    boom = RuntimeError("definition exploded")

    class Exploding(RecordingTool):
        def definition(self) -> Definition:
            raise boom

    with pytest.raises(RuntimeError) as caught:
        bind(Exploding())
    assert caught.value is boom


def test_bind_declares_the_validator_once_and_prepare_runs_it_every_time():
    seen: list[bytes] = []
    tool = ValidatingTool(validator=seen.append)
    contract = bind(tool).contract
    for _ in range(3):
        contract.prepare(Request(name="echo", arguments='{"x":1}'))
    assert tool.declarations == 1
    assert seen == [b'{"x":1}'] * 3


def test_a_declaration_that_raises_makes_the_tool_unbindable():
    class BadDeclaration(RecordingTool):
        def input_validator(self) -> Callable[[bytes], None] | None:
            raise KeyError("no validator today")

    with pytest.raises(InvalidToolError) as caught:
        bind(BadDeclaration())
    assert str(caught.value) == (
        "tool: invalid tool: input validation: input validation declaration: "
        "tool: input validation panicked: 'no validator today'"
    )
    panic = caught.value.__cause__
    assert isinstance(panic, InputValidationPanicError)
    assert isinstance(panic.__cause__, KeyError)


def test_a_declared_validator_that_is_not_callable_is_refused():
    tool = ValidatingTool(validator=42)  # type: ignore[arg-type]
    with pytest.raises(
        InvalidToolError, match="input validation: input_validator\\(\\) returned int"
    ):
        bind(tool)


def test_none_validator_means_the_schema_is_the_whole_contract():
    tool = ValidatingTool(validator=None)
    invocation = prepare(tool, '{"anything":true}')
    assert invocation.arguments == b'{"anything":true}'


# --- Contract.definition ---------------------------------------------------------------------


def test_contract_definition_exposes_the_canonical_schema():
    tool = RecordingTool(schema=b'{ "type":"object", "b":1, "a":2 }')
    definition = bind(tool).contract.definition
    assert definition.input_schema == b'{"a":2,"b":1,"type":"object"}'
    assert definition.name == "echo"
    assert definition.description == "echoes"


# --- prepare: order and messages -------------------------------------------------------------


def test_prepare_refuses_a_name_mismatch_exactly():
    contract = bind(RecordingTool()).contract
    with pytest.raises(InvalidInvocationError) as caught:
        contract.prepare(Request(name="Echo", arguments="{}"))
    assert str(caught.value) == (
        'tool: invalid invocation: call name "Echo" does not match bound tool "echo"'
    )


def test_prepare_applies_the_requests_own_validation_first():
    contract = bind(RecordingTool()).contract
    with pytest.raises(InvalidInvocationError) as caught:
        contract.prepare(Request(name="", arguments="not even json"))
    assert str(caught.value) == (
        "tool: invalid invocation: tool: invalid request: name must not be empty"
    )
    assert isinstance(caught.value.__cause__, InvalidRequestError)


def test_bytes_arguments_are_admitted_like_text():
    contract = bind(RecordingTool()).contract
    assert contract.prepare(Request(name="echo", arguments=b'{"a":1}')).arguments == b'{"a":1}'
    assert contract.prepare(Request(name="echo", arguments=b" \n")).arguments == b"{}"
    with pytest.raises(InvalidInvocationError, match="RFC 7493"):
        contract.prepare(Request(name="echo", arguments=b'{"a":"\xff"}'))


def test_prepare_refuses_things_that_are_not_requests():
    contract = bind(RecordingTool()).contract
    with pytest.raises(InvalidInvocationError, match="request must be a Request, got dict"):
        contract.prepare({"name": "echo"})  # type: ignore[arg-type]
    with pytest.raises(InvalidInvocationError, match="continuation must be a Continuation"):
        contract.prepare(Request(name="echo"), continuation=b"yes")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "blank", ["", " ", "\t\n\r ", "\v", "\f", "\u00a0", "\u0085", "\u2028", "\u3000", " \u202f "]
)
def test_blank_arguments_become_the_empty_object(blank):
    assert prepare(RecordingTool(), blank).arguments == b"{}"


@pytest.mark.parametrize("not_blank", ["\x1c", "\x1f", "\u200b"])
def test_characters_python_strips_but_go_keeps_are_not_blank(not_blank):
    with pytest.raises(InvalidInvocationError, match="arguments: jsonschema: value must be one"):
        prepare(RecordingTool(), not_blank)


def test_non_blank_arguments_are_kept_byte_exact():
    raw = ' \n{ "b" : 1,"a":[1.0, 1e2] }\t'
    assert prepare(RecordingTool(), raw).arguments == raw.encode()


def test_arguments_must_be_one_i_json_document():
    contract = bind(RecordingTool()).contract
    for bad in ['{"a":1,"a":2}', "{} {}", '{"a":NaN}', '"\\ud800"', "{", "[1,]"]:
        with pytest.raises(InvalidInvocationError) as caught:
            contract.prepare(Request(name="echo", arguments=bad))
        assert str(caught.value) == (
            "tool: invalid invocation: arguments: "
            "jsonschema: value must be one valid RFC 7493 JSON document"
        ), bad


def test_numbers_are_not_range_checked_by_the_contract():
    invocation = prepare(RecordingTool(), '{"big":1e999,"huge":18446744073709551616}')
    assert invocation.arguments == b'{"big":1e999,"huge":18446744073709551616}'


def test_schema_violations_are_reported_under_arguments():
    tool = RecordingTool(
        schema=b'{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}'
    )
    with pytest.raises(
        InvalidInvocationError,
        match=r"^tool: invalid invocation: arguments: jsonschema: validate value: ",
    ):
        prepare(tool, '{"a":"x"}')
    with pytest.raises(InvalidInvocationError, match="validate value"):
        prepare(tool, "[]")


def test_size_limit_applies_after_normalisation_exactly_at_max():
    contract = bind(RecordingTool()).contract
    filler = MAX_INPUT_BYTES - len('{"s":""}')
    exact = '{"s":"' + "x" * filler + '"}'
    assert len(exact.encode()) == MAX_INPUT_BYTES
    assert len(contract.prepare(Request(name="echo", arguments=exact)).arguments) == MAX_INPUT_BYTES
    over = '{"s":"' + "x" * (filler + 1) + '"}'
    with pytest.raises(InvalidInvocationError) as caught:
        contract.prepare(Request(name="echo", arguments=over))
    assert str(caught.value) == (
        f"tool: invalid invocation: arguments: {MAX_INPUT_BYTES + 1} bytes exceed the limit "
        f"of {MAX_INPUT_BYTES} bytes (MAX_INPUT_BYTES)"
    )


def test_size_limit_counts_utf8_bytes_not_characters():
    contract = bind(RecordingTool()).contract
    # "é" is two bytes: the character count is under the limit, the byte count over it.
    characters = (MAX_INPUT_BYTES - len('{"s":""}')) // 2 + 1
    over = '{"s":"' + "é" * characters + '"}'
    assert len(over) < MAX_INPUT_BYTES < len(over.encode())
    with pytest.raises(InvalidInvocationError, match="exceed the limit"):
        contract.prepare(Request(name="echo", arguments=over))


def test_whitespace_padding_counts_towards_the_limit():
    contract = bind(RecordingTool()).contract
    padded = "{}" + " " * (MAX_INPUT_BYTES - 1)
    with pytest.raises(InvalidInvocationError, match="exceed the limit"):
        contract.prepare(Request(name="echo", arguments=padded))
    # Blank text of any length is normalised to "{}" first, so it is admitted.
    assert (
        contract.prepare(Request(name="echo", arguments=" " * (MAX_INPUT_BYTES + 5))).arguments
        == b"{}"
    )


def test_the_validator_never_sees_schema_invalid_input():
    seen: list[bytes] = []
    tool = ValidatingTool(
        schema=b'{"type":"object","properties":{"a":{"type":"integer"}}}', validator=seen.append
    )
    with pytest.raises(InvalidInvocationError, match="validate value"):
        prepare(tool, '{"a":"no"}')
    assert seen == []


def test_a_validator_rejection_is_chained_and_reported_under_arguments():
    reason = ValueError("a must be even")

    def even(raw: bytes) -> None:
        raise reason

    with pytest.raises(InvalidInvocationError) as caught:
        prepare(ValidatingTool(validator=even), '{"a":1}')
    assert str(caught.value) == "tool: invalid invocation: arguments: a must be even"
    assert caught.value.__cause__ is reason


def test_a_validator_defect_becomes_an_input_validation_panic():
    defect = ZeroDivisionError("division by zero")

    def broken(raw: bytes) -> None:
        raise defect

    with pytest.raises(InvalidInvocationError) as caught:
        prepare(ValidatingTool(validator=broken), "{}")
    assert str(caught.value) == (
        "tool: invalid invocation: arguments: tool: input validation panicked: division by zero"
    )
    panic = caught.value.__cause__
    assert isinstance(panic, InputValidationPanicError)
    assert panic.value is defect
    assert panic.__cause__ is defect


def test_a_base_exception_from_the_validator_is_not_swallowed():
    def interrupt(raw: bytes) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        prepare(ValidatingTool(validator=interrupt), "{}")


def test_prepare_never_calls_the_tool():
    tool = RecordingTool()
    contract = bind(tool).contract
    contract.prepare(Request(name="echo", arguments="{}"))
    with pytest.raises(InvalidInvocationError):
        contract.prepare(Request(name="echo", arguments="nope"))
    assert tool.calls == []


def test_prepare_carries_the_continuation_explicitly():
    request = InputRequest(prompt=b'"ok?"', response_schema=b'{"type":"boolean"}', state=b"{}")
    continuation = request.continuation(b"true")
    contract = bind(RecordingTool()).contract
    resumed = contract.prepare(Request(name="echo", arguments="{}"), continuation)
    assert resumed.continuation is continuation
    assert contract.prepare(Request(name="echo", arguments="{}")).continuation is None


# --- Binding.call ----------------------------------------------------------------------------


async def test_binding_call_delegates_verbatim():
    tool = RecordingTool()
    binding = bind(tool)
    invocation = binding.contract.prepare(Request(name="echo", arguments='{"a":1}'))
    result = await binding.call(invocation)
    assert result.output.text() == '{"a":1}'
    assert tool.calls == [invocation]


async def test_binding_call_passes_exceptions_through_unchanged():
    boom = OSError("disk on fire")

    class Failing(RecordingTool):
        async def call(self, invocation: Invocation) -> Result:
            raise boom

    binding = bind(Failing())
    with pytest.raises(OSError) as caught:
        await binding.call(binding.contract.prepare(Request(name="echo")))
    assert caught.value is boom


async def test_binding_refuses_another_contracts_invocation_even_for_an_identical_tool():
    tool = RecordingTool()
    first, second = bind(tool), bind(tool)
    foreign = second.contract.prepare(Request(name="echo", arguments="{}"))
    with pytest.raises(InvalidInvocationError) as caught:
        await first.call(foreign)
    assert str(caught.value) == "tool: invalid invocation: invocation does not belong to binding"
    assert tool.calls == []
    with pytest.raises(InvalidInvocationError, match="does not belong to binding"):
        await first.call("{}")  # type: ignore[arg-type]


# --- sealed construction and immutability ----------------------------------------------------


def test_contract_binding_and_invocation_cannot_be_constructed_directly():
    for sealed in (Invocation, Contract, Binding):
        with pytest.raises(TypeError, match="cannot be constructed directly"):
            sealed()
        with pytest.raises(TypeError, match="cannot be constructed directly"):
            sealed(arguments=b"{}")


def test_invocation_contract_and_binding_are_immutable_and_not_copyable():
    binding = bind(RecordingTool())
    invocation = binding.contract.prepare(Request(name="echo", arguments="{}"))
    for value, attribute in (
        (invocation, "_arguments"),
        (binding.contract, "_name"),
        (binding, "_tool"),
    ):
        with pytest.raises(AttributeError, match="immutable"):
            setattr(value, attribute, None)
        with pytest.raises(TypeError):
            copy.copy(value)
        with pytest.raises(TypeError):
            pickle.dumps(value)
    assert isinstance(invocation.arguments, bytes)


# --- arbitrary input: admitted byte-exact or refused with the one clear error ------------------

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


def admit(contract: Contract, arguments: str | bytes) -> Invocation | InvalidInvocationError:
    try:
        return contract.prepare(Request(name="echo", arguments=arguments))
    except InvalidInvocationError as refusal:
        return refusal


@settings(max_examples=300, deadline=None)
@given(arguments=st.text(max_size=64) | st.binary(max_size=64))
def test_any_text_is_admitted_exactly_or_refused_as_an_invalid_invocation(arguments):
    outcome = admit(bind(RecordingTool()).contract, arguments)
    if isinstance(outcome, InvalidInvocationError):
        assert str(outcome).startswith("tool: invalid invocation: arguments: ")
    else:
        raw = arguments if isinstance(arguments, bytes) else arguments.encode("utf-8")
        assert outcome.arguments in (raw, b"{}")


@settings(max_examples=200, deadline=None)
@given(value=st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=5))
def test_every_json_object_is_admitted_byte_exact(value):
    raw = json.dumps(value, ensure_ascii=False)
    invocation = bind(RecordingTool()).contract.prepare(Request(name="echo", arguments=raw))
    assert invocation.arguments == raw.encode("utf-8", "surrogatepass")


class _EchoInput(BaseModel):
    text: str


def _echo(arguments: _EchoInput) -> str:
    return arguments.text


def test_digest_is_the_sha256_of_the_definition_the_model_sees() -> None:
    import hashlib

    from scope_tool import Func

    one = bind(Func(_echo, name="echo", description="echo the text"))
    other = bind(Func(_echo, name="echo", description="echo the text twice"))
    assert one.contract.digest == hashlib.sha256(one.contract.definition.to_json()).hexdigest()
    assert one.contract.digest != other.contract.digest


# --- the hot path decides as the full road does ------------------------------------------------


class _HotInput(BaseModel):
    a: int
    b: int = 0
    name: str = ""
    flags: list[bool] = []

    @field_validator("name")
    @classmethod
    def _no_x(cls, name: str) -> str:
        # A refusal only pydantic knows of (not in the schema): the hot path's decode fails.
        if name == "x":
            raise ValueError("x is not a name")
        return name


def _hot(value: _HotInput) -> int:
    return value.a


_HOT_MEMBERS = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "name", "flags", "extra", "a:b"]),
        st.sampled_from(
            [
                "1", "-7", "123456789012345678901234567890", "1.0", "1.5", "1e2", '"1"', '"x"',
                '"y"', '"a:b"', '"\\u0078"', '"\\ud800"', "true", "null", "[]", "[true,false]",
                "[1]", "{}", '{"a":1}',
            ]
        ),
    ),
    max_size=4,
)  # fmt: skip


def _outcome(action: Callable[[], Invocation]) -> tuple[str, bytes | str, type | None]:
    try:
        return "admitted", action().arguments, None
    except InvalidInvocationError as refusal:
        cause = refusal.__cause__
        return "refused", str(refusal), None if cause is None else type(cause)


@settings(max_examples=300, deadline=None)
@given(members=_HOT_MEMBERS, as_bytes=st.booleans(), validated=st.booleans())
def test_the_hot_path_decides_as_the_full_road_does(members, as_bytes, validated):
    """Prepare's hot path (small_object, the Rust verdict, pydantic-core's decode) admits
    exactly what the full road admits, and a refusal it leaves to the full road is the full
    road's, message and cause."""
    from scope_tool import Func
    from scope_tool._contract import _argument_bytes

    tool = Func(_hot, name="hot") if validated else RecordingTool(name="hot", schema=HOT_SCHEMA)
    contract = bind(tool).contract
    text = "{" + ",".join(f'"{key}":{value}' for key, value in members) + "}"
    arguments: str | bytes = text.encode() if as_bytes else text
    hot = _outcome(lambda: contract.prepare(Request(name="hot", arguments=arguments)))
    full = _outcome(lambda: contract._prepare_checked(_argument_bytes(arguments), None))
    assert hot == full, text


HOT_SCHEMA = (
    b'{"type":"object","properties":{"a":{"type":"integer","maximum":9007199254740991}},'
    b'"required":["a"]}'
)


def test_the_hot_path_takes_the_seed_arguments_and_a_request_subclass():
    from scope_tool import Func

    class NamedRequest(Request):
        pass

    contract = bind(Func(_hot, name="hot")).contract
    invocation = contract.prepare(NamedRequest(name="hot", arguments='{"a":2,"b":3}'))
    assert invocation.arguments == b'{"a":2,"b":3}'
    assert invocation.continuation is None
    with pytest.raises(InvalidInvocationError, match="x is not a name"):
        contract.prepare(Request(name="hot", arguments='{"a":2,"name":"x"}'))
    with pytest.raises(InvalidInvocationError, match="does not match bound tool"):
        contract.prepare(NamedRequest(name="other", arguments='{"a":2}'))


class _OpenInput(BaseModel):
    # A schema that admits strings and booleans too (and no float, so the Func keeps the hot
    # path): only pydantic's strict decode refuses "1" and true, which a lax one would take.
    a: Annotated[int, WithJsonSchema({"type": ["integer", "string", "boolean"]})]


def _open(value: _OpenInput) -> int:
    return value.a


def test_the_hot_path_decodes_strictly_like_the_full_road():
    from scope_tool import Func

    contract = bind(Func(_open, name="open")).contract
    assert contract._decode_small is not None  # the hot path is taken
    assert contract.prepare(Request(name="open", arguments='{"a":1}')).arguments == b'{"a":1}'
    for lax in ('{"a":"1"}', '{"a":true}'):
        with pytest.raises(InvalidInvocationError, match="decode _OpenInput"):
            contract.prepare(Request(name="open", arguments=lax))
