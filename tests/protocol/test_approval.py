"""require_approval: the prompt, the pinned state, the three decisions, edits, forwarding."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, field_validator

from scope_tool import (
    APPROVAL_PROMPT_KIND,
    MAX_INPUT_BYTES,
    ApprovalGate,
    Definition,
    Failure,
    FailureKind,
    Func,
    InputRequest,
    InvalidInputRequestError,
    InvalidInvocationError,
    InvalidRegistryError,
    InvalidToolError,
    Invocation,
    Output,
    Registry,
    Request,
    Result,
    bind,
    require_approval,
)


class Inner(BaseModel):
    x: int


class WriteInput(BaseModel):
    path: str
    inner: Inner

    @field_validator("path")
    @classmethod
    def no_parent(cls, value: str) -> str:
        if ".." in value:
            raise ValueError("path must not contain '..'")
        return value


def make_tool(runs: list[WriteInput]) -> Func:
    async def write(value: WriteInput) -> str:
        runs.append(value)
        return f"wrote {value.path} x={value.inner.x}"

    return Func(write, name="write", description="write a thing")


ARGS = '{"path":"a.txt","inner":{"x":1}}'


async def first_round(binding, arguments: str = ARGS) -> InputRequest:
    result = await binding.call(
        binding.contract.prepare(Request(name="write", arguments=arguments))
    )
    assert result.input_request is not None
    return result.input_request


async def answer(binding, asked: InputRequest, response: object, arguments: str = ARGS) -> Result:
    continuation = asked.continuation(json.dumps(response))
    request = Request(name="write", arguments=arguments)
    return await binding.call(binding.contract.prepare(request, continuation))


def test_the_gate_has_the_wrapped_tools_definition():
    runs: list[WriteInput] = []
    plain = bind(make_tool(runs)).contract.definition
    gated = bind(require_approval(make_tool(runs))).contract.definition
    assert gated == plain
    assert gated.to_json() == plain.to_json()


async def test_round_one_asks_with_the_exact_arguments_and_runs_nothing():
    runs: list[WriteInput] = []
    binding = bind(require_approval(make_tool(runs)))
    spaced = '{"inner": {"x": 1},   "path": "a.txt"}'
    asked = await first_round(binding, spaced)
    prompt = json.loads(asked.prompt)
    assert prompt["kind"] == APPROVAL_PROMPT_KIND
    assert prompt["tool"] == "write"
    assert prompt["description"] == "write a thing"
    assert prompt["question"] == "Approve this call of write?"
    assert prompt["allow_edit"] is True
    # The prompt and the state carry the admitted bytes exactly, key order and spaces kept.
    assert asked.prompt.endswith(b',"arguments":' + spaced.encode() + b"}")
    assert json.loads(asked.state) == {"stage": "decide", "shown": json.loads(spaced)}
    assert spaced.encode() in asked.state
    assert runs == []


async def test_approve_runs_the_wrapped_tool_once_with_the_shown_arguments():
    runs: list[WriteInput] = []
    binding = bind(require_approval(make_tool(runs)))
    asked = await first_round(binding)
    result = await answer(binding, asked, {"decision": "approve"})
    assert result.input_request is None
    assert result.output.text() == "wrote a.txt x=1"
    assert [run.path for run in runs] == ["a.txt"]


async def test_deny_is_a_rejected_failure_with_the_reason_model_visible():
    runs: list[WriteInput] = []
    binding = bind(require_approval(make_tool(runs)))
    asked = await first_round(binding)
    with pytest.raises(Failure) as raised:
        await answer(binding, asked, {"decision": "deny", "reason": "not that file"})
    assert raised.value.kind is FailureKind.REJECTED
    text = raised.value.output.text()
    assert text == 'error: the call of tool "write" was denied by its reviewer: not that file'
    assert runs == []


async def test_edit_runs_the_edited_arguments_admitted_by_the_wrapped_contract():
    runs: list[WriteInput] = []
    binding = bind(require_approval(make_tool(runs)))
    asked = await first_round(binding)
    edited = {"path": "b.txt", "inner": {"x": 7}}
    result = await answer(binding, asked, {"decision": "edit", "arguments": edited})
    assert result.output.text() == "wrote b.txt x=7"
    assert [(run.path, run.inner.x) for run in runs] == [("b.txt", 7)]


@pytest.mark.parametrize(
    ("response", "why"),
    [
        (
            {"decision": "edit", "arguments": {"path": "b", "inner": {"x": "7"}}},
            "/arguments/inner/x",
        ),
        ({"decision": "edit", "arguments": {"path": "b", "inner": {}}}, "/arguments/inner"),
        ({"decision": "edit", "arguments": {"path": "b", "inner": {"x": 1}, "y": 2}}, "y"),
        ({"decision": "edit"}, "arguments"),
        ({"decision": "deny"}, "reason"),
        ({"decision": "maybe"}, "decision"),
        ({"decision": "approve", "note": "x"}, "note"),
        ({}, "decision"),
        (True, "object"),
    ],
)
async def test_an_answer_outside_the_three_shapes_is_refused_as_an_answer(response, why):
    """The response schema embeds the tool's input schema, so the answer check refuses these."""
    runs: list[WriteInput] = []
    binding = bind(require_approval(make_tool(runs)))
    asked = await first_round(binding)
    with pytest.raises(InvalidInputRequestError) as raised:
        asked.continuation(json.dumps(response))
    assert why in str(raised.value)
    assert runs == []


