"""The error tree: one base, sentinel wording, and per-type transparency (go-reference §2.1)."""

from __future__ import annotations

import traceback

import pytest

import scope_tool
from scope_tool import (
    AuthorizationError,
    CallError,
    DuplicateToolError,
    Failure,
    FailureKind,
    InputValidationPanicError,
    InvalidCallErrorError,
    InvalidDefinitionError,
    InvalidFailureError,
    InvalidInputRequestError,
    InvalidInvocationError,
    InvalidOutputError,
    InvalidPrincipalError,
    InvalidRegistryError,
    InvalidRequestError,
    InvalidResultError,
    InvalidToolError,
    InvalidWrappingChainError,
    ToolError,
)

SENTINELS = {
    InvalidToolError: "tool: invalid tool",
    InvalidInvocationError: "tool: invalid invocation",
    InvalidRequestError: "tool: invalid request",
    InvalidDefinitionError: "tool: invalid definition",
    InvalidOutputError: "tool: invalid output",
    InvalidResultError: "tool: invalid result",
    InvalidInputRequestError: "tool: invalid input request",
    InvalidFailureError: "tool: invalid failure",
    InvalidCallErrorError: "tool: invalid call error",
    InvalidWrappingChainError: "tool: invalid wrapping chain",
    DuplicateToolError: "tool: duplicate tool",
    InvalidRegistryError: "tool: invalid registry",
    InvalidPrincipalError: "tool: invalid principal",
}


def shown(error: BaseException) -> str:
    return "".join(traceback.format_exception(error))


@pytest.mark.parametrize(("error_type", "sentinel"), SENTINELS.items())
def test_each_sentinel_is_a_tool_error_and_a_value_error_with_go_wording(error_type, sentinel):
    assert issubclass(error_type, ToolError)
    assert issubclass(error_type, ValueError)
    assert str(error_type()) == sentinel
    assert str(error_type("what was wrong")) == f"{sentinel}: what was wrong"


def test_outcomes_and_diagnostics_are_tool_errors_but_not_input_errors():
    for error_type in (Failure, CallError, AuthorizationError, InputValidationPanicError):
        assert issubclass(error_type, ToolError)
        assert not issubclass(error_type, ValueError)


def test_every_public_exception_is_exported_from_the_package():
    exported = {name for name in scope_tool.__all__ if isinstance(getattr(scope_tool, name), type)}
    for error_type in (
        *SENTINELS,
        Failure,
        CallError,
        AuthorizationError,
        InputValidationPanicError,
    ):
        assert error_type.__name__ in exported


# --- transparency: __cause__ reveals -------------------------------------------------------


def test_call_error_reveals_its_cause():
    cause = TimeoutError("upstream deadline")
    error = CallError(cause=cause)
    assert error.__cause__ is cause
    assert "TimeoutError: upstream deadline" in shown(error)


def test_input_validation_panic_reveals_an_exception_value():
    defect = IndexError("validator bug")
    panic = InputValidationPanicError(defect)
    assert panic.__cause__ is defect
    assert panic.value is defect
    assert str(panic) == "tool: input validation panicked: validator bug"
    assert "IndexError: validator bug" in shown(panic)


def test_input_validation_panic_with_a_plain_value_has_no_cause():
    panic = InputValidationPanicError(42)
    assert panic.value == 42
    assert panic.__cause__ is None
    assert str(panic) == "tool: input validation panicked: 42"


# --- opacity: cause kept private -----------------------------------------------------------


def test_failure_hides_its_cause_from_the_chain_and_the_traceback():
    secret = OSError("password=hunter2")
    failure = Failure(kind=FailureKind.REJECTED, cause=secret)
    assert failure.cause is secret
    assert failure.__cause__ is None
    # str() is the cause's text, as in Go; the *chain* never includes the cause.
    assert "OSError" not in shown(failure)


def test_authorization_error_never_prints_or_chains_its_cause():
    secret = OSError("password=hunter2")
    error = AuthorizationError("inspect", secret)
    assert str(error) == 'tool: authorization for "inspect" failed'
    assert error.cause is secret
    assert error.name == "inspect"
    assert error.__cause__ is None
    assert "hunter2" not in shown(error)

    def raise_while_handling() -> None:
        try:
            raise secret
        except OSError:
            raise error  # noqa: B904 - the implicit context must stay hidden

    with pytest.raises(AuthorizationError) as caught:
        raise_while_handling()
    assert caught.value.__context__ is secret
    assert "hunter2" not in shown(caught.value)


def test_authorization_error_without_a_name():
    assert str(AuthorizationError("", None)) == "tool: authorization failed"


def test_names_are_quoted_like_go():
    assert str(AuthorizationError('we"ird', None)) == 'tool: authorization for "we\\"ird" failed'
