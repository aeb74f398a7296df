"""Failure, FailureKind, CallError and classify_failure (go-reference §2.8, §2.9)."""

from __future__ import annotations

import pickle
import traceback

import pytest

from scope_tool import (
    CallError,
    Failure,
    FailureKind,
    InvalidCallErrorError,
    InvalidFailureError,
    Output,
    ToolError,
    classify_failure,
)


def rejected(text: str = "no") -> Failure:
    return Failure(kind=FailureKind.REJECTED, output=Output.text_output(text))


# --- FailureKind and construction ------------------------------------------------------------


def test_failure_kinds_are_the_go_strings():
    assert FailureKind.FAILED == "failed"
    assert FailureKind.REJECTED == "rejected"
    assert [kind.value for kind in FailureKind] == ["failed", "rejected"]


def test_failed_requires_a_cause():
    with pytest.raises(InvalidFailureError) as caught:
        Failure(kind=FailureKind.FAILED)
    assert str(caught.value) == "tool: invalid failure: failed outcome requires a cause"


def test_rejected_may_have_no_cause():
    failure = Failure(kind=FailureKind.REJECTED)
    assert failure.cause is None
    assert str(failure) == "tool: rejected"
    assert failure.output == Output()


@pytest.mark.parametrize("kind", ["", "FAILED", "aborted"])
def test_unknown_kinds_are_refused_with_the_kind_quoted(kind):
    with pytest.raises(InvalidFailureError) as caught:
        Failure(kind=kind, cause=RuntimeError("x"))
    assert str(caught.value) == f'tool: invalid failure: kind "{kind}"'


def test_non_string_kinds_and_wrong_types_are_refused():
    with pytest.raises(InvalidFailureError, match="kind 3"):
        Failure(kind=3)  # type: ignore[arg-type]
    with pytest.raises(InvalidFailureError, match="cause must be an exception or None, got str"):
        Failure(kind=FailureKind.FAILED, cause="boom")  # type: ignore[arg-type]
    with pytest.raises(InvalidFailureError, match="output: must be an Output, got str"):
        Failure(kind=FailureKind.REJECTED, output="nope")  # type: ignore[arg-type]


def test_plain_strings_work_as_kinds():
    assert Failure(kind="failed", cause=OSError("x")).kind is FailureKind.FAILED


def test_failure_text_is_the_cause_text_or_the_kind():
    assert str(Failure(kind=FailureKind.FAILED, cause=OSError("disk full"))) == "disk full"
    assert str(Failure(kind=FailureKind.REJECTED, cause=PermissionError("denied"))) == "denied"
    assert str(rejected()) == "tool: rejected"


def test_failure_is_a_tool_error_but_not_a_value_error():
    failure = rejected()
    assert isinstance(failure, ToolError)
    assert not isinstance(failure, ValueError)


# --- opacity ---------------------------------------------------------------------------------


def test_the_cause_is_private_never_chained():
    cause = OSError("internal diagnostic")
    failure = Failure(kind=FailureKind.FAILED, output=Output.text_output("public"), cause=cause)
    assert failure.cause is cause
    assert failure.__cause__ is None
    assert failure.output.text() == "public"


def test_a_failure_raised_inside_except_does_not_show_the_diagnostic():
    try:
        try:
            raise OSError("secret connection string")
        except OSError:
            raise rejected("refused") from None
    except Failure as failure:
        shown = "".join(traceback.format_exception(failure))
    assert "secret connection string" not in shown

    try:
        try:
            raise OSError("secret connection string")
        except OSError:
            raise rejected("refused")  # noqa: B904 - the point is the implicit context
    except Failure as failure:
        shown = "".join(traceback.format_exception(failure))
    assert "secret connection string" not in shown


def test_failure_survives_pickling():
    failure = Failure(
        kind=FailureKind.FAILED, output=Output.text_output("public"), cause=OSError("x")
    )
    copy = pickle.loads(pickle.dumps(failure))
    assert copy.kind is FailureKind.FAILED
    assert copy.output == failure.output
    assert str(copy) == "x"


# --- CallError -------------------------------------------------------------------------------


def test_call_error_is_transparent():
    cause = TimeoutError("deadline exceeded")
    error = CallError(cause=cause, evidence=Output.text_output("wrote 3 of 5 rows"))
    assert error.__cause__ is cause
    assert error.cause is cause
    assert str(error) == "deadline exceeded"
    assert error.evidence.text() == "wrote 3 of 5 rows"
    assert not isinstance(error, Failure)


