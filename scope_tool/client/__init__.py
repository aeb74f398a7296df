"""The client facade: start, list, answer and follow durable tool calls.

:class:`ToolCalls` is the one way in (``await ToolCalls.connect(...)``); a
:class:`ToolCallHandle` follows one call. The values a call's status is made of
(:class:`CallStatus`, :class:`PendingInput`, the refusal reasons) live in :mod:`scope_tool.wire`,
which both sides of Temporal share, and are re-exported here.

A client import never loads workflow code: the workflow definition lives in
:mod:`scope_tool.workflows` and only a worker imports it. The facade's modules are marked
passed-through, so the package also loads in a sandboxed workflow runner without re-importing
client code per run.
"""

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from scope_tool.client._answer_text import AnswerText, encode_answer
    from scope_tool.client._batch import (
        BatchItem,
        BatchProblem,
        BatchReceipt,
        BatchRefusedError,
    )
    from scope_tool.client._client import UNSERVED_TIMEOUT_NOW, CallOptions, ToolCalls
    from scope_tool.client._handle import ToolCallHandle
    from scope_tool.client._routing import ToolInfo
    from scope_tool.config._converter import (
        DATA_CONVERTER,
        ScopeToolPayloadConverter,
        with_scope_tool_converter,
    )
    from scope_tool.wire import AnswerReceipt, WithdrawReceipt
    from scope_tool.wire._approval_prompt import ApprovalQuestion, read_approval
    from scope_tool.wire._prompt import Prompt, json_value, read_prompt
    from scope_tool.wire._status import (
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
    from scope_tool.wire.errors import (
        AnswerRejectedError,
        CallConflictError,
        CallNotFoundError,
        RefusalDetail,
        RefusalReason,
        ToolCallsError,
        WithdrawalRefusedError,
    )

__all__ = [
    "DATA_CONVERTER",
    "UNSERVED_TIMEOUT_NOW",
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
    "WithdrawReceipt",
    "WithdrawalRefusedError",
    "WorkerWait",
    "encode_answer",
    "json_value",
    "read_approval",
    "read_prompt",
    "with_scope_tool_converter",
]