async def test_an_edit_only_the_tools_own_validator_refuses_asks_again_and_runs_nothing():
    runs: list[WriteInput] = []
    binding = bind(require_approval(make_tool(runs)))
    asked = await first_round(binding)
    edited = {"path": "../etc", "inner": {"x": 1}}
    result = await answer(binding, asked, {"decision": "edit", "arguments": edited})
    again = result.input_request
    assert again is not None
    prompt = json.loads(again.prompt)
    assert "path must not contain '..'" in prompt["refused_edit"]
    assert prompt["arguments"] == json.loads(ARGS)  # still the original call
    assert runs == []
    approved = await answer(binding, again, {"decision": "approve"})
    assert approved.output.text() == "wrote a.txt x=1"
    assert len(runs) == 1


async def test_without_allow_edit_an_edit_is_not_an_answer():
    runs: list[WriteInput] = []
    binding = bind(require_approval(make_tool(runs), allow_edit=False))
    asked = await first_round(binding)
    assert json.loads(asked.prompt)["allow_edit"] is False
    with pytest.raises(InvalidInputRequestError, match="decision"):
        asked.continuation(json.dumps({"decision": "edit", "arguments": json.loads(ARGS)}))


async def test_a_continuation_pinning_other_arguments_runs_nothing():
    runs: list[WriteInput] = []
    binding = bind(require_approval(make_tool(runs)))
    asked = await first_round(binding)
    continuation = asked.continuation('{"decision":"approve"}')
    other = Request(name="write", arguments='{"path":"other.txt","inner":{"x":1}}')
    with pytest.raises(InvalidInvocationError, match="pins other arguments"):
        await binding.call(binding.contract.prepare(other, continuation))
    assert runs == []


class Asking:
    """A resumable tool: asks for a number, then completes with it."""

    def __init__(self) -> None:
        self.calls: list[bytes | None] = []

    def definition(self) -> Definition:
        return Definition(name="ask", input_schema={"type": "object"})

    async def call(self, invocation: Invocation) -> Result:
        continuation = invocation.continuation
        self.calls.append(None if continuation is None else continuation.response)
        if continuation is None:
            return Result(
                input_request=InputRequest(
                    prompt='"which number?"', response_schema={"type": "integer"}, state='{"n":1}'
                )
            )
        return Result(output=Output.text_output(f"got {continuation.response.decode()}"))


async def test_a_resumable_wrapped_tool_asks_through_the_gate_after_approval():
    tool = Asking()
    binding = bind(require_approval(tool))
    request = Request(name="ask", arguments="{}")
    first = await binding.call(binding.contract.prepare(request))
    assert first.input_request is not None
    approved = await binding.call(
        binding.contract.prepare(
            request, first.input_request.continuation('{"decision":"approve"}')
        )
    )
    question = approved.input_request
    assert question is not None
    assert question.prompt == b'"which number?"'
    assert question.response_schema == b'{"type":"integer"}'
    with pytest.raises(InvalidInputRequestError):
        question.continuation('"seven"')
    done = await binding.call(binding.contract.prepare(request, question.continuation("7")))
    assert done.output.text() == "got 7"
    assert tool.calls == [None, b"7"]  # the tool ran once for approval's sake, then re-entered


