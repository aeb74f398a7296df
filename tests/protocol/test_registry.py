"""Registry: atomic batches, resolution and sorted definitions (go-reference §2.11)."""

from __future__ import annotations

import threading
import time

import pytest
from pydantic import BaseModel

from scope_tool import (
    Binding,
    Definition,
    DuplicateToolError,
    Func,
    InvalidInvocationError,
    InvalidRegistryError,
    InvalidToolError,
    Invocation,
    Output,
    Registry,
    Request,
    Result,
)


class Named:
    def __init__(self, name: str, schema: bytes = b'{"type":"object"}') -> None:
        self.name = name
        self.schema = schema
        self.definition_calls = 0

    def definition(self) -> Definition:
        self.definition_calls += 1
        return Definition(name=self.name, input_schema=self.schema)

    async def call(self, invocation: Invocation) -> Result:
        return Result(output=Output.text_output(self.name))


class Empty(BaseModel):
    pass


def test_an_empty_registry_is_usable():
    registry = Registry()
    assert registry.definitions() == []
    assert registry.resolve("anything") is None
    assert len(registry) == 0
    registry.register()
    assert len(registry) == 0


async def test_registered_tools_resolve_to_working_bindings():
    registry = Registry(Named("alpha"), Named("beta"))
    binding = registry.resolve("beta")
    assert isinstance(binding, Binding)
    result = await binding.call(binding.contract.prepare(Request(name="beta", arguments="{}")))
    assert result.output.text() == "beta"


def test_resolution_is_exact_and_case_sensitive():
    registry = Registry(Named("alpha"))
    assert registry.resolve("Alpha") is None
    assert registry.resolve("alpha ") is None
    assert registry.resolve(None) is None  # type: ignore[arg-type]
    assert "alpha" in registry
    assert "Alpha" not in registry


async def test_resolved_bindings_accept_each_others_invocations():
    registry = Registry(Named("alpha"))
    first, second = registry.resolve("alpha"), registry.resolve("alpha")
    assert first is not None
    assert second is not None
    invocation = first.contract.prepare(Request(name="alpha", arguments="{}"))
    assert (await second.call(invocation)).output.text() == "alpha"


def test_definitions_are_sorted_by_name_and_fresh():
    registry = Registry(Named("zeta"), Named("Alpha"), Named("alpha"), Named("_x"), Named("9"))
    names = [definition.name for definition in registry.definitions()]
    assert names == sorted(names) == ["9", "Alpha", "_x", "alpha", "zeta"]
    listing = registry.definitions()
    listing.clear()
    assert len(registry.definitions()) == 5


def test_definitions_carry_the_canonical_schema():
    registry = Registry(Named("alpha", schema=b'{ "type" : "object", "b": 1, "a": 2 }'))
    (definition,) = registry.definitions()
    assert definition.input_schema == b'{"a":2,"b":1,"type":"object"}'


def test_definition_is_called_once_per_registration():
    tool = Named("alpha")
    registry = Registry(tool)
    registry.definitions()
    registry.resolve("alpha")
    assert tool.definition_calls == 1


def test_a_duplicate_within_a_batch_is_refused_and_nothing_is_registered():
    registry = Registry()
    with pytest.raises(DuplicateToolError) as caught:
        registry.register(Named("alpha"), Named("beta"), Named("alpha"))
    assert str(caught.value) == 'tool: duplicate tool: "alpha" appears more than once in batch'
    assert registry.definitions() == []


def test_an_already_registered_name_is_refused_and_the_batch_is_atomic():
    registry = Registry(Named("beta"))
    with pytest.raises(DuplicateToolError) as caught:
        registry.register(Named("alpha"), Named("beta"), Named("gamma"))
    assert str(caught.value) == 'tool: duplicate tool: "beta" is already registered'
    assert [definition.name for definition in registry.definitions()] == ["beta"]
    assert registry.resolve("alpha") is None


