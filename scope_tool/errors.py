"""The package's one error hierarchy.

Every exception any part of ``scope_tool`` raises for a reason of its own derives from
:class:`ToolError`, from the protocol up to the front ends, configuration errors included, so
``except ToolError`` catches them all. Classes that report bad input or a bad setting are also
:class:`ValueError` (a missing call is also :class:`LookupError`, a missing server binary also
:class:`RuntimeError`), so generic callers can keep catching those. This module defines the
protocol's classes; the others live beside the layer that raises them (a low layer cannot
import a higher one) and are drawn here so the whole tree is in one place (also in
docs/errors.md; tests/package/test_public_names.py checks that every class is in it)::

    ToolError(Exception)                    scope_tool.errors
    ├── Invalid<Thing>Error   (ValueError)  "tool: invalid <thing>", one per thing: tool,
    │                                       invocation, request, definition, output, result,
    │                                       input request, failure, call error, wrapping
    │                                       chain, registry, principal,
    │                                       policy
    ├── DuplicateToolError    (ValueError)  "tool: duplicate tool"
    ├── InputValidationPanicError           "tool: input validation panicked: V"
    ├── AuthorizationError                  "tool: authorization for "NAME" failed"
    ├── Failure    (scope_tool._failure)    one definite unsuccessful outcome
    ├── CallError  (scope_tool._failure)    transparent wrapper carrying evidence
    ├── IJSONError            (ValueError)  text is not one I-JSON document (check_ijson)
    ├── SchemaError           (ValueError)  a document cannot be a JSON Schema
    ├── SchemaValidationError (ValueError)  a value does not satisfy a schema
    ├── CompileError          (ValueError)  a schema does not compile (exact engine)
    ├── ToolCallsError                      scope_tool.wire.errors (re-exported by
    │   │                                   scope_tool.client): the durable runtime
    │   ├── AnswerRejectedError   (ValueError)  an answer was refused; nothing changed
    │   ├── WithdrawalRefusedError (ValueError) a withdrawal was refused; nothing changed
    │   ├── BatchRefusedError     (ValueError)  a batch failed its check; nothing was sent
    │   ├── CallConflictError     (ValueError)  a call id names a call of another request
    │   ├── CallNotFoundError    (LookupError)  no call with that id
    │   ├── SettingsError         (ValueError)  a connection setting is wrong
    │   ├── EncryptionConfigError (ValueError)  SCOPE_TOOL_ENCRYPTION_KEYS(_FILE) malformed
    │   ├── PayloadDecryptionError              a payload needs a key this process lacks
    │   └── TelemetryConfigError  (ValueError)  tracing asked for without OpenTelemetry
    ├── IdentityError         (ValueError)  scope_tool.wire.identity: an identity token
    │                                       cannot be issued or verified (``reason``)
    ├── LinkError             (ValueError)  scope_tool.wire.links: an email or Slack answer
    │                                       link is forged, malformed or expired (``reason``)
    ├── CommandError                        scope_tool.serving._errors: a command-line
    │                                       failure, one line and an exit code
    ├── MissingBinaryError  (RuntimeError)  scope_tool.testing: no Temporal binary
    ├── InboxConfigError      (ValueError)  scope_tool.inbox: a configuration that would let
    │                                       anyone answer, or cannot work
    ├── AuthenticationError                 scope_tool.inbox: a request did not prove who
    │                                       sent it (401, nothing changed)
    ├── AnswerFormError       (ValueError)  scope_tool.inbox.form_values: a form submission
    │                                       cannot become JSON (``problems``)
    ├── GatewayError                        scope_tool.gateway
    │   ├── GatewayConfigError (ValueError) the gateway config is malformed
    │   ├── UpstreamError                   an upstream MCP server or tool cannot be served
    │   └── UpstreamCallLostError           an upstream call's outcome is unknown (its key)
    ├── McpFrontEndError                    scope_tool.mcp
    │   ├── McpSettingsError  (ValueError)  a setting of ``scope-tool mcp`` is malformed
    │   └── NoWorkerError                   no worker polls the task queue
    └── AgentsError                         scope_tool.agents
        ├── StrictModeError   (ValueError)  definitions break OpenAI strict mode
        └── TurnError         (ValueError)  a model turn's tool calls are malformed

Not in the tree, on purpose: private control-flow signals, caught inside the engine that
raises them and never seen by a caller (``_schema_limits.TooDeep`` and ``OverBudget``,
``_schema_fast._Unsupported``, ``_approval._NotRelocatable``, ``inbox.gate._Refusal``, ``workers._notify._RefusedPeer``), and an
input request, which is a result, not an error.

Messages keep the Go catalogue's wording: the sentinel text, then ``": "`` and the detail
(``tool: invalid invocation: arguments: ...``). Go's ``%w`` wrapping becomes
``raise X(detail) from cause``. Transparency is chosen per type exactly as in Go:
:class:`InputValidationPanicError` (and ``CallError``) chain their cause through
``__cause__``; :class:`AuthorizationError` (and ``Failure``) keep it private in ``.cause``
and never print it. ``ToolError`` itself takes a plain message, so every subclass outside
this module is an ordinary exception with its own constructor.
"""

