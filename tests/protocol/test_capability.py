"""capability(): optional capabilities through the wrapping chain (go-reference §2.6)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from scope_tool import (
    Definition,
    InputValidatingTool,
    InvalidInvocationError,
    InvalidToolError,
    InvalidWrappingChainError,
    Invocation,
    Output,
    Request,
    Result,
    Tool,
    WrappingTool,
    bind,
    capability,
)


class Base:
    def definition(self) -> Definition:
        return Definition(name="base", input_schema=b'{"type":"object"}')

    async def call(self, invocation: Invocation) -> Result:
        return Result(output=Output.text_output("base"))


class ValidatingBase(Base):
    def __init__(self, validator: Callable[[bytes], None] | None = None) -> None:
        self.validator = validator

    def input_validator(self) -> Callable[[bytes], None] | None:
        return self.validator


class Wrapper:
    """A transparent decorator: forwards everything, exposes its inner tool."""

    def __init__(self, inner: Tool | None) -> None:
        self.inner = inner
        self.unwraps = 0

    def definition(self) -> Definition:
        assert self.inner is not None
        return self.inner.definition()

    async def call(self, invocation: Invocation) -> Result:
        assert self.inner is not None
        return await self.inner.call(invocation)

    def unwrap(self) -> Tool | None:
        self.unwraps += 1
        return self.inner


class ValidatingWrapper(Wrapper):
    def __init__(self, inner: Tool | None, validator: Callable[[bytes], None]) -> None:
        super().__init__(inner)
        self.validator = validator

    def input_validator(self) -> Callable[[bytes], None] | None:
        return self.validator


def wrap(tool: Tool, times: int) -> Tool:
    for _ in range(times):
        tool = Wrapper(tool)
    return tool


def test_the_protocols_are_runtime_checkable():
    assert isinstance(Base(), Tool)
    assert isinstance(Wrapper(Base()), WrappingTool)
    assert isinstance(ValidatingBase(), InputValidatingTool)
    assert not isinstance(Base(), InputValidatingTool)
    assert not isinstance(object(), Tool)


def test_the_tool_itself_is_found_without_unwrapping():
    base = ValidatingBase()
    assert capability(base, InputValidatingTool) is base


def test_a_capability_is_found_through_wrappers():
    base = ValidatingBase()
    assert capability(wrap(base, 3), InputValidatingTool) is base


def test_the_outermost_implementation_wins():
    base = ValidatingBase()
    outer = ValidatingWrapper(Wrapper(base), validator=lambda raw: None)
    assert capability(outer, InputValidatingTool) is outer
    assert outer.unwraps == 0


def test_a_chain_ending_without_the_capability_is_not_found():
    assert capability(wrap(Base(), 5), InputValidatingTool) is None


def test_unwrap_returning_none_ends_the_chain_without_error():
    assert capability(Wrapper(None), InputValidatingTool) is None


def test_none_is_simply_not_found():
    assert capability(None, InputValidatingTool) is None


def test_sixty_four_wrappers_are_allowed():
    base = ValidatingBase()
    assert capability(wrap(base, 64), InputValidatingTool) is base


def test_sixty_five_wrappers_are_an_invalid_chain_naming_the_original_type():
    with pytest.raises(InvalidWrappingChainError) as caught:
        capability(wrap(ValidatingBase(), 65), InputValidatingTool)
    assert str(caught.value) == "tool: invalid wrapping chain: Wrapper exceeds 64 wrappers"


def test_at_most_sixty_four_unwraps_are_made():
    loop = Wrapper(None)
    loop.inner = loop  # a cycle: only the depth bound can stop it
    with pytest.raises(InvalidWrappingChainError, match="exceeds 64 wrappers"):
        capability(loop, InputValidatingTool)
    assert loop.unwraps == 64


def test_capability_lets_an_unwrap_exception_propagate():
    class Broken(Wrapper):
        def unwrap(self) -> Tool | None:
            raise LookupError("lost the inner tool")

    with pytest.raises(LookupError):
        capability(Broken(Base()), InputValidatingTool)


def test_capability_works_with_plain_classes_too():
    base = ValidatingBase()
    assert capability(wrap(base, 2), ValidatingBase) is base
    assert capability(wrap(base, 2), str) is None


def test_bind_resolves_the_validator_through_the_chain():
    seen: list[bytes] = []
    binding = bind(wrap(ValidatingBase(seen.append), 3))
    binding.contract.prepare(Request(name="base", arguments='{"k":1}'))
    assert seen == [b'{"k":1}']


def test_bind_uses_the_outermost_validator():
    def refuse(raw: bytes) -> None:
        raise ValueError("outer says no")

    inner_seen: list[bytes] = []
    tool = ValidatingWrapper(ValidatingBase(inner_seen.append), validator=refuse)
    with pytest.raises(InvalidInvocationError, match="arguments: outer says no"):
        bind(tool).contract.prepare(Request(name="base", arguments="{}"))
    assert inner_seen == []


def test_bind_reports_an_invalid_chain_under_input_validation():
    with pytest.raises(InvalidToolError) as caught:
        bind(wrap(Base(), 65))
    assert str(caught.value) == (
        "tool: invalid tool: input validation: tool: invalid wrapping chain: "
        "Wrapper exceeds 64 wrappers"
    )
    assert isinstance(caught.value.__cause__, InvalidWrappingChainError)


def test_bind_contains_an_unwrap_exception_as_a_declaration_panic():
    class Broken(Wrapper):
        def unwrap(self) -> Tool | None:
            raise LookupError("lost")

    with pytest.raises(InvalidToolError) as caught:
        bind(Broken(Base()))
    assert str(caught.value) == (
        "tool: invalid tool: input validation: input validation declaration: "
        "tool: input validation panicked: lost"
    )
