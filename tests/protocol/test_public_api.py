"""The package's public face: pinned names, sealed types, and no Temporal import."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest

import scope_tool

# The public names, in `__all__`'s order: the package's own constants, types and functions, each
# group sorted, then the error types of `scope_tool.errors`, whose `__all__` the package extends.
OWN_NAMES = """
    APPROVAL_PROMPT_KIND MAX_INPUT_BYTES
    ApprovalGate ApprovalPolicy Authorization Authorizer Binding CallError Condition Continuation
    Contract Definition Failure FailureKind Func Guard InputRequest InputValidatingTool Invocation
    MediaBlock Output PolicyCarryingTool Principal Registry Request Result Rule RuleVerdict
    TextBlock Tool VoterGroup WrappingTool
    acting_for bind capability check_ijson classify_failure current_principal func_tool
    require_approval
""".split()  # noqa: SIM905 (a word list reads better than one name per line)
ERROR_NAMES = """
    AuthorizationError DuplicateToolError InputValidationPanicError InvalidCallErrorError
    InvalidDefinitionError InvalidFailureError InvalidInputRequestError InvalidInvocationError
    InvalidOutputError InvalidPolicyError InvalidPrincipalError InvalidRegistryError
    InvalidRequestError
    InvalidResultError InvalidToolError InvalidWrappingChainError ToolError
""".split()  # noqa: SIM905 (a word list reads better than one name per line)
PUBLIC_NAMES = OWN_NAMES + ERROR_NAMES


def test_all_is_pinned():
    assert scope_tool.__all__ == PUBLIC_NAMES
    assert scope_tool.errors.__all__ == ERROR_NAMES


def test_all_is_sorted_constants_then_classes_then_functions_then_errors():
    constants = [name for name in OWN_NAMES if name.isupper()]
    classes = [name for name in OWN_NAMES if name[0].isupper() and not name.isupper()]
    functions = [name for name in OWN_NAMES if name[0].islower()]
    assert sorted(constants) + sorted(classes) + sorted(functions) == OWN_NAMES
    assert sorted(ERROR_NAMES) == ERROR_NAMES


def test_every_public_name_exists_and_is_documented():
    for name in PUBLIC_NAMES:
        value = getattr(scope_tool, name)
        if not name.isupper():
            assert inspect.getdoc(value), f"{name} has no docstring"


def test_the_size_limit_is_one_mebibyte():
    assert scope_tool.MAX_INPUT_BYTES == 1 << 20


def test_the_tool_protocol_has_exactly_two_members():
    members = {name for name, _ in inspect.getmembers(scope_tool.Tool) if not name.startswith("_")}
    assert members == {"definition", "call"}
    assert inspect.iscoroutinefunction(scope_tool.Tool.call)
    assert list(inspect.signature(scope_tool.Tool.call).parameters) == ["self", "invocation"]


def test_only_the_package_mints_trusted_values():
    for sealed in (scope_tool.Invocation, scope_tool.Contract, scope_tool.Binding):
        with pytest.raises(TypeError):
            sealed()
    with pytest.raises(TypeError):
        scope_tool.Continuation()


def test_importing_the_protocol_does_not_import_temporal():
    code = "import sys, scope_tool; print(sorted(m for m in sys.modules if 'temporal' in m))"
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert completed.stdout.strip() == "[]"


def test_func_exposes_exactly_the_tool_surface():
    public = {name for name, _ in inspect.getmembers(scope_tool.Func) if not name.startswith("_")}
    assert public == {"call", "definition", "input_validator"}
