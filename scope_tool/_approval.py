"""A person approves a call before it runs: :func:`require_approval`.

Wrapping any :class:`~scope_tool.Tool` (a :class:`~scope_tool.Func` included) gives a resumable
tool with the same definition. Round 1 never runs the wrapped tool: it asks a person to approve
the exact admitted arguments, which the prompt shows and the checkpoint state pins. The answer
is one of three shapes, so every front end (CLI, inbox, agent adapters) agrees::

    {"decision": "approve"}
    {"decision": "deny", "reason": "..."}           -> REJECTED Failure, reason model-visible
    {"decision": "edit", "arguments": {...}}        -> only when allow_edit

An edit is admitted through the wrapped tool's own ``Contract.prepare``. Its JSON Schema is also
embedded in the response schema, so the runtime's answer check (which validates every answer
against the committed response schema before accepting it) refuses an edit that breaks the
schema *as an answer*: the call keeps waiting, unchanged. What only the wrapped tool's own input
validator can see (a pydantic validator, say) cannot be checked where answers are checked
today; such an edit is refused in the next round instead, by asking again with the refusal in
the prompt. The wrapped tool runs exactly once after approval; if it asks for input itself, the
gate forwards its questions unchanged and re-enters it with the answers.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from scope_tool._contract import Binding, bind
from scope_tool._definition import Definition
from scope_tool._failure import Failure, FailureKind
from scope_tool._ijson import IJSONError, parse_ijson, raw_object_members
from scope_tool._input_request import InputRequest
from scope_tool._invocation import Invocation
from scope_tool._output import Output
from scope_tool._policy import ApprovalPolicy
from scope_tool._request import Request
from scope_tool._result import Result
from scope_tool._tool import Tool
from scope_tool._wrapper import Wrapper
from scope_tool.errors import (
    InvalidInputRequestError,
    InvalidInvocationError,
    InvalidToolError,
    _go_quote,
)

__all__ = ["APPROVAL_PROMPT_KIND", "ApprovalGate", "require_approval"]

APPROVAL_PROMPT_KIND: Final = "scope_tool.approval"
"""The ``"kind"`` member of every approval prompt, so front ends can recognise the form."""

_STAGE_DECIDE: Final = b'"decide"'
_STAGE_INNER: Final = b'"inner"'
_ARGUMENTS_DEF: Final = "arguments"
# Keywords whose values are data, not subschemas: a "$ref" found inside them is not a reference.
_DATA_KEYWORDS: Final = frozenset({"const", "enum", "default", "examples"})
# Keywords that change how references resolve; a schema using them is not embedded.
_RESOLUTION_KEYWORDS: Final = frozenset({"$id", "$anchor", "$dynamicRef", "$dynamicAnchor"})
# Keywords whose value maps names (data) to subschemas.
_NAMED_SUBSCHEMAS: Final = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)


def require_approval(
    tool: Tool, *, allow_edit: bool = True, policy: ApprovalPolicy | None = None
) -> ApprovalGate:
    """Make ``tool`` ask a person to approve (or deny, or edit) each call before it runs.

    The result has the same name, description and input schema as ``tool``: the model sees no
    difference, and swapping a tool for its gated form is a one-line change.

    Args:
        tool: Any tool; it is bound (its ``definition()`` called once) now.
        allow_edit: Whether the person may answer with new arguments.
        policy: How the gate's questions are decided (a quorum, rules, reminders ...), for
            every call started without a policy of its own: the durable runtime records it
            with each question the gate asks (a call's policy replaces it). ``None``: the
            wrapped tool's own policy, if it carries one, else one answer decides.

    Raises:
        InvalidToolError: ``tool`` is not a valid tool, or ``policy`` is not an
            :class:`~scope_tool.ApprovalPolicy`.
    """
    return ApprovalGate(tool, allow_edit=allow_edit, policy=policy)


class ApprovalGate(Wrapper):
    """The tool :func:`require_approval` returns; see the module docstring for the protocol.

    It wraps ``tool`` transparently (:meth:`unwrap`), so the wrapped tool's input validator is
    also the gate's, and the gate's contract admits exactly what the wrapped tool's does.
    """

    __slots__ = ("_allow_edit", "_inner", "_policy", "_response_schema")

    def __init__(
        self, tool: Tool, *, allow_edit: bool = True, policy: ApprovalPolicy | None = None
    ) -> None:
        if not isinstance(allow_edit, bool):
            raise InvalidToolError(f"allow_edit must be a bool, got {type(allow_edit).__name__}")
        if policy is not None and not isinstance(policy, ApprovalPolicy):
            raise InvalidToolError(
                f"policy must be a scope_tool.ApprovalPolicy, got {type(policy).__name__}"
            )
        if isinstance(tool, ApprovalGate):
            raise InvalidToolError(
                f"tool {_go_quote(tool.definition().name)} already requires approval"
            )
        try:
            inner = bind(tool)
        except InvalidToolError as exc:
            raise InvalidToolError(f"require_approval: {exc}") from exc
        self._tool = tool
        # The canonical schema bind() compiled: the model sees no difference.
        self._definition = inner.contract.definition
        self._inner: Binding = inner
        self._allow_edit = allow_edit
        # The wrapped tool's own policy when the gate has none (resolved by bind, above).
        self._policy = policy if policy is not None else inner.approval_policy
        self._response_schema = _response_schema(inner.contract.definition, allow_edit=allow_edit)

    @property
    def allow_edit(self) -> bool:
        """Whether the person may answer with new arguments."""
        return self._allow_edit

    def approval_policy(self) -> ApprovalPolicy | None:
        """How the gate's questions are decided when a call carries no policy of its own
        (:class:`~scope_tool.PolicyCarryingTool`); ``None``: by one answer."""
        return self._policy

    def response_schema(self) -> bytes:
        """The JSON Schema every approval answer must satisfy (the three decision shapes)."""
        return self._response_schema

    async def call(self, invocation: Invocation) -> Result:
        """Ask (round 1), then act on the decision, then forward the wrapped tool's rounds.

        Raises:
            Failure: ``rejected`` when the person denied the call; its output carries the
                reason. The wrapped tool's own failures pass through unchanged.
            InvalidInvocationError: The continuation does not belong to this gate or pins
                other arguments than this invocation carries (nothing runs).
        """
        if not isinstance(invocation, Invocation):
            raise InvalidInvocationError(
                f"ApprovalGate.call needs an Invocation, got {type(invocation).__qualname__}"
            )
        continuation = invocation.continuation
        if continuation is None:
            return Result(input_request=self._ask(invocation.arguments, refusal=None))
        state = _members(continuation.state, "approval checkpoint state")
        shown = state.get("shown")
        if shown != invocation.arguments:
            raise InvalidInvocationError(
                "approval: the checkpoint pins other arguments than this invocation carries;"
                " an approval applies only to the arguments that were shown"
            )
        stage = state.get("stage")
        if stage == _STAGE_INNER:
            return await self._resume_inner(state, continuation.response)
        if stage != _STAGE_DECIDE:
            raise InvalidInvocationError("approval: the checkpoint state has no known stage")
        return await self._decide(shown, continuation.response)

    async def _decide(self, shown: bytes, response: bytes) -> Result:
        answer = _members(response, "approval answer")
        decision = _string(answer.get("decision"))
        name = self._inner.contract.name
        if decision == "approve":
            return await self._run(shown, shown)
        if decision == "deny":
            reason = _string(answer.get("reason")) or "no reason given"
            text = f"error: the call of tool {_go_quote(name)} was denied by its reviewer: {reason}"
            raise Failure(kind=FailureKind.REJECTED, output=Output.text_output(text))
        if decision == "edit" and self._allow_edit and "arguments" in answer:
            edited = answer["arguments"]
            try:
                self._inner.contract.prepare(Request(name=name, arguments=edited))
            except InvalidInvocationError as exc:
                # The answer passed the schema but not the tool's own validator: nothing ran;
                # ask again, saying why, rather than end the call over a reviewer's typo.
                return Result(input_request=self._ask(shown, refusal=str(exc)))
            return await self._run(shown, edited)
        raise InvalidInvocationError(
            f"approval: {response[:200].decode('utf-8', 'replace')} is not a decision this"
            " gate accepts"
        )

    async def _run(self, shown: bytes, arguments: bytes) -> Result:
        """Run the wrapped tool once, with the approved (or edited) arguments."""
        request = Request(name=self._inner.contract.name, arguments=arguments)
        result = await self._inner.call(self._inner.contract.prepare(request))
        return self._forward(result, shown=shown, arguments=arguments)

    async def _resume_inner(self, state: Mapping[str, bytes], response: bytes) -> Result:
        shown, arguments, asked = state.get("shown"), state.get("arguments"), state.get("inner")
        if shown is None or arguments is None or asked is None:
            raise InvalidInvocationError("approval: the checkpoint state is incomplete")
        try:
            continuation = InputRequest.from_json(asked).continuation(response)
        except InvalidInputRequestError as exc:
            raise InvalidInvocationError(f"approval: the wrapped tool's answer: {exc}") from exc
        request = Request(name=self._inner.contract.name, arguments=arguments)
        result = await self._inner.call(self._inner.contract.prepare(request, continuation))
        return self._forward(result, shown=shown, arguments=arguments)

    def _forward(self, result: Result, *, shown: bytes, arguments: bytes) -> Result:
        """A completed result passes through; a question of the wrapped tool is re-wrapped."""
        asked = result.input_request
        if asked is None:
            return result
        state = b"".join(
            (
                b'{"stage":',
                _STAGE_INNER,
                b',"shown":',
                shown,
                b',"arguments":',
                arguments,
                b',"inner":',
                asked.to_json(),
                b"}",
            )
        )
        return Result(
            input_request=InputRequest(
                prompt=asked.prompt, response_schema=asked.response_schema, state=state
            )
        )

    def _ask(self, arguments: bytes, *, refusal: str | None) -> InputRequest:
        definition = self._inner.contract.definition
        question = f"Approve this call of {definition.name}?"
        answers = "approve, deny (with a reason)" + (
            " or edit (with new arguments)" if self._allow_edit else ""
        )
        head: dict[str, Any] = {
            "kind": APPROVAL_PROMPT_KIND,
            "question": question,
            "tool": definition.name,
            "description": definition.description,
            "answers": answers,
            "allow_edit": self._allow_edit,
        }
        if refusal is not None:
            head["refused_edit"] = refusal
        prefix = json.dumps(head, ensure_ascii=False, separators=(",", ":"))[:-1]
        prompt = b"".join((prefix.encode("utf-8"), b',"arguments":', arguments, b"}"))
        state = b"".join((b'{"stage":', _STAGE_DECIDE, b',"shown":', arguments, b"}"))
        return InputRequest(prompt=prompt, response_schema=self._response_schema, state=state)

    def __repr__(self) -> str:
        policy = f", policy={self._policy!r}" if self._policy is not None else ""
        return f"require_approval({self._tool!r}, allow_edit={self._allow_edit}{policy})"


def _members(raw: bytes, what: str) -> dict[str, bytes]:
    try:
        return raw_object_members(raw)
    except IJSONError as exc:
        raise InvalidInvocationError(f"approval: {what} is not a JSON object: {exc}") from exc


def _string(raw: bytes | None) -> str | None:
    if raw is None:
        return None
    value = parse_ijson(raw)
    return value if isinstance(value, str) else None


def _response_schema(definition: Definition, *, allow_edit: bool) -> bytes:
    """The three decision shapes; an edit's arguments must satisfy the tool's input schema."""
    decisions = ["approve", "deny", "edit"] if allow_edit else ["approve", "deny"]
    properties: dict[str, Any] = {
        "decision": {"enum": decisions},
        "reason": {"type": "string", "minLength": 1, "maxLength": 2000},
    }
    rules: list[dict[str, Any]] = [
        {
            "if": {"properties": {"decision": {"const": "deny"}}},
            "then": {"required": ["reason"]},
        },
        {
            "if": {"properties": {"decision": {"enum": ["approve", "deny"]}}},
            "then": {"not": {"required": ["arguments"]}},
        },
    ]
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "required": ["decision"],
        "additionalProperties": False,
        "allOf": rules,
    }
    if allow_edit:
        input_schema = json.loads(definition.input_schema)
        embedded = _relocated(input_schema, f"#/$defs/{_ARGUMENTS_DEF}")
        if embedded is not None:
            schema["$defs"] = {_ARGUMENTS_DEF: embedded}
            properties["arguments"] = {"$ref": f"#/$defs/{_ARGUMENTS_DEF}"}
        else:
            # References this schema cannot follow once moved: admission happens in round 2.
            properties["arguments"] = {"type": "object"}
        rules.append(
            {
                "if": {"properties": {"decision": {"const": "edit"}}},
                "then": {"required": ["arguments"]},
            }
        )
    return json.dumps(schema, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


class _NotRelocatable(Exception):
    """The schema uses a keyword that would change meaning once moved."""


def _relocated(schema: Any, base: str) -> Any | None:
    """``schema`` with every local ``$ref`` rewritten to resolve from under ``base``.

    None when the schema uses keywords that change resolution (``$id``, anchors, dynamic or
    non-local references): moving it would change what it means.
    """
    try:
        return _move(schema, base)
    except _NotRelocatable:
        return None


def _move(schema: Any, base: str) -> Any:
    if isinstance(schema, list):
        return [_move(item, base) for item in schema]
    if not isinstance(schema, dict):
        return schema
    moved: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "$schema":
            continue  # the response schema's own dialect (2020-12) applies
        if key in _RESOLUTION_KEYWORDS:
            raise _NotRelocatable(key)
        if key in _DATA_KEYWORDS:
            moved[key] = value
        elif key == "$ref":
            if not isinstance(value, str) or not value.startswith("#"):
                raise _NotRelocatable(key)
            moved[key] = base + value[1:]
        elif key in _NAMED_SUBSCHEMAS and isinstance(value, dict):
            # The names are data (a property may be called "$ref"); only the values are schemas.
            moved[key] = {name: _move(subschema, base) for name, subschema in value.items()}
        else:
            moved[key] = _move(value, base)
    return moved
