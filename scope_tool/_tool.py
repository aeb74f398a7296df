"""The executable tool protocol and its optional capabilities.

A :class:`Tool` is the smallest thing the package can execute: a definition the model sees and
an asynchronous ``call`` that only ever receives an :class:`~scope_tool.Invocation` admitted by
the tool's own frozen contract. Everything else a tool can do (validate input beyond JSON
Schema, wrap another tool) is an optional capability, resolved through the decorator chain by
:func:`capability` so that wrappers such as :class:`~scope_tool.Guard` stay transparent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, TypeVar, runtime_checkable

from scope_tool.errors import InvalidWrappingChainError

if TYPE_CHECKING:
    from scope_tool._definition import Definition
    from scope_tool._invocation import Invocation
    from scope_tool._policy import ApprovalPolicy
    from scope_tool._result import Result

__all__ = [
    "MAX_WRAPPING_DEPTH",
    "InputValidatingTool",
    "PolicyCarryingTool",
    "Tool",
    "WrappingTool",
    "capability",
]

#: At most this many ``unwrap()`` calls are made while resolving a capability; a longer (or
#: cyclic) chain is invalid. Tools need not be hashable or comparable, so a depth bound, not
#: identity tracking, is what catches cycles.
MAX_WRAPPING_DEPTH = 64

_CapabilityT = TypeVar("_CapabilityT")


@runtime_checkable
class Tool(Protocol):
    """Executes invocations admitted by its exact frozen contract.

    Errors carry no retry, pause or abort policy: the driving runtime owns those decisions.
    A tool that wants to publish a complete unsuccessful outcome raises
    :class:`~scope_tool.Failure`; one that wants to keep evidence of a non-final error raises
    :class:`~scope_tool.CallError`. Asking for input is a result, never an exception.
    """

    def definition(self) -> Definition:
        """Return a valid definition; :func:`~scope_tool.bind` calls this exactly once."""
        ...

    async def call(self, invocation: Invocation) -> Result:
        """Execute one schema-validated invocation; never retain it after returning."""
        ...


@runtime_checkable
class WrappingTool(Protocol):
    """A decorator around another tool, exposing the chain used to resolve capabilities.

    ``unwrap`` must return the same inner tool for the wrapper's lifetime and perform no I/O;
    ``None`` ends the chain.
    """

    def unwrap(self) -> Tool | None:
        """Return the next inner tool, or ``None`` when there is none."""
        ...


@runtime_checkable
class InputValidatingTool(Protocol):
    """Supplies input admission rules that JSON Schema cannot express.

    The returned validator must be independent of the executable tool (it may not capture it),
    deterministic, bounded, free of side effects, safe for concurrent use, and must neither
    mutate nor retain its argument. It rejects input by raising :class:`ValueError`; any other
    exception is treated as a defect of the validator
    (:class:`~scope_tool.errors.InputValidationPanicError`). ``None`` means the schema is the
    complete admission contract.
    """

    def input_validator(self) -> Callable[[bytes], None] | None:
        """Return the validator, declared once per :func:`~scope_tool.bind`."""
        ...


@runtime_checkable
class PolicyCarryingTool(Protocol):
    """Decides how its questions are answered: an :class:`~scope_tool.ApprovalPolicy` of its own.

    A durable runtime applies the policy to every question the tool asks in a call that was
    started without a policy of its own (a call's policy replaces the tool's). Resolved once
    per :func:`~scope_tool.bind` through the wrapping chain, outermost first, so a gate's
    policy (``require_approval(tool, policy=...)``) wins over one of the tool it wraps. The
    method must be deterministic and free of I/O; ``None`` means the tool carries no policy.
    """

    def approval_policy(self) -> ApprovalPolicy | None:
        """Return the policy, declared once per :func:`~scope_tool.bind`."""
        ...


def capability(tool: object, protocol_type: type[_CapabilityT]) -> _CapabilityT | None:
    """Find the outermost tool in a wrapping chain that implements ``protocol_type``.

    The outermost implementation wins, so a wrapper can override a capability of what it wraps.
    The walk stops (not found) at a tool that is not a :class:`WrappingTool` or whose
    ``unwrap()`` returns ``None``.

    Args:
        tool: The tool to start from (``None`` is simply not found).
        protocol_type: A class or ``runtime_checkable`` protocol to test with ``isinstance``.

    Returns:
        The first object in the chain that is an instance of ``protocol_type``, or ``None``.

    Raises:
        InvalidWrappingChainError: The chain needs more than :data:`MAX_WRAPPING_DEPTH` unwraps
            (it is too deep, or cyclic). The message names the type of ``tool``.
    """
    current: object = tool
    depth = 0
    while current is not None:
        if isinstance(current, protocol_type):
            return current
        if not isinstance(current, WrappingTool):
            return None
        if depth == MAX_WRAPPING_DEPTH:
            raise InvalidWrappingChainError(
                f"{type(tool).__qualname__} exceeds {MAX_WRAPPING_DEPTH} wrappers"
            )
        current = current.unwrap()
        depth += 1
    return None