def test_call_error_requires_a_cause():
    with pytest.raises(InvalidCallErrorError) as caught:
        CallError(cause=None)  # type: ignore[arg-type]
    assert str(caught.value) == "tool: invalid call error: cause is required"
    with pytest.raises(InvalidCallErrorError, match="cause must be an exception, got str"):
        CallError(cause="boom")  # type: ignore[arg-type]
    with pytest.raises(InvalidCallErrorError, match="evidence: must be an Output, got dict"):
        CallError(cause=OSError("x"), evidence={})  # type: ignore[arg-type]


def test_call_error_evidence_defaults_to_the_empty_output():
    assert CallError(cause=OSError("x")).evidence == Output()


def test_call_error_survives_pickling():
    error = CallError(cause=OSError("x"), evidence=Output.text_output("seen"))
    copy = pickle.loads(pickle.dumps(error))
    assert str(copy) == "x"
    assert copy.evidence == error.evidence
    assert isinstance(copy.__cause__, OSError)


# --- classify_failure ------------------------------------------------------------------------


def test_nothing_and_ordinary_errors_have_no_outcome():
    assert classify_failure(None) is None
    assert classify_failure(RuntimeError("x")) is None
    assert classify_failure(CallError(cause=RuntimeError("x"))) is None


def test_a_failure_classifies_as_itself():
    failure = rejected()
    assert classify_failure(failure) is failure


def test_explicit_wrapping_is_followed():
    failure = rejected()

    def wrap() -> None:
        try:
            raise failure
        except Failure as inner:
            raise RuntimeError("tool call") from inner

    with pytest.raises(RuntimeError) as caught:
        wrap()
    assert classify_failure(caught.value) is failure


def test_call_error_wrapping_is_followed():
    failure = Failure(kind=FailureKind.FAILED, cause=OSError("x"))
    assert classify_failure(CallError(cause=failure)) is failure
    outer = RuntimeError("outer")
    outer.__cause__ = CallError(cause=failure)
    assert classify_failure(outer) is failure


def test_the_outermost_failure_wins():
    inner = rejected("inner")
    outer = Failure(kind=FailureKind.FAILED, cause=RuntimeError("outer"))
    wrapper = RuntimeError("wrapper")
    wrapper.__cause__ = outer
    outer.__cause__ = inner  # even if someone chains it by hand
    assert classify_failure(wrapper) is outer


def test_a_failure_inside_another_failures_cause_is_not_found():
    hidden = rejected("hidden")
    outer = Failure(kind=FailureKind.FAILED, cause=hidden)
    assert classify_failure(outer) is outer
    # A non-failure that keeps a failure privately (not chained) establishes nothing either.
    sealed = RuntimeError("policy")
    sealed.args = (hidden,)
    assert classify_failure(sealed) is None


def test_implicit_context_is_not_followed():

    def raise_while_handling() -> None:
        try:
            raise rejected()
        except Failure:
            raise RuntimeError("during handling")  # noqa: B904

    with pytest.raises(RuntimeError) as caught:
        raise_while_handling()
    assert isinstance(caught.value.__context__, Failure)
    assert classify_failure(caught.value) is None


@pytest.mark.parametrize("failures", [1, 2])
def test_exception_groups_are_ambiguous(failures):
    group = ExceptionGroup("joined", [rejected(str(i)) for i in range(failures)] + [OSError("x")])
    assert classify_failure(group) is None
    wrapped = RuntimeError("batch")
    wrapped.__cause__ = group
    assert classify_failure(wrapped) is None


def test_a_cause_cycle_terminates():
    first, second = RuntimeError("a"), RuntimeError("b")
    first.__cause__ = second
    second.__cause__ = first
    assert classify_failure(first) is None


def test_the_seed_example_wrapped_failure():
    # The Go example: fmt.Errorf("tool call: %w", failure); ClassifyFailure finds it and
    # errors.Is(wrapped, failure.Cause()) is false because the cause is opaque.
    diagnostic = RuntimeError("internal authorization diagnostic")
    failure = Failure(
        kind=FailureKind.REJECTED,
        cause=diagnostic,
        output=Output.text_output("this operation is not permitted"),
    )
    wrapped = RuntimeError(f"tool call: {failure}")
    wrapped.__cause__ = failure
    found = classify_failure(wrapped)
    assert found is failure
    chain = []
    current: BaseException | None = wrapped
    while current is not None:
        chain.append(current)
        current = current.__cause__
    assert diagnostic not in chain
