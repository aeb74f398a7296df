"""Declarative approval rules: allow, deny or ask, by tool, arguments, principal and roles.

A :class:`Rule` matches a call when every condition it states holds: the tool's name, each
argument comparison (a JSON pointer into the call's arguments, an operator, a JSON value), the
principal's user, and the principal holding every role listed. The first rule of a policy that
matches decides (:func:`evaluate`); none matching means ask a person. Pure and deterministic:
the workflow runs it on the recorded arguments, so a replay reaches the same verdict.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from scope_tool._principal import Principal
from scope_tool.errors import InvalidPolicyError

__all__ = ["Condition", "Rule", "RuleVerdict", "evaluate"]

Effect = Literal["allow", "deny", "ask"]
Operator = Literal["==", "!=", "<", "<=", ">", ">=", "in", "not in"]
_OPERATORS: Final = ("==", "!=", "<", "<=", ">", ">=", "in", "not in")
_EFFECTS: Final = ("allow", "deny", "ask")
_MISSING: Any = object()


def _pointer_tokens(pointer: str) -> tuple[str, ...]:
    if pointer == "":
        return ()
    if not pointer.startswith("/"):
        raise InvalidPolicyError(f"a JSON pointer starts with '/', got {pointer!r}")
    return tuple(token.replace("~1", "/").replace("~0", "~") for token in pointer[1:].split("/"))


def _resolve(document: Any, tokens: tuple[str, ...]) -> Any:
    value = document
    for token in tokens:
        if isinstance(value, dict):
            if token not in value:
                return _MISSING
            value = value[token]
        elif isinstance(value, list) and token.isdigit() and int(token) < len(value):
            value = value[int(token)]
        else:
            return _MISSING
    return value


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _json_equal(left: Any, right: Any) -> bool:
    """JSON equality: numbers by value (1 == 1.0), never a boolean equal to a number."""
    if _number(left) and _number(right):
        return bool(left == right)
    if type(left) is not type(right):
        return False
    if isinstance(left, list):
        return len(left) == len(right) and all(map(_json_equal, left, right))
    if isinstance(left, dict):
        return left.keys() == right.keys() and all(_json_equal(left[k], right[k]) for k in left)
    return bool(left == right)


@dataclass(frozen=True, slots=True)
class Condition:
    """``pointer op value``: e.g. ``Condition("/amount", "<=", 100)``.

    ``value`` is a JSON value; ``<``, ``<=``, ``>`` and ``>=`` compare numbers only (a missing
    or non-number argument does not match), ``in`` and ``not in`` take a list.
    """

    pointer: str
    op: Operator
    value: Any

    def __post_init__(self) -> None:
        if not isinstance(self.pointer, str):
            raise InvalidPolicyError(f"a condition's pointer must be text, got {self.pointer!r}")
        _pointer_tokens(self.pointer)
        if self.op not in _OPERATORS:
            raise InvalidPolicyError(
                f"a condition's op must be one of {', '.join(_OPERATORS)}, got {self.op!r}"
            )
        try:
            json.dumps(self.value, allow_nan=False)
        except (TypeError, ValueError) as error:
            raise InvalidPolicyError(
                f"condition {self.pointer} {self.op}: the value is not JSON ({error})"
            ) from None
        if self.op in ("<", "<=", ">", ">=") and not (
            _number(self.value) and math.isfinite(self.value)
        ):
            raise InvalidPolicyError(
                f"condition {self.pointer} {self.op} compares numbers; got {self.value!r}"
            )
        if self.op in ("in", "not in") and not isinstance(self.value, list):
            raise InvalidPolicyError(
                f"condition {self.pointer} {self.op} takes a list; got {self.value!r}"
            )

    def holds(self, arguments: Any) -> bool:
        """Whether the condition holds of the parsed ``arguments``."""
        found = _resolve(arguments, _pointer_tokens(self.pointer))
        if found is _MISSING:
            return self.op in ("!=", "not in")
        match self.op:
            case "==":
                return _json_equal(found, self.value)
            case "!=":
                return not Condition(self.pointer, "==", self.value).holds(arguments)
            case "in":
                return any(
                    Condition(self.pointer, "==", each).holds(arguments) for each in self.value
                )
            case "not in":
                return not Condition(self.pointer, "in", self.value).holds(arguments)
            case _:
                if not _number(found):
                    return False
                comparisons = {
                    "<": found < self.value,
                    "<=": found <= self.value,
                    ">": found > self.value,
                    ">=": found >= self.value,
                }
                return bool(comparisons[self.op])

    def text(self) -> str:
        """``amount <= 100`` (the pointer without its leading slash)."""
        return f"{self.pointer[1:] or '(arguments)'} {self.op} {json.dumps(self.value)}"

    def to_json_dict(self) -> dict[str, Any]:
        return {"pointer": self.pointer, "op": self.op, "value": self.value}


@dataclass(frozen=True, slots=True, kw_only=True)
class Rule:
    """One named rule: ``effect`` when every stated condition holds.

    Attributes:
        name: shown in the decision's reason ("auto-approved by rule small-refunds: ...").
        effect: ``allow`` (approve without asking), ``deny`` (deny without asking) or ``ask``
            (ask a person, stopping later rules from allowing).
        tool: the tool's name (``None``: any tool).
        where: argument comparisons, all of which must hold.
        user: the principal's user (``None``: anyone, or no principal).
        roles: roles the principal must all hold.
    """

    name: str
    effect: Effect
    tool: str | None = None
    where: tuple[Condition, ...] = ()
    user: str | None = None
    roles: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip() or len(self.name) > 100:
            raise InvalidPolicyError(
                f"a rule's name must be 1 to 100 characters, got {self.name!r}"
            )
        if self.effect not in _EFFECTS:
            raise InvalidPolicyError(
                f"rule {self.name!r}: effect must be allow, deny or ask, got {self.effect!r}"
            )
        where: object = self.where
        if isinstance(where, str | bytes) or not isinstance(where, Sequence):
            raise InvalidPolicyError(f"rule {self.name!r}: where must be a sequence of Condition")
        for each in where:
            if not isinstance(each, Condition):
                raise InvalidPolicyError(
                    f"rule {self.name!r}: each of where must be a Condition, got {each!r}"
                )
        object.__setattr__(self, "where", tuple(where))
        roles: object = self.roles
        if isinstance(roles, str | bytes) or not isinstance(roles, Sequence):
            raise InvalidPolicyError(f"rule {self.name!r}: roles must be a sequence of names")
        object.__setattr__(self, "roles", tuple(roles))

    def matches(self, tool: str, arguments: Any, principal: Principal | None) -> bool:
        """Whether every condition the rule states holds of this call."""
        if self.tool is not None and self.tool != tool:
            return False
        if self.user is not None and (principal is None or principal.user != self.user):
            return False
        if self.roles and (principal is None or not set(self.roles) <= set(principal.roles)):
            return False
        return all(each.holds(arguments) for each in self.where)

    def text(self) -> str:
        """What the rule checks, for a reason: ``amount <= 100`` (or ``tool refund``)."""
        parts = [each.text() for each in self.where]
        if self.user is not None:
            parts.append(f"user {self.user}")
        if self.roles:
            parts.append(f"roles {', '.join(self.roles)}")
        if not parts and self.tool is not None:
            parts.append(f"tool {self.tool}")
        return " and ".join(parts) or "any call"

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "effect": self.effect,
            "tool": self.tool,
            "where": [each.to_json_dict() for each in self.where],
            "user": self.user,
            "roles": list(self.roles),
        }

    @classmethod
    def from_json_dict(cls, value: object) -> Rule:
        """A rule from the shape of :meth:`to_json_dict` (``InvalidPolicyError`` otherwise)."""
        if not isinstance(value, dict) or set(value) - {
            "name",
            "effect",
            "tool",
            "where",
            "user",
            "roles",
        }:
            raise InvalidPolicyError(
                f"a rule is an object with name, effect, tool, where, user and roles; got {value!r}"
            )
        where = value.get("where", [])
        if not isinstance(where, list) or not all(
            isinstance(each, dict) and set(each) == {"pointer", "op", "value"} for each in where
        ):
            raise InvalidPolicyError(
                f"rule {value.get('name')!r}: where is a list of {{pointer, op, value}}"
            )
        return cls(
            name=value.get("name", ""),
            effect=value.get("effect", ""),
            tool=value.get("tool"),
            where=tuple(Condition(each["pointer"], each["op"], each["value"]) for each in where),
            user=value.get("user"),
            roles=tuple(value.get("roles", ())),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class RuleVerdict:
    """What the rules decide of one call: the effect and the rule that decided (``None``: no
    rule matched, so a person is asked)."""

    effect: Effect
    rule: Rule | None = None

    @property
    def reason(self) -> str:
        """``"auto-approved by rule small-refunds: amount <= 100"`` and the like."""
        if self.rule is None:
            return "no rule matched: a person decides"
        verb = {"allow": "auto-approved", "deny": "auto-denied", "ask": "asked"}[self.effect]
        return f"{verb} by rule {self.rule.name}: {self.rule.text()}"


def evaluate(
    rules: Sequence[Rule], tool: str, arguments: bytes | str, principal: Principal | None
) -> RuleVerdict:
    """The first matching rule's verdict (none matching: ``ask``)."""
    try:
        parsed = json.loads(arguments) if arguments else {}
    except ValueError:
        parsed = _MISSING
    for rule in rules:
        if rule.matches(tool, parsed, principal):
            return RuleVerdict(effect=rule.effect, rule=rule)
    return RuleVerdict(effect="ask")
