"""Guard, Authorization, Authorizer and AuthorizationError (go-reference §2.7)."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable

import pytest

from scope_tool import (
    Authorization,
    AuthorizationError,
    Authorizer,
    Definition,
    Failure,
    FailureKind,
    Guard,
    InputValidatingTool,
    InvalidInvocationError,
    InvalidToolError,
    Invocation,
    Output,
    Request,
    Result,
    Tool,
    bind,
    capability,
    classify_failure,
)


class Inner:
    """Counts definition() and call(); its schema can change after the guard snapshots it."""

    def __init__(self, schema: bytes = b'{ "type": "object" }') -> None:
        self.schema = schema
        self.definition_calls = 0
        self.calls = 0
        self.validated: list[bytes] = []

    def definition(self) -> Definition:
        self.definition_calls += 1
        return Definition(name="inspect", description="looks", input_schema=self.schema)

    async def call(self, invocation: Invocation) -> Result:
        self.calls += 1
        return Result(output=Output.text_output("inspected"))

    def input_validator(self) -> Callable[[bytes], None] | None:
        return self.validated.append


class Policy:
    def __init__(self, decision: bool) -> None:
        self.decision = decision
        self.seen: list[Authorization] = []

    async def authorize(self, authorization: Authorization) -> bool:
        self.seen.append(authorization)
        return self.decision


def allow(authorization: Authorization) -> bool:
    return True


async def run(guard: Guard, arguments: str = '{"path":"/etc"}') -> Result:
    binding = bind(guard)
    return await binding.call(
        binding.contract.prepare(Request(name="inspect", arguments=arguments))
    )


# --- construction ----------------------------------------------------------------------------


def test_the_authorizer_is_checked_before_the_tool():
    with pytest.raises(InvalidToolError, match=r"^tool: invalid tool: authorizer is None$"):
        Guard(None, None)  # type: ignore[arg-type]
    with pytest.raises(
        InvalidToolError, match=r"^tool: invalid tool: authorization guard tool is None$"
    ):
        Guard(None, allow)  # type: ignore[arg-type]


def test_an_unusable_authorizer_is_refused_by_type():
    with pytest.raises(
        InvalidToolError, match=r"authorizer must have an async authorize.* got int"
    ):
        Guard(Inner(), 5)  # type: ignore[arg-type]


def test_a_non_tool_is_refused():
    with pytest.raises(InvalidToolError, match="authorization guard tool: str does not implement"):
        Guard("tool", allow)  # type: ignore[arg-type]


def test_the_definition_shape_is_validated_but_the_schema_is_not_compiled():
    with pytest.raises(
        InvalidToolError, match=r"^tool: invalid tool: authorization guard definition: "
    ):
        Guard(Inner(schema=b'{"type":"array"}'), allow)
    # Nested keywords are only compiled by bind.
    uncompilable = Inner(schema=b'{"type":"object","properties":{"a":{"type":"nonsense"}}}')
    guard = Guard(uncompilable, allow)
    with pytest.raises(InvalidToolError, match="input schema: jsonschema: invalid schema"):
        bind(guard)


def test_the_definition_is_snapshotted_once():
    inner = Inner()
    guard = Guard(inner, allow)
    assert inner.definition_calls == 1
    inner.schema = b'{"type":"object","properties":{"wider":{}}}'
    assert guard.definition().input_schema == b'{ "type": "object" }'
    bind(guard)
    assert inner.definition_calls == 1


def test_unwrap_exposes_the_inner_tool_and_its_capabilities():
    inner = Inner()
    guard = Guard(inner, allow)
    assert guard.unwrap() is inner
    assert isinstance(guard, Tool)
    assert capability(guard, InputValidatingTool) is inner


async def test_the_inner_validator_runs_at_prepare_through_the_guard():
    inner = Inner()
    binding = bind(Guard(inner, allow))
    binding.contract.prepare(Request(name="inspect", arguments='{"a":1}'))
    assert inner.validated == [b'{"a":1}']


# --- decisions -------------------------------------------------------------------------------


async def test_permission_delegates_unchanged():
    inner = Inner()
    policy = Policy(True)
    assert isinstance(policy, Authorizer)
    result = await run(Guard(inner, policy))
    assert result.output.text() == "inspected"
    assert inner.calls == 1


async def test_the_policy_sees_the_original_definition_and_the_arguments():
    policy = Policy(True)
    await run(Guard(Inner(), policy), arguments=' {"path": "/etc"} ')
    (authorization,) = policy.seen
    assert authorization.definition.input_schema == b'{ "type": "object" }'
    assert authorization.definition.name == "inspect"
    assert authorization.arguments == b' {"path": "/etc"} '
    with pytest.raises(dataclasses.FrozenInstanceError):
        authorization.arguments = b"{}"  # type: ignore[misc]
    assert not hasattr(authorization, "call")


async def test_refusal_is_a_rejected_failure_with_public_text():
    inner = Inner()
    with pytest.raises(Failure) as caught:
        await run(Guard(inner, Policy(False)))
    failure = caught.value
    assert failure.kind is FailureKind.REJECTED
    assert failure.output.text() == 'error: tool "inspect" is not authorized'
    assert str(failure) == "tool: rejected"
    assert failure.cause is None
    assert classify_failure(failure) is failure
    assert inner.calls == 0


@pytest.mark.parametrize("decision", [True, False])
async def test_plain_sync_and_async_callables_are_authorizers(decision):
    async def async_policy(authorization: Authorization) -> bool:
        return decision

    def sync_policy(authorization: Authorization) -> bool:
        return decision

    for policy in (async_policy, sync_policy):
        inner = Inner()
        if decision:
            await run(Guard(inner, policy))
        else:
            with pytest.raises(Failure):
                await run(Guard(inner, policy))
        assert inner.calls == (1 if decision else 0)


async def test_a_non_bool_decision_fails_closed():
    inner = Inner()
    with pytest.raises(AuthorizationError) as caught:
        await run(Guard(inner, lambda authorization: "yes"))  # type: ignore[arg-type,return-value]
    assert isinstance(caught.value.cause, TypeError)
    assert inner.calls == 0


async def test_a_policy_error_is_sealed_in_an_authorization_error():
    secret = PermissionError("ldap password is hunter2")
    inner = Inner()

    async def broken(authorization: Authorization) -> bool:
        raise secret

    with pytest.raises(AuthorizationError) as caught:
        await run(Guard(inner, broken))
    error = caught.value
    assert str(error) == 'tool: authorization for "inspect" failed'
    assert error.cause is secret
    assert error.__cause__ is None
    assert error.__suppress_context__
    assert "hunter2" not in str(error)
    assert classify_failure(error) is None
    assert inner.calls == 0


async def test_a_failure_inside_the_policy_error_stays_hidden():
    hidden = Failure(kind=FailureKind.REJECTED, output=Output.text_output("from policy"))

    async def broken(authorization: Authorization) -> bool:
        raise hidden

    with pytest.raises(AuthorizationError) as caught:
        await run(Guard(Inner(), broken))
    assert caught.value.cause is hidden
    assert classify_failure(caught.value) is None


async def test_a_base_exception_from_the_policy_propagates():
    async def interrupted(authorization: Authorization) -> bool:
        raise KeyboardInterrupt

    inner = Inner()
    with pytest.raises(KeyboardInterrupt):
        await run(Guard(inner, interrupted))
    assert inner.calls == 0


# --- cancellation ----------------------------------------------------------------------------


async def test_cancellation_before_the_decision_skips_the_policy():
    inner = Inner()
    policy = Policy(True)
    binding = bind(Guard(inner, policy))
    invocation = binding.contract.prepare(Request(name="inspect", arguments="{}"))

    async def cancelled_then_called() -> Result:
        task = asyncio.current_task()
        assert task is not None
        task.cancel()  # requested, not yet delivered: no await happens before call
        return await binding.call(invocation)

    with pytest.raises(asyncio.CancelledError):
        await asyncio.create_task(cancelled_then_called())
    assert policy.seen == []
    assert inner.calls == 0


async def test_cancellation_during_a_positive_decision_stops_the_tool():
    inner = Inner()

    def cancel_and_allow(authorization: Authorization) -> bool:
        task = asyncio.current_task()
        assert task is not None
        task.cancel()
        return True

    binding = bind(Guard(inner, cancel_and_allow))
    invocation = binding.contract.prepare(Request(name="inspect", arguments="{}"))
    task = asyncio.create_task(binding.call(invocation))
    with pytest.raises(asyncio.CancelledError) as caught:
        await task
    assert caught.value.__cause__ is None
    assert task.cancelled()
    assert inner.calls == 0


async def test_cancellation_with_a_policy_error_raises_cancelled_error_from_it():
    inner = Inner()
    secret = RuntimeError("policy store unreachable")

    def cancel_and_fail(authorization: Authorization) -> bool:
        task = asyncio.current_task()
        assert task is not None
        task.cancel()
        raise secret

    binding = bind(Guard(inner, cancel_and_fail))
    invocation = binding.contract.prepare(Request(name="inspect", arguments="{}"))
    with pytest.raises(asyncio.CancelledError) as caught:
        await asyncio.create_task(binding.call(invocation))
    sealed = caught.value.__cause__
    assert isinstance(sealed, AuthorizationError)
    assert sealed.cause is secret
    assert inner.calls == 0


async def test_cancellation_while_the_policy_awaits_propagates():
    inner = Inner()
    started = asyncio.Event()

    async def slow(authorization: Authorization) -> bool:
        started.set()
        await asyncio.sleep(30)
        return True

    binding = bind(Guard(inner, slow))
    invocation = binding.contract.prepare(Request(name="inspect", arguments="{}"))
    task = asyncio.create_task(binding.call(invocation))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert inner.calls == 0


async def test_a_refusal_with_cancellation_requested_is_a_cancellation():
    inner = Inner()

    def cancel_and_refuse(authorization: Authorization) -> bool:
        task = asyncio.current_task()
        assert task is not None
        task.cancel()
        return False

    binding = bind(Guard(inner, cancel_and_refuse))
    invocation = binding.contract.prepare(Request(name="inspect", arguments="{}"))
    with pytest.raises(asyncio.CancelledError):
        await asyncio.create_task(binding.call(invocation))


async def test_guards_compose_and_a_foreign_invocation_is_still_refused():
    inner = Inner()
    outer = bind(Guard(Guard(inner, allow), allow))
    result = await outer.call(outer.contract.prepare(Request(name="inspect", arguments="{}")))
    assert result.output.text() == "inspected"
    other = bind(Guard(inner, allow))
    with pytest.raises(InvalidInvocationError, match="does not belong"):
        await outer.call(other.contract.prepare(Request(name="inspect", arguments="{}")))


async def test_calling_a_guard_without_an_invocation_is_refused():
    inner = Inner()
    with pytest.raises(InvalidInvocationError, match=r"Guard\.call needs an Invocation, got str"):
        await Guard(inner, allow).call("{}")  # type: ignore[arg-type]
    assert inner.calls == 0
