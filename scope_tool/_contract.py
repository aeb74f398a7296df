"""The trust boundary: :func:`bind`, :class:`Binding` and :class:`Contract`.

``bind`` freezes everything a tool promises (its definition, compiled input schema and input
validator) into an immutable :class:`Contract`, once. ``Contract.prepare`` then turns an
untrusted :class:`~scope_tool.Request` into an :class:`~scope_tool.Invocation` without ever
touching the executable tool, and ``Binding.call`` runs only invocations its own contract
admitted.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any, NoReturn

from scope_tool._definition import Definition
from scope_tool._func import _StrictDecoder
from scope_tool._ijson import MAX_INPUT_BYTES, is_blank, small_object
from scope_tool._input_request import Continuation
from scope_tool._invocation import (
    Invocation,
    _set_arguments,
    _set_continuation,
    _set_owner,
    admit_invocation,
)
from scope_tool._invocation import _new_object as _new_invocation
from scope_tool._policy import ApprovalPolicy
from scope_tool._request import Request
from scope_tool._result import Result
from scope_tool._schema import CompiledSchema, SchemaError, SchemaValidationError
from scope_tool._sealed import Sealed, mint_sealed
from scope_tool._tool import InputValidatingTool, PolicyCarryingTool, Tool, capability
from scope_tool.errors import (
    InputValidationPanicError,
    InvalidDefinitionError,
    InvalidInvocationError,
    InvalidRequestError,
    InvalidToolError,
    InvalidWrappingChainError,
    _go_quote,
)

__all__ = ["Binding", "Contract", "bind"]

InputValidator = Callable[[bytes], None]


def _no_validator(_arguments: bytes, **_options: object) -> None:
    """The hot path's decode step for a contract with no input validator."""


