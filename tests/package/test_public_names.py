"""Every public package's face, pinned: its sorted ``__all__``, and every name in it resolves.

A name added to or dropped from a package's ``__all__`` fails here, so the change is made on
purpose (and docs follow). Also checked: one error tree, every exception class the package
defines derives from ``scope_tool.errors.ToolError`` and is drawn in the tree (the docstring
of ``scope_tool/errors.py`` and docs/errors.md).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path
from types import ModuleType

import pytest

import scope_tool
from scope_tool.errors import ToolError

REPO = Path(__file__).resolve().parents[2]

PINNED: dict[str, list[str]] = {
    "scope_tool": [
        "APPROVAL_PROMPT_KIND",
        "ApprovalGate",
        "ApprovalPolicy",
        "Authorization",
        "AuthorizationError",
        "Authorizer",
        "Binding",
        "CallError",
        "Condition",
        "Continuation",
        "Contract",
        "Definition",
        "DuplicateToolError",
        "Failure",
        "FailureKind",
        "Func",
        "Guard",
        "InputRequest",
        "InputValidatingTool",
        "InputValidationPanicError",
        "InvalidCallErrorError",
        "InvalidDefinitionError",
        "InvalidFailureError",
        "InvalidInputRequestError",
        "InvalidInvocationError",
        "InvalidOutputError",
        "InvalidPolicyError",
        "InvalidPrincipalError",
        "InvalidRegistryError",
        "InvalidRequestError",
        "InvalidResultError",
        "InvalidToolError",
        "InvalidWrappingChainError",
        "Invocation",
        "MAX_INPUT_BYTES",
        "MediaBlock",
        "Output",
        "PolicyCarryingTool",
        "Principal",
        "Registry",
        "Request",
        "Result",
        "Rule",
        "RuleVerdict",
        "TextBlock",
        "Tool",
        "ToolError",
        "VoterGroup",
        "WrappingTool",
        "acting_for",
        "bind",
        "capability",
        "check_ijson",
        "classify_failure",
        "current_principal",
        "func_tool",
        "require_approval",
    ],
    "scope_tool.errors": [
        "AuthorizationError",
        "DuplicateToolError",
        "InputValidationPanicError",
        "InvalidCallErrorError",
        "InvalidDefinitionError",
        "InvalidFailureError",
        "InvalidInputRequestError",
        "InvalidInvocationError",
        "InvalidOutputError",
        "InvalidPolicyError",
        "InvalidPrincipalError",
        "InvalidRegistryError",
        "InvalidRequestError",
        "InvalidResultError",
        "InvalidToolError",
        "InvalidWrappingChainError",
        "ToolError",
    ],
    "scope_tool.wire": [
        "ANNOUNCE_WORKFLOW",
        "ANSWER",
        "ASSIGNEE_KEY",
        "AnnounceInput",
        "AnswerInput",
        "AnswerReceipt",
        "CALL_TOOL_ACTIVITY",
        "CALL_TOOL_HERE_ACTIVITY",
        "CATALOG",
        "CATALOG_MEMO",
        "CATALOG_WORKFLOW_NAME",
        "CHANNELS",
        "CHECK_ANSWER_ACTIVITY",
        "CONTRACT_QUEUE_DIGEST_CHARS",
        "CallToolInput",
        "CatalogInput",
        "CatalogTool",
        "CheckAnswerInput",
        "CheckAnswerResult",
        "DELEGATE_QUESTION",
        "DelegateInput",
        "EXTEND_DEADLINE",
        "ExtendInput",
        "ExtendReceipt",
        "FIRST_STOP",
        "NOTIFY_ACTIVITY",
        "NOTIFY_WORKFLOW",
        "NOT_SERVED_HERE",
        "NotifyDelivery",
        "NotifyInput",
        "PHASE_KEY",
        "POST_SLACK_ACTIVITY",
        "PUBLISH",
        "REEVALUATE_RULES",
        "RELEASE_ROUND_ACTIVITY",
        "ROUND_ACTIVITIES",
        "ROUND_RUNNING",
        "ROUND_RUNNING_AFTER_SECONDS",
        "ReevaluateInput",
        "ReevaluateReceipt",
        "ReleaseInput",
        "RoundCancelled",
        "RoundCompleted",
        "RoundErrored",
        "RoundFailed",
        "RoundInputRequested",
        "RoundInvalid",
        "RoundResult",
        "SEND_EMAIL_ACTIVITY",
        "STAGE_ABOVE_BYTES",
        "STAGE_ANSWER",
        "STATUS",
        "StagedAnswer",
        "TASK_CHECK_BYTES",
        "TOOL_KEY",
        "ToolCallInput",
        "ToolStartedHeartbeat",
        "WITHDRAW",
        "WITHDRAW_QUESTION",
        "WORKFLOW_NAME",
        "WithdrawInput",
        "WithdrawReceipt",
        "WorkerCatalog",
        "catalog_workflow_id",
        "contract_queue",
        "first_stop_update_id",
        "process_queue",
        "request_digest",
        "tool_queue",
        "update_id_digest",
    ],
    "scope_tool.config": [],
    "scope_tool.client": [
        "AnswerReceipt",
        "AnswerRecord",
        "AnswerRejectedError",
        "AnswerText",
        "ApprovalQuestion",
        "BatchItem",
        "BatchProblem",
        "BatchReceipt",
        "BatchRefusedError",
        "CallConflictError",
        "CallNotFoundError",
        "CallOptions",
        "CallOutcome",
        "CallStatus",
        "CallSummary",
        "DATA_CONVERTER",
        "PendingInput",
        "Phase",
        "Prompt",
        "RefusalDetail",
        "RefusalReason",
        "RefusedAnswer",
        "RoundRoute",
        "ScopeToolPayloadConverter",
        "ToolCallHandle",
        "ToolCalls",
        "ToolCallsError",
        "ToolInfo",
        "UNSERVED_TIMEOUT_NOW",
        "WithdrawReceipt",
        "WithdrawalRefusedError",
        "WorkerWait",
        "encode_answer",
        "json_value",
        "read_approval",
        "read_prompt",
        "with_scope_tool_converter",
    ],
    "scope_tool.workflows": ["CatalogWorkflow", "NotifyWorkflow", "ToolCallWorkflow"],
    "scope_tool.workers": [
        "Notifier",
        "ToolActivities",
        "ToolWorker",
        "build_worker",
        "load_registry",
        "notify",
        "run_worker",
        "workflow_runner",
    ],
    "scope_tool.serving": [],
    "scope_tool.testing": [
        "DevServerProcess",
        "MissingBinaryError",
        "StartedServer",
        "StartedWorker",
        "answer_when_asked",
        "free_port",
        "start_local_server",
        "start_time_skipping_server",
        "start_worker",
        "wait_for_input",
        "wait_for_phase",
    ],
    "scope_tool.inbox": [
        "AllowedHosts",
        "AuthenticationError",
        "InboxAuth",
        "InboxConfigError",
        "InboxOptions",
        "add_arguments",
        "create_app",
        "mint_login_token",
        "serve_inbox",
    ],
    "scope_tool.mcp": [
        "CALL_ID_META_KEY",
        "FormKind",
        "FormPlan",
        "McpFrontEndError",
        "McpOptions",
        "McpSettingsError",
        "NoWorkerError",
        "STATE_KEY_ENV",
        "STATUS_TOOL",
        "TASKS_EXTENSION",
        "add_arguments",
        "build_server",
        "plan_form",
        "read_state_key",
        "run",
        "serve_http",
    ],
    "scope_tool.gateway": [
        "ELICITATION_PROMPT_KIND",
        "Gateway",
        "GatewayConfig",
        "GatewayConfigError",
        "GatewayError",
        "IDEMPOTENCY_META_KEY",
        "Policy",
        "ToolPolicy",
        "UpstreamCallLostError",
        "UpstreamConfig",
        "UpstreamError",
        "UpstreamTool",
        "idempotency_key",
        "load_gateway",
    ],
    "scope_tool.agents": [
        "AgentsError",
        "ModelResult",
        "ModelToolCall",
        "StrictModeError",
        "StrictProblem",
        "Turn",
        "TurnCall",
        "TurnError",
        "anthropic_tools",
        "call_id_for",
        "mcp_tools",
        "model_result",
        "openai_strict_problems",
        "openai_tools",
        "run_turn",
        "wait_for_stop",
    ],
    "scope_tool.agents.openai_agents": ["ScopeTools"],
    "scope_tool.agents.pydantic_ai": ["ScopeToolset", "deferred_results"],
    "scope_tool.agents.google_adk": [
        "ScopeTool",
        "ScopeToolset",
        "confirmation_responses",
        "session_conversation_id",
        "waiting_calls",
    ],
    "scope_tool.agents.langchain": ["ScopeTool", "scope_tools"],
}

# Private control-flow signals, raised and caught inside one engine; never seen by a caller.
INTERNAL_SIGNALS = {
    "scope_tool._approval._NotRelocatable",
    "scope_tool._schema_fast._Unsupported",
    "scope_tool._schema_limits.OverBudget",
    "scope_tool._schema_limits.TooDeep",
    "scope_tool.inbox.gate._Refusal",
    "scope_tool.workers._notify._RefusedPeer",
}


def _all_modules() -> list[ModuleType]:
    modules = [scope_tool]
    for info in pkgutil.walk_packages(scope_tool.__path__, "scope_tool."):
        if info.name.rsplit(".", 1)[-1] == "__main__":
            continue  # running it is the command line; importing it parses sys.argv
        modules.append(importlib.import_module(info.name))
    return modules


def _is_public(module: ModuleType) -> bool:
    return not any(part.startswith("_") for part in module.__name__.split("."))


@pytest.mark.parametrize("package", sorted(PINNED))
def test_all_is_pinned(package: str) -> None:
    module = importlib.import_module(package)
    assert sorted(module.__all__) == PINNED[package]
    assert len(set(module.__all__)) == len(module.__all__), "a name is listed twice"


@pytest.mark.parametrize("package", sorted(PINNED))
def test_every_name_in_all_resolves(package: str) -> None:
    module = importlib.import_module(package)
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert missing == []


def test_every_public_module_exports_names_that_resolve() -> None:
    for module in filter(_is_public, _all_modules()):
        for name in getattr(module, "__all__", ()):
            assert hasattr(module, name), f"{module.__name__}.__all__ names missing {name!r}"


def test_every_public_package_is_pinned() -> None:
    packages = {
        module.__name__
        for module in _all_modules()
        if _is_public(module) and hasattr(module, "__path__")
    }
    assert packages - {"scope_tool.cli"} <= set(PINNED)


def _exception_classes() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for module in _all_modules():
        for value in vars(module).values():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == module.__name__
            ):
                found[f"{module.__name__}.{value.__qualname__}"] = value
    return found


def test_every_exception_class_derives_from_tool_error() -> None:
    classes = _exception_classes()
    assert set(classes) >= INTERNAL_SIGNALS, "an internal signal was renamed or removed"
    outside = sorted(
        name
        for name, cls in classes.items()
        if name not in INTERNAL_SIGNALS and not issubclass(cls, ToolError)
    )
    assert outside == []


def test_the_error_tree_is_drawn_in_one_place() -> None:
    tree = scope_tool.errors.__doc__ or ""
    page = (REPO / "docs" / "errors.md").read_text(encoding="utf-8")
    for name, cls in _exception_classes().items():
        if name in INTERNAL_SIGNALS or cls.__name__.startswith("_"):
            continue
        drawn = cls.__name__
        if cls.__module__ == "scope_tool.errors" and drawn.startswith("Invalid"):
            drawn = "Invalid<Thing>Error"  # one line of the tree stands for all of them
        assert drawn in tree, f"{name} is missing from scope_tool/errors.py's tree"
        assert drawn in page, f"{name} is missing from docs/errors.md"
