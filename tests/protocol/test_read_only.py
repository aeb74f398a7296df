"""ReadOnly: a public attribute reading ``_<name>``, typed, documented, refusing assignment."""

from __future__ import annotations

import pydoc
from types import SimpleNamespace
from typing import assert_type

import pytest

from scope_tool import (
    AuthorizationError,
    CallError,
    Definition,
    Failure,
    FailureKind,
    InputRequest,
    Invocation,
    Output,
    Request,
    Result,
    bind,
)
from scope_tool._read_only import ReadOnly
from scope_tool.client import ToolCallHandle, ToolCalls


class Sample:
    """A plain class with one read-only attribute backed by ``_size``."""

    size: ReadOnly[int] = ReadOnly("How big it is.")

    def __init__(self, size: int) -> None:
        self._size = size


class SampleError(Exception):
    """An exception: instances have a ``__dict__`` that could shadow a non-data descriptor."""

    code: ReadOnly[str] = ReadOnly("The error's code.")

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self._code = code


def test_reading_gives_the_private_value_with_its_static_type():
    sample = Sample(3)
    assert assert_type(sample.size, int) == 3


def test_the_class_attribute_is_the_descriptor_with_its_doc():
    descriptor = Sample.size
    assert isinstance(descriptor, ReadOnly)
    assert descriptor.__doc__ == "How big it is."
    assert "How big it is." in pydoc.render_doc(Sample, renderer=pydoc.TextDoc())


def test_assigning_names_the_class_and_the_attribute():
    sample = Sample(3)
    with pytest.raises(AttributeError, match=r"^Sample\.size is read-only$"):
        sample.size = 4  # type: ignore[assignment]
    assert sample.size == 3


def test_deleting_names_the_class_and_the_attribute():
    sample = Sample(3)
    with pytest.raises(AttributeError, match=r"^Sample\.size is read-only$"):
        del sample.size
    assert sample.size == 3


def test_an_exception_instance_dict_cannot_shadow_it():
    error = SampleError("E1")
    with pytest.raises(AttributeError, match=r"^SampleError\.code is read-only$"):
        error.code = "E2"  # type: ignore[assignment]
    error.__dict__["code"] = "E2"
    assert error.code == "E1"


def test_a_subclass_reads_the_same_private_attribute():
    class Narrower(SampleError):
        pass

    error = Narrower("E3")
    assert error.code == "E3"
    with pytest.raises(AttributeError, match=r"^Narrower\.code is read-only$"):
        error.code = "E4"  # type: ignore[assignment]


# --- the public classes that use it ------------------------------------------------------------


class _Echo:
    def definition(self) -> Definition:
        return Definition(name="echo", description="echoes", input_schema=b'{"type":"object"}')

    async def call(self, invocation: Invocation) -> Result:
        return Result(output=Output.text_output(invocation.arguments.decode()))


def _invocation() -> Invocation:
    contract = bind(_Echo()).contract
    request = InputRequest(prompt=b'"ok?"', response_schema=b'{"type":"boolean"}', state=b"{}")
    return contract.prepare(
        Request(name="echo", arguments=b'{"a":1}'), request.continuation(b"true")
    )


def _handle() -> ToolCallHandle:
    return ToolCallHandle(SimpleNamespace(id="c-1"), attached=True)  # type: ignore[arg-type]


def _calls() -> ToolCalls:
    # A facade needs a connected client to be made; its attributes need only their slots.
    calls = object.__new__(ToolCalls)
    calls._task_queue = "tools"
    calls._client = object()  # type: ignore[assignment]
    return calls


def _failure() -> Failure:
    return Failure(kind=FailureKind.FAILED, output=Output.text_output("x"), cause=ValueError("v"))


def _call_error() -> CallError:
    return CallError(cause=ValueError("v"), evidence=Output.text_output("seen"))


@pytest.mark.parametrize(
    ("make", "name", "expected"),
    [
        (_failure, "kind", FailureKind.FAILED),
        (_failure, "output", Output.text_output("x")),
        (_call_error, "evidence", Output.text_output("seen")),
        (lambda: AuthorizationError("deploy", None), "name", "deploy"),
        (lambda: AuthorizationError("deploy", None), "cause", None),
        (_invocation, "arguments", b'{"a":1}'),
        (lambda: _invocation().continuation, "state", b"{}"),
        (lambda: _invocation().continuation, "response", b"true"),
        (_handle, "call_id", "c-1"),
        (_handle, "attached", True),
        (_calls, "task_queue", "tools"),
    ],
)
def test_public_attributes_read_their_value_and_refuse_assignment(make, name, expected):
    value = make()
    assert getattr(value, name) == expected
    descriptor = type(value).__dict__[name]
    assert isinstance(descriptor, ReadOnly)
    assert descriptor.__doc__
    # Sealed values refuse any assignment first, naming the attribute; the others by ReadOnly.
    with pytest.raises(AttributeError, match=rf"{type(value).__name__}\b.*\b{name}\b"):
        setattr(value, name, expected)
    with pytest.raises(AttributeError, match=rf"{type(value).__name__}\b.*\b{name}\b"):
        delattr(value, name)
    assert getattr(value, name) == expected


def test_causes_read_back_the_very_exception():
    cause = ValueError("v")
    assert Failure(kind=FailureKind.FAILED, cause=cause).cause is cause
    assert CallError(cause=cause).cause is cause
    assert AuthorizationError("deploy", cause).cause is cause
    assert _invocation().continuation is not None
    assert _handle().workflow_handle is not None
    assert _calls().client is not None


def test_help_still_shows_each_attribute_doc():
    shown = pydoc.render_doc(Failure, renderer=pydoc.TextDoc())
    assert "Whether the call failed or was refused." in shown
    assert "The model-visible output of the unsuccessful call." in shown
