"""scope_tool: the provider-neutral executable tool protocol.

An untrusted :class:`Request` (typically proposed by a model) becomes an executable
:class:`Invocation` only through the frozen :class:`Contract` that :func:`bind` makes from a
:class:`Tool`. A call completes with a :class:`Result` (an :class:`Output`, or an
:class:`InputRequest` asking for external input), or ends unsuccessfully with a
:class:`Failure`. :class:`Guard` adds authorization at the call boundary (seeing the
:class:`Principal` a call acts for), :func:`require_approval` makes any tool ask a person
first, :class:`Func` adapts typed functions, and :class:`Registry` holds bound tools by name. Nothing here imports
Temporal: the durable runtime builds on this package, not the other way round.
"""

from scope_tool import errors
from scope_tool._approval import APPROVAL_PROMPT_KIND, ApprovalGate, require_approval
from scope_tool._contract import Binding, Contract, bind
from scope_tool._definition import Definition
from scope_tool._failure import CallError, Failure, FailureKind, classify_failure
from scope_tool._func import Func, func_tool
from scope_tool._guard import Authorization, Authorizer, Guard
from scope_tool._ijson import MAX_INPUT_BYTES, check_ijson
from scope_tool._input_request import Continuation, InputRequest
from scope_tool._invocation import Invocation
from scope_tool._output import MediaBlock, Output, TextBlock
from scope_tool._policy import ApprovalPolicy, VoterGroup
from scope_tool._principal import Principal, acting_for, current_principal
from scope_tool._registry import Registry
from scope_tool._request import Request
from scope_tool._result import Result
from scope_tool._rules import Condition, Rule, RuleVerdict
from scope_tool._tool import (
    InputValidatingTool,
    PolicyCarryingTool,
    Tool,
    WrappingTool,
    capability,
)

# The error types: `errors.__all__` is the one list of them, and this package exports it whole.
from scope_tool.errors import *  # noqa: F403

__all__ = [
    "APPROVAL_PROMPT_KIND",
    "MAX_INPUT_BYTES",
    "ApprovalGate",
    "ApprovalPolicy",
    "Authorization",
    "Authorizer",
    "Binding",
    "CallError",
    "Condition",
    "Continuation",
    "Contract",
    "Definition",
    "Failure",
    "FailureKind",
    "Func",
    "Guard",
    "InputRequest",
    "InputValidatingTool",
    "Invocation",
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
]
__all__ += errors.__all__
