"""The seed package documentation's three examples, in Python, with their printed output.

Each test is the example as a user would write it; the captured stdout must equal the seed's
``Output:`` lines exactly.
"""

from __future__ import annotations

from pydantic import BaseModel

from scope_tool import (
    Authorization,
    Failure,
    FailureKind,
    Func,
    Guard,
    Output,
    Registry,
    Request,
    bind,
    classify_failure,
)


class AddInput(BaseModel):
    a: int
    b: int


class NoInput(BaseModel):
    pass


async def test_package_example_add(capsys):
    # Seed "Example": Output: add 5
    async def add(value: AddInput) -> int:
        return value.a + value.b

    registry = Registry(Func(add, name="add", description="add two integers"))
    print(registry.definitions()[0].name)
    binding = registry.resolve("add")
    assert binding is not None, "missing add"
    invocation = binding.contract.prepare(Request(name="add", arguments='{"a":2,"b":3}'))
    result = await binding.call(invocation)
    print(result.output.text())

    assert capsys.readouterr().out == "add\n5\n"


def test_new_failure_example(capsys):
    # Seed "NewFailure" example: Output: rejected this operation is not permitted / false
    failure = Failure(
        kind=FailureKind.REJECTED,
        cause=RuntimeError("internal authorization diagnostic"),
        output=Output.text_output("this operation is not permitted"),
    )
    try:
        try:
            raise failure
        except Failure as raised:
            raise RuntimeError(f"tool call: {raised}") from raised  # fmt.Errorf("%w")
    except RuntimeError as wrapped:
        result = classify_failure(wrapped)
        assert result is not None, "missing definite outcome"
        print(result.kind, result.output.text())
        # errors.Is(wrapped, result.Cause()): is the diagnostic anywhere in the chain?
        chain: list[BaseException] = []
        current: BaseException | None = wrapped
        while current is not None:
            chain.append(current)
            current = current.__cause__
        print(any(link is result.cause for link in chain))

    assert capsys.readouterr().out == "rejected this operation is not permitted\nFalse\n"


async def test_new_guard_example(capsys):
    # Seed "NewGuard" example: Output: rejected
    async def inspect(value: NoInput) -> str:
        return "inspected"

    executable = Func(inspect, name="inspect")

    def refuse(authorization: Authorization) -> bool:
        return False

    guard = Guard(executable, refuse)
    binding = bind(guard)
    invocation = binding.contract.prepare(Request(name="inspect", arguments="{}"))
    error: Exception | None = None
    try:
        await binding.call(invocation)
    except Exception as raised:  # the Go example inspects the returned error
        error = raised
    failure = classify_failure(error)
    assert failure is not None, error
    print(failure.kind)

    assert capsys.readouterr().out == "rejected\n"