class Contract(Sealed):
    """The immutable trust boundary from an untrusted request to an invocation.

    It keeps the frozen definition, the compiled input schema and the input validator, and no
    reference to the executable tool, so it is safe to share and to use from many threads and
    tasks at once. Only :func:`bind` creates contracts.
    """

    __slots__ = (
        "_decode_small",
        "_definition",
        "_digest",
        "_name",
        "_schema",
        "_small_verdict",
        "_validator",
    )

    _name: str
    _definition: Definition
    _digest: str
    _schema: CompiledSchema
    _validator: InputValidator | None
    # The hot path (see prepare): the schema's verdict on a small_object, and the validator
    # as one C call when it is a Func's strict decoder (None when there is no validator).
    _small_verdict: Callable[[dict[str, Any]], bool] | None
    _decode_small: Callable[..., object] | None

    _made_by = "bind(tool).contract"

    @classmethod
    def _freeze(
        cls, *, definition: Definition, schema: CompiledSchema, validator: InputValidator | None
    ) -> Contract:
        decode_small: Callable[..., object] | None = _no_validator
        if isinstance(validator, _StrictDecoder):
            decode_small = validator.raw_check()
            # The schema step has already proved the text is I-JSON; don't parse it twice.
            validator = validator.validate_checked_ijson
        elif validator is not None:
            decode_small = None
        return mint_sealed(
            cls,
            _name=definition.name,
            _definition=definition,
            _digest=hashlib.sha256(definition.to_json()).hexdigest(),
            _schema=schema,
            _validator=validator,
            _small_verdict=schema.small_object_verdict,
            _decode_small=decode_small,
        )

    @property
    def name(self) -> str:
        """The frozen name a request must carry to be admitted."""
        return self._name

    @property
    def definition(self) -> Definition:
        """The model-visible definition, with the compiled schema's canonical bytes.

        The exposed schema is the one enforced, byte for byte, so what the model sees and what
        :meth:`prepare` checks can never disagree.
        """
        return self._definition

    @property
    def digest(self) -> str:
        """The sha256 (hex) of the canonical definition JSON: what the model was shown.

        The durable runtime records it with a call's first question and refuses to resume the
        call under a tool whose definition changed since.
        """
        return self._digest

    def prepare(self, request: Request, continuation: Continuation | None = None) -> Invocation:
        """Admit an untrusted request as an invocation of this contract, or refuse it.

        Checks, in order: the request's own validity, the name (exact match), blank arguments
        (Go's Unicode white space) normalised to ``{}``, the size limit
        (:data:`~scope_tool.MAX_INPUT_BYTES`, after normalisation), one I-JSON document
        satisfying the input schema, then the tool's own input validator. Never calls the tool.

        Args:
            request: The untrusted proposal, typically from a model.
            continuation: The validated answer to this call's committed input request, or
                ``None`` to start a new call.

        Returns:
            The admitted invocation, tied to this contract.

        Raises:
            InvalidInvocationError: The request is not admitted; the message says why. A
                validator rejection or defect is chained as ``__cause__``.
        """
        if type(request) is not Request or request.name != self._name:
            # A request whose name matches is valid (a bound name is never empty), so only
            # here can the request's own checks fail; they come first, in Go's order.
            self._refuse_request(request, continuation)
        if continuation is not None and not isinstance(continuation, Continuation):
            raise InvalidInvocationError(
                f"continuation must be a Continuation or None, got {type(continuation).__qualname__}"
            )
        text = request.arguments
        if type(text) is str and text[:1] == "{":
            arguments = text.encode("utf-8", "surrogatepass")  # the common case, never blank
        else:
            arguments = _argument_bytes(text)
        # The hot path: a small flat object proved I-JSON by one C parse, the schema's exact
        # verdict on it, and a Func's strict decode as one C call. Any doubt, refusal or
        # error takes the full road below, which decides (and explains) from scratch.
        verdict = self._small_verdict
        decode = self._decode_small
        if verdict is not None and decode is not None:
            small = small_object(arguments)
            if small is not None and verdict(small):
                try:
                    decode(arguments, strict=True, extra="forbid")
                except Exception:
                    pass  # the full road below decides again and explains the refusal
                else:
                    # admit_invocation, inlined: the hot path mints without a call frame.
                    invocation: Invocation = _new_invocation(Invocation)
                    _set_owner(invocation, self)
                    _set_arguments(invocation, arguments)
                    _set_continuation(invocation, continuation)
                    return invocation
        return self._prepare_checked(arguments, continuation)

    def _prepare_checked(self, arguments: bytes, continuation: Continuation | None) -> Invocation:
        """Prepare's full road: size, I-JSON and schema, then the input validator."""
        if len(arguments) > MAX_INPUT_BYTES:
            raise InvalidInvocationError(
                f"arguments: {len(arguments)} bytes exceed the limit of "
                f"{MAX_INPUT_BYTES} bytes (MAX_INPUT_BYTES)"
            )
        try:
            self._schema.validate(arguments)
        except SchemaValidationError as exc:
            raise InvalidInvocationError(f"arguments: {exc}") from exc
        validator = self._validator
        if validator is not None:
            try:
                validator(arguments)
            except ValueError as exc:
                raise InvalidInvocationError(f"arguments: {exc}") from exc
            except Exception as exc:
                panic = InputValidationPanicError(exc)
                raise InvalidInvocationError(f"arguments: {panic}") from panic
        return admit_invocation(self, arguments, continuation)

    def _refuse_request(self, request: object, continuation: object) -> None:
        """Raise for a request that is not a :class:`Request`, is invalid or names another
        tool (a bad continuation is reported before the request's own checks, as always);
        return for a valid request (of a subclass) that names this contract's tool."""
        if not isinstance(request, Request):
            raise InvalidInvocationError(
                f"request must be a Request, got {type(request).__qualname__}"
            )
        if continuation is not None and not isinstance(continuation, Continuation):
            raise InvalidInvocationError(
                f"continuation must be a Continuation or None, got {type(continuation).__qualname__}"
            )
        try:
            request.validate()
        except InvalidRequestError as exc:
            raise InvalidInvocationError(str(exc)) from exc
        if request.name != self._name:
            raise InvalidInvocationError(
                f"call name {_go_quote(request.name)} does not match bound tool "
                f"{_go_quote(self._name)}"
            )

    def __reduce__(self) -> NoReturn:
        raise TypeError("Contract cannot be copied or pickled; bind the tool again")

    def __repr__(self) -> str:
        return f"Contract(name={self._name!r})"


