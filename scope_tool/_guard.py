"""Authorization at the universal ``Tool.call`` boundary: :class:`Guard`.

Putting the policy check inside ``call`` (rather than in a registry or a runtime) means the same
policy applies to direct calls, registries and the durable runtime alike. The policy sees only
an :class:`Authorization`, a read-only view that cannot execute anything, and the guard, not the
policy, decides what its errors mean: a refusal is a ``rejected`` :class:`~scope_tool.Failure`,
a policy that cannot decide is a sealed :class:`~scope_tool.errors.AuthorizationError`, and the
task's own cancellation always surfaces as :class:`asyncio.CancelledError`.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, TypeAlias, runtime_checkable

from scope_tool._definition import Definition
from scope_tool._failure import Failure, FailureKind
from scope_tool._invocation import Invocation
from scope_tool._output import Output
from scope_tool._principal import Principal, current_principal
from scope_tool._result import Result
from scope_tool._tool import Tool
from scope_tool._wrapper import Wrapper
from scope_tool.errors import (
    AuthorizationError,
    InvalidDefinitionError,
    InvalidInvocationError,
    InvalidToolError,
    _go_quote,
)

__all__ = ["Authorization", "Authorizer", "AuthorizerCallable", "Guard"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Authorization:
    """What a policy may inspect: the frozen definition, the admitted arguments, and who for.

    It carries no tool and no invocation, so policy code can neither bypass the contract nor
    execute the call.

    Attributes:
        definition: The definition as the guarded tool returned it when the guard was built
            (not canonicalised).
        arguments: The admitted JSON arguments, byte-exact.
        principal: Who the call acts for (:func:`~scope_tool.acting_for` around the call), or
            ``None`` when the caller named nobody; a policy that needs one refuses without it.
    """

    definition: Definition
    arguments: bytes
    principal: Principal | None = None


@runtime_checkable
class Authorizer(Protocol):
    """A policy deliberately smaller than a permission system.

    Identity, consent, tenancy and policy storage stay caller-owned (``contextvars``).
    Returning ``True`` permits execution and ``False`` refuses it; raising means no decision
    could be made, and the tool does not run either way.
    """

    async def authorize(self, authorization: Authorization) -> bool:
        """Decide whether this invocation may execute."""
        ...


#: A plain function works as a policy too, synchronous or asynchronous.
AuthorizerCallable: TypeAlias = Callable[[Authorization], bool | Awaitable[bool]]


class Guard(Wrapper):
    """A tool wrapper that asks a policy before every call.

    The inner tool's definition is snapshotted once, at construction, so later changes to the
    inner tool cannot widen an approved contract. The guard validates the definition's shape
    but does not compile its schema; :func:`~scope_tool.bind` does that. Capabilities of the
    inner tool (its input validator) resolve through :meth:`unwrap`.

    Args:
        tool: The tool to protect.
        authorizer: An object with ``async authorize(authorization) -> bool``, or a plain
            callable (sync or async) with that shape. Checked before ``tool``.

    Raises:
        InvalidToolError: A missing or unusable authorizer or tool, or an invalid definition.
    """

    __slots__ = ("_decide",)

    def __init__(self, tool: Tool, authorizer: Authorizer | AuthorizerCallable) -> None:
        self._decide = _decision_function(authorizer)
        if tool is None:
            raise InvalidToolError("authorization guard tool is None")
        if not isinstance(tool, Tool):
            raise InvalidToolError(
                f"authorization guard tool: {type(tool).__qualname__} does not implement Tool"
            )
        definition = tool.definition()
        if not isinstance(definition, Definition):
            raise InvalidToolError(
                "authorization guard definition: definition() returned "
                f"{type(definition).__qualname__}, not a Definition"
            )
        try:
            definition.validate()
        except InvalidDefinitionError as exc:
            raise InvalidToolError(f"authorization guard definition: {exc}") from exc
        self._tool = tool
        self._definition = definition

    async def call(self, invocation: Invocation) -> Result:
        """Ask the policy, then run the inner tool only if it permitted the call.

        Raises:
            asyncio.CancelledError: Cancellation was requested before the decision (the policy
                is not asked) or by the time it was made (the tool does not run). When the
                policy also failed, the :class:`AuthorizationError` is the ``__cause__``.
            AuthorizationError: The policy raised; its exception is sealed in ``.cause``.
            Failure: ``rejected``, with the model-visible text
                ``error: tool "NAME" is not authorized``.
        """
        if not isinstance(invocation, Invocation):
            raise InvalidInvocationError(
                f"Guard.call needs an Invocation, got {type(invocation).__qualname__}"
            )
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise asyncio.CancelledError()
        authorization = Authorization(
            definition=self._definition,
            arguments=invocation.arguments,
            principal=current_principal(),
        )
        try:
            allowed = await self._decide(authorization)
        except Exception as exc:
            sealed = AuthorizationError(self._definition.name, exc)
            if task is not None and task.cancelling():
                raise asyncio.CancelledError() from sealed
            raise sealed from None
        if task is not None and task.cancelling():
            raise asyncio.CancelledError()
        if not allowed:
            refusal = f"error: tool {_go_quote(self._definition.name)} is not authorized"
            raise Failure(kind=FailureKind.REJECTED, output=Output.text_output(refusal)) from None
        return await self._tool.call(invocation)

    def __repr__(self) -> str:
        return f"Guard(tool={self._tool!r})"


def _decision_function(
    authorizer: Authorizer | AuthorizerCallable,
) -> Callable[[Authorization], Awaitable[bool]]:
    """Normalise the accepted authorizer shapes into one coroutine function."""
    if authorizer is None:
        raise InvalidToolError("authorizer is None")
    method = getattr(authorizer, "authorize", None)
    if callable(method):
        return _strict_decision(method)
    if callable(authorizer):
        return _strict_decision(authorizer)
    raise InvalidToolError(
        f"authorizer must have an async authorize(authorization) method or be a callable, "
        f"got {type(authorizer).__qualname__}"
    )


def _strict_decision(
    function: Callable[[Authorization], object],
) -> Callable[[Authorization], Awaitable[bool]]:
    async def decide(authorization: Authorization) -> bool:
        decision = function(authorization)
        if inspect.isawaitable(decision):
            decision = await decision
        if not isinstance(decision, bool):
            # Failing closed: anything but a real bool is no decision at all.
            raise TypeError(f"authorizer returned {type(decision).__qualname__}, not a bool")
        return decision

    return decide
