"""The durable runtime's workflow and its client facade.

``ToolCallWorkflow`` runs one logical tool call; :class:`ToolCalls` starts, lists, answers and
follows calls. Workers (``python -m workers``) register the workflow and the activities.

The workflow runs unsandboxed (see ``workers.workflow_runner``); the facade's modules are still
marked passed-through, so the package also loads in a sandboxed runner without re-importing
client code per run.
"""

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from workflows._client import ToolCallHandle, ToolCalls, encode_answer
    from workflows._converter import (
        DATA_CONVERTER,
        ScopeToolPayloadConverter,
        with_scope_tool_converter,
    )
    from workflows._messages import AnswerReceipt
    from workflows._status import (
        AnswerRecord,
        CallOutcome,
        CallStatus,
        CallSummary,
        PendingInput,
        Phase,
        RefusedAnswer,
    )
    from workflows.errors import (
        AnswerRejectedError,
        CallNotFoundError,
        RefusalDetail,
        RefusalReason,
        ToolCallsError,
    )

from workflows._workflow import ToolCallWorkflow

__all__ = [
    "DATA_CONVERTER",
    "AnswerReceipt",
    "AnswerRecord",
    "AnswerRejectedError",
    "CallNotFoundError",
    "CallOutcome",
    "CallStatus",
    "CallSummary",
    "PendingInput",
    "Phase",
    "RefusalDetail",
    "RefusalReason",
    "RefusedAnswer",
    "ScopeToolPayloadConverter",
    "ToolCallHandle",
    "ToolCallWorkflow",
    "ToolCalls",
    "ToolCallsError",
    "encode_answer",
    "with_scope_tool_converter",
]
