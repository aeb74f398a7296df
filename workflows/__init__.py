"""The durable runtime's workflow and its client facade.

:class:`ToolCalls` starts, lists, answers and follows calls; ``ToolCallWorkflow`` runs one
logical tool call. :mod:`workflows.wire` is the public contract between the workflow and the
workers (names, inputs, the activity's tagged result). Workers (``python -m workers``) register
the workflow and the activities.

A client import never loads the workflow definition: ``ToolCallWorkflow`` is imported on first
access (module ``__getattr__``), so ``from workflows import ToolCalls`` stays client-only. The
workflow runs unsandboxed (see ``workers.workflow_runner``); the facade's modules are still
marked passed-through, so the package also loads in a sandboxed runner without re-importing
client code per run.
"""

from typing import TYPE_CHECKING, Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from workflows._answer_text import encode_answer
    from workflows._approval_prompt import ApprovalQuestion, read_approval
    from workflows._client import UNSERVED_TIMEOUT_NOW, CallOptions, ToolCalls
    from workflows._converter import (
        DATA_CONVERTER,
        ScopeToolPayloadConverter,
        with_scope_tool_converter,
    )
    from workflows._handle import ToolCallHandle
    from workflows._prompt import Prompt, json_value, read_prompt
    from workflows._routing import ToolInfo
    from workflows._status import (
        AnswerRecord,
        CallOutcome,
        CallStatus,
        CallSummary,
        PendingInput,
        Phase,
        RefusedAnswer,
        RoundRoute,
        WorkerWait,
    )
    from workflows.errors import (
        AnswerRejectedError,
        CallConflictError,
        CallNotFoundError,
        RefusalDetail,
        RefusalReason,
        ToolCallsError,
    )
    from workflows.wire import AnswerReceipt

if TYPE_CHECKING:
    from workflows._workflow import ToolCallWorkflow


def __getattr__(name: str) -> Any:
    if name == "ToolCallWorkflow":
        from workflows._workflow import ToolCallWorkflow

        return ToolCallWorkflow
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DATA_CONVERTER",
    "UNSERVED_TIMEOUT_NOW",
    "AnswerReceipt",
    "AnswerRecord",
    "AnswerRejectedError",
    "ApprovalQuestion",
    "CallConflictError",
    "CallNotFoundError",
    "CallOptions",
    "CallOutcome",
    "CallStatus",
    "CallSummary",
    "PendingInput",
    "Phase",
    "Prompt",
    "RefusalDetail",
    "RefusalReason",
    "RefusedAnswer",
    "RoundRoute",
    "ScopeToolPayloadConverter",
    "ToolCallHandle",
    "ToolCallWorkflow",
    "ToolCalls",
    "ToolCallsError",
    "ToolInfo",
    "WorkerWait",
    "encode_answer",
    "json_value",
    "read_approval",
    "read_prompt",
    "with_scope_tool_converter",
]