from __future__ import annotations

from typing import ClassVar

from scope_tool._read_only import ReadOnly

__all__ = [
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
]


class ToolError(Exception):
    """Base of every exception the package raises for a protocol reason."""


class _SentinelError(ToolError, ValueError):
    """A Go sentinel: a fixed prefix and an optional detail that says what was wrong."""

    sentinel: ClassVar[str] = "tool: error"

    def __init__(self, detail: str | None = None) -> None:
        self.detail = detail
        super().__init__(self.sentinel if not detail else f"{self.sentinel}: {detail}")


class InvalidToolError(_SentinelError):
    """A tool could not be bound: missing, malformed definition, bad schema or validator."""

    sentinel = "tool: invalid tool"


class InvalidInvocationError(_SentinelError):
    """An untrusted request was not admitted by a contract (or an invocation was misused)."""

    sentinel = "tool: invalid invocation"


class InvalidRequestError(_SentinelError):
    """A :class:`~scope_tool.Request` is malformed (for example an empty name)."""

    sentinel = "tool: invalid request"


class InvalidDefinitionError(_SentinelError):
    """A :class:`~scope_tool.Definition` breaks the protocol shape."""

    sentinel = "tool: invalid definition"


class InvalidOutputError(_SentinelError):
    """An :class:`~scope_tool.Output` (or one of its blocks) is malformed."""

    sentinel = "tool: invalid output"


class InvalidResultError(_SentinelError):
    """A :class:`~scope_tool.Result` both completes and requests input, or is malformed."""

    sentinel = "tool: invalid result"


class InvalidInputRequestError(_SentinelError):
    """An :class:`~scope_tool.InputRequest` or an answer to it is malformed."""

    sentinel = "tool: invalid input request"


class InvalidFailureError(_SentinelError):
    """A ``Failure`` could not be constructed (missing cause, unknown kind, bad output)."""

    sentinel = "tool: invalid failure"


class InvalidCallErrorError(_SentinelError):
    """A ``CallError`` could not be constructed (missing cause, bad evidence)."""

    sentinel = "tool: invalid call error"


class InvalidWrappingChainError(_SentinelError):
    """A decorator chain is longer than the protocol's bound (64 unwraps)."""

    sentinel = "tool: invalid wrapping chain"


class DuplicateToolError(_SentinelError):
    """A registry batch names a tool twice, or names one already registered."""

    sentinel = "tool: duplicate tool"


class InvalidRegistryError(_SentinelError):
    """A registry operation was given something that is not a registry batch."""

    sentinel = "tool: invalid registry"


class InvalidPrincipalError(_SentinelError):
    """A :class:`~scope_tool.Principal` (who a call acts for) is malformed."""

    sentinel = "tool: invalid principal"


class InvalidPolicyError(_SentinelError):
    """An :class:`~scope_tool.ApprovalPolicy` (who must answer a question) is malformed."""

    sentinel = "tool: invalid policy"


class InputValidationPanicError(ToolError):
    """A tool's input validator failed with something other than a rejection.

    ``Contract.prepare`` still refuses the invocation with :class:`InvalidInvocationError`;
    this diagnostic distinguishes a validator defect from invalid caller input. ``value``
    keeps what was raised; when it is an exception it is also the ``__cause__``
    (transparent, like Go's ``Unwrap``).
    """

    def __init__(self, value: object) -> None:
        self.value = value
        super().__init__(f"tool: input validation panicked: {value}")
        if isinstance(value, BaseException):
            self.__cause__ = value


class AuthorizationError(ToolError):
    """The policy could not establish a decision; the tool was not executed.

    The cause is sealed: it is available through :attr:`cause` for explicit diagnostics,
    but it is never chained (``__cause__`` stays ``None``) and never printed.
    """

    name: ReadOnly[str] = ReadOnly("The name of the tool whose authorization failed.")
    cause: ReadOnly[BaseException | None] = ReadOnly(
        "The policy diagnostic: inspect it explicitly, it is not part of the chain."
    )

    def __init__(self, name: str, cause: BaseException | None) -> None:
        self._name = name
        self._cause = cause
        text = (
            f"tool: authorization for {_go_quote(name)} failed"
            if name
            else "tool: authorization failed"
        )
        super().__init__(text)
        self.__suppress_context__ = True


def _go_quote(text: str) -> str:
    """Go's ``%q`` for the strings the package quotes (JSON quoting, ASCII-safe)."""
    import json

    return json.dumps(text, ensure_ascii=True)