def test_the_first_already_registered_name_in_batch_order_wins():
    registry = Registry(Named("a"), Named("z"))
    with pytest.raises(DuplicateToolError, match='"z" is already registered'):
        registry.register(Named("m"), Named("z"), Named("a"))


def test_a_bind_failure_carries_its_index_and_class():
    registry = Registry()
    with pytest.raises(InvalidToolError) as caught:
        registry.register(Named("good"), Named("bad name"), Named("other"))
    error = caught.value
    assert str(error).startswith("tools[1]: tool: invalid tool: definition: ")
    assert isinstance(error.__cause__, InvalidToolError)
    assert str(error) == f"tools[1]: {error.__cause__}"
    assert registry.definitions() == []


def test_a_bind_failure_before_a_duplicate_wins():
    registry = Registry()
    with pytest.raises(InvalidToolError, match=r"^tools\[1\]: "):
        registry.register(Named("a"), Named("bad name"), Named("a"))


def test_a_duplicate_before_a_bind_failure_wins():
    registry = Registry()
    with pytest.raises(DuplicateToolError, match="appears more than once"):
        registry.register(Named("a"), Named("a"), Named("bad name"))


def test_the_constructor_fails_like_register():
    with pytest.raises(InvalidToolError, match=r"^tools\[0\]: tool: invalid tool: tool is None$"):
        Registry(None)  # type: ignore[arg-type]
    with pytest.raises(DuplicateToolError):
        Registry(Named("x"), Named("x"))


def test_a_list_instead_of_separate_tools_gets_a_clear_error():
    registry = Registry()
    with pytest.raises(InvalidRegistryError) as caught:
        registry.register([Named("a"), Named("b")])  # type: ignore[arg-type]
    assert "pass tools as separate arguments" in str(caught.value)
    assert str(caught.value).startswith("tool: invalid registry: tools[0]: got a list")


def test_a_registry_can_grow_in_batches():
    async def noop(value: Empty) -> str:
        return ""

    registry = Registry(Named("a"))
    registry.register(Func(noop, name="b"), Named("c"))
    assert [definition.name for definition in registry.definitions()] == ["a", "b", "c"]


def test_binding_happens_outside_the_lock():
    # A tool whose definition() blocks must not stop readers of the same registry.
    entered, release = threading.Event(), threading.Event()

    class Slow(Named):
        def definition(self) -> Definition:
            entered.set()
            assert release.wait(10)
            return super().definition()

    registry = Registry(Named("ready"))
    writer = threading.Thread(target=registry.register, args=(Slow("slow"),))
    writer.start()
    try:
        assert entered.wait(10)
        started = time.monotonic()
        assert registry.resolve("ready") is not None
        assert [definition.name for definition in registry.definitions()] == ["ready"]
        assert time.monotonic() - started < 1.0
    finally:
        release.set()
        writer.join(10)
    assert registry.resolve("slow") is not None


def test_an_ecma_262_pattern_property_builds_and_admits_by_its_meaning():
    # JSON Schema patterns are ECMA 262: ``\p{Letter}`` is a Unicode property, which Python's
    # ``re`` refuses (``re.error`` escaped Registry construction before, #25 item 13).
    schema = b'{"type":"object","patternProperties":{"^\\\\p{Letter}+$":{"type":"integer"}}}'
    registry = Registry(Named("letters", schema=schema))
    binding = registry.resolve("letters")
    assert binding is not None
    binding.contract.prepare(Request(name="letters", arguments='{"\u00e9cole": 1, "1": "x"}'))
    with pytest.raises(InvalidInvocationError, match="arguments: "):
        binding.contract.prepare(Request(name="letters", arguments='{"\u00e9cole": "x"}'))


def test_a_pattern_no_engine_reads_is_an_invalid_tool_not_a_crash():
    schema = b'{"type":"object","patternProperties":{"\\\\p{NoSuchProperty}":{}}}'
    with pytest.raises(InvalidToolError, match=r"^tools\[0\]: tool: invalid tool: input schema: "):
        Registry(Named("odd", schema=schema))