def test_require_approval_refuses_what_is_not_a_tool_and_double_gating():
    with pytest.raises(InvalidToolError, match="require_approval"):
        require_approval(object())  # type: ignore[arg-type]
    gate = require_approval(Asking())
    with pytest.raises(InvalidToolError, match="already requires approval"):
        require_approval(gate)
    with pytest.raises(InvalidToolError, match="allow_edit must be a bool"):
        require_approval(Asking(), allow_edit="yes")  # type: ignore[arg-type]


async def test_a_schema_that_cannot_move_still_gates_and_admits_edits_in_round_two():
    class Anchored:
        def definition(self) -> Definition:
            return Definition(
                name="anchored",
                input_schema={
                    "type": "object",
                    "properties": {"n": {"$ref": "#num"}},
                    "$defs": {"num": {"$anchor": "num", "type": "integer"}},
                    "required": ["n"],
                },
            )

        async def call(self, invocation: Invocation) -> Result:
            return Result(output=Output.text_output(invocation.arguments.decode()))

    binding = bind(require_approval(Anchored()))
    request = Request(name="anchored", arguments='{"n":1}')
    asked = (await binding.call(binding.contract.prepare(request))).input_request
    assert asked is not None
    bad = asked.continuation('{"decision":"edit","arguments":{"n":"x"}}')
    again = await binding.call(binding.contract.prepare(request, bad))
    assert again.input_request is not None
    assert "refused_edit" in json.loads(again.input_request.prompt)
    good = asked.continuation('{"decision":"edit","arguments":{"n":2}}')
    done = await binding.call(binding.contract.prepare(request, good))
    assert done.output.text() == '{"n":2}'


# --- Registry.with_approval --------------------------------------------------------------


def test_registry_gates_by_name_and_leaves_the_original_alone():
    runs: list[WriteInput] = []
    original = Registry(make_tool(runs), Asking())
    gated = original.with_approval(names={"write"})
    write_tool = gated.resolve("write")._tool  # type: ignore[union-attr]
    assert isinstance(write_tool, ApprovalGate)
    assert not isinstance(gated.resolve("ask")._tool, ApprovalGate)  # type: ignore[union-attr]
    assert not isinstance(original.resolve("write")._tool, ApprovalGate)  # type: ignore[union-attr]
    assert gated.definitions() == original.definitions()


def test_registry_gates_by_predicate_and_twice_is_harmless():
    runs: list[WriteInput] = []
    registry = Registry(make_tool(runs), Asking()).with_approval(
        where=lambda definition: definition.name.startswith("w")
    )
    again = registry.with_approval(names=["write", "ask"], allow_edit=False)
    assert isinstance(again.resolve("write")._tool, ApprovalGate)  # type: ignore[union-attr]
    assert again.resolve("write")._tool.allow_edit is True  # type: ignore[union-attr]
    assert again.resolve("ask")._tool.allow_edit is False  # type: ignore[union-attr]


def test_registry_with_approval_refuses_unknown_names_and_choosing_nothing():
    registry = Registry(Asking())
    with pytest.raises(InvalidRegistryError, match='no tool named "nope"'):
        registry.with_approval(names={"nope"})
    with pytest.raises(InvalidRegistryError, match="needs names"):
        registry.with_approval()
    with pytest.raises(InvalidRegistryError, match="not the string"):
        registry.with_approval(names="ask")


async def test_arguments_too_large_to_show_within_the_limit_are_refused_not_asked():
    tool = Asking()
    binding = bind(require_approval(tool))
    huge = '{"x":"' + "a" * (MAX_INPUT_BYTES - 20) + '"}'
    invocation = binding.contract.prepare(Request(name="ask", arguments=huge))
    with pytest.raises(InvalidInputRequestError, match="prompt exceeds"):
        await binding.call(invocation)
    assert tool.calls == []