class Binding(Sealed):
    """One immutable :class:`Contract` together with the tool that executes it.

    Calls may run concurrently when the tool supports it. Only :func:`bind` creates bindings.
    """

    __slots__ = ("_contract", "_policy", "_tool")

    _contract: Contract
    _policy: ApprovalPolicy | None
    _tool: Tool

    _made_by = "bind(tool)"

    @property
    def contract(self) -> Contract:
        """The frozen contract every invocation passed to :meth:`call` must come from."""
        return self._contract

    @property
    def approval_policy(self) -> ApprovalPolicy | None:
        """The policy the tool carries for its questions (:class:`~scope_tool.PolicyCarryingTool`,
        resolved once by :func:`bind`); ``None``: none."""
        return self._policy

    async def call(self, invocation: Invocation) -> Result:
        """Execute an invocation this binding's contract prepared.

        The tool's result and exceptions pass through verbatim: no re-validation, no wrapping,
        no cancellation check of its own (the tool owns that).

        Raises:
            InvalidInvocationError: ``invocation does not belong to binding``: it was prepared
                by another contract (even one bound from an identical tool) or is not an
                :class:`~scope_tool.Invocation`.
        """
        if not isinstance(invocation, Invocation) or invocation._owner is not self._contract:
            raise InvalidInvocationError("invocation does not belong to binding")
        return await self._tool.call(invocation)

    def __reduce__(self) -> NoReturn:
        raise TypeError("Binding cannot be copied or pickled; bind the tool again")

    def __repr__(self) -> str:
        return f"Binding(contract={self._contract!r}, tool={self._tool!r})"


def bind(tool: Tool) -> Binding:
    """Freeze a tool's contract and pair it with the tool.

    In order: ``tool.definition()`` is called exactly once and validated, its input schema is
    compiled (JSON Schema 2020-12, ``format`` asserted, no remote ``$ref``), and the input
    validator capability is resolved once through the wrapping chain. Exceptions raised by
    ``definition()`` itself propagate unchanged.

    Raises:
        InvalidToolError: ``tool: invalid tool: <what was wrong>``; the original error is the
            ``__cause__``.
    """
    if tool is None:
        raise InvalidToolError("tool is None")
    if not isinstance(tool, Tool):
        raise InvalidToolError(
            f"{type(tool).__qualname__} does not implement Tool "
            "(it needs definition() and async call(invocation))"
        )
    definition = tool.definition()
    if not isinstance(definition, Definition):
        raise InvalidToolError(
            f"definition: definition() returned {type(definition).__qualname__}, not a Definition"
        )
    try:
        definition.validate()
    except InvalidDefinitionError as exc:
        raise InvalidToolError(f"definition: {exc}") from exc
    try:
        schema = CompiledSchema.parse(definition.input_schema)
    except SchemaError as exc:
        raise InvalidToolError(f"input schema: {exc}") from exc
    validator = _declare_input_validator(tool)
    policy = _declare_policy(tool)
    frozen = Definition(
        name=definition.name, description=definition.description, input_schema=schema.canonical
    )
    contract = Contract._freeze(definition=frozen, schema=schema, validator=validator)
    return mint_sealed(Binding, _contract=contract, _policy=policy, _tool=tool)


def _declare_policy(tool: Tool) -> ApprovalPolicy | None:
    """Resolve the tool's approval policy once; a defect here makes the tool unbindable."""
    try:
        carrying = capability(tool, PolicyCarryingTool)  # type: ignore[type-abstract]
        policy = None if carrying is None else carrying.approval_policy()
    except InvalidWrappingChainError as exc:
        raise InvalidToolError(f"approval policy: {exc}") from exc
    if policy is not None and not isinstance(policy, ApprovalPolicy):
        raise InvalidToolError(
            f"approval policy: approval_policy() returned {type(policy).__qualname__}, not an"
            " ApprovalPolicy"
        )
    return policy


def _declare_input_validator(tool: Tool) -> InputValidator | None:
    """Resolve the input validator once; a defect here makes the tool unbindable."""
    try:
        validating = capability(tool, InputValidatingTool)  # type: ignore[type-abstract]
        validator = None if validating is None else validating.input_validator()
    except InvalidWrappingChainError as exc:
        raise InvalidToolError(f"input validation: {exc}") from exc
    except Exception as exc:
        panic = InputValidationPanicError(exc)
        raise InvalidToolError(
            f"input validation: input validation declaration: {panic}"
        ) from panic
    if validator is not None and not callable(validator):
        raise InvalidToolError(
            f"input validation: input_validator() returned {type(validator).__qualname__}, "
            "not a callable"
        )
    return validator


def _argument_bytes(arguments: str | bytes) -> bytes:
    """Encode the arguments byte-exact; blank (Go's Unicode white space) becomes ``{}``."""
    if is_blank(arguments):
        return b"{}"
    if isinstance(arguments, bytes):
        return arguments
    # A lone surrogate cannot be UTF-8; keep it so the I-JSON check reports the document.
    return arguments.encode("utf-8", "surrogatepass")
