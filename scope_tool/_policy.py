"""Approval policies: who must answer a question before it is decided (:class:`ApprovalPolicy`).

A policy is one immutable value a call carries (``ToolCalls.start(..., policy=...)``). The
workflow records it in its input, so a replay decides exactly as the first run did, and every
surface (status, the inbox, the CLI, history) shows it. It imports no Temporal: the tally here is
the one pure function the workflow and the history reader both run.

A quorum policy asks for ``quorum`` distinct voters (by verified identity when the call requires
one, by ``answered_by`` otherwise), optionally drawn from named groups ("one of finance and one
of security"). How an answer votes depends on its shape:

* an approval answer (``{"decision": "approve" | "deny" | "edit", ...}``, the shape of
  :func:`~scope_tool.require_approval`): approvals count toward the quorum; a deny ends the vote
  denied unless ``deny_ends`` is off (then it ends denied only once the quorum can no longer be
  reached by the named voters who have not voted); an edit restarts the vote on the new
  arguments, the editor counting as their first approver;
* any other answer: the answers with the same JSON text count together, and the first text
  the quorum agrees on is the answer.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Final, Literal, cast

from scope_tool._ijson import check_ijson
from scope_tool._principal import Principal
from scope_tool._rules import Rule, RuleVerdict, evaluate
from scope_tool.errors import InvalidPolicyError

__all__ = [
    "MAX_POLICY_NAMES",
    "ApprovalPolicy",
    "Tally",
    "VoterGroup",
    "vote_kind",
]

MAX_POLICY_NAMES: Final = 256
"""Most voter and group names one policy may list (a policy travels in every call's input)."""
_MAX_NAME: Final = 256

_MAX_REMINDERS: Final = 20
_JSON_MEMBERS: Final = (
    "quorum",
    "voters",
    "groups",
    "deny_ends",
    "rules",
    "shadow",
    "expiry_answer",
    "reminders",
    "escalate_to",
    "escalation_timeout",
    "escalation_replaces",
    "max_extension",
)

VoteKind = Literal["approve", "deny", "edit", "answer"]


def vote_kind(response: bytes) -> VoteKind:
    """How an answer votes: an approval answer's ``decision``, else ``"answer"`` (its text)."""
    try:
        value = json.loads(response)
    except ValueError:
        return "answer"
    if isinstance(value, dict):
        decision = value.get("decision")
        if decision == "approve" or decision == "deny" or decision == "edit":
            return cast(VoteKind, decision)
    return "answer"


def _name(value: object, what: str) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > _MAX_NAME:
        raise InvalidPolicyError(
            f"{what} must be a non-empty name of at most {_MAX_NAME} characters, got {value!r}"
        )
    if any(ord(char) < 32 or ord(char) == 127 for char in value):
        raise InvalidPolicyError(f"{what} must not contain control characters, got {value!r}")
    return value


def _seconds(value: object, what: str) -> float:
    if isinstance(value, timedelta):
        value = value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 10**9:
        raise InvalidPolicyError(f"{what} must be a positive number of seconds, got {value!r}")
    return float(value)


def _names(values: object, what: str) -> tuple[str, ...]:
    if isinstance(values, str | bytes) or not isinstance(values, Sequence):
        raise InvalidPolicyError(f"{what} must be a sequence of names, got {values!r}")
    names = tuple(_name(each, f"each of {what}") for each in values)
    repeated = sorted({each for each in names if names.count(each) > 1})
    if repeated:
        raise InvalidPolicyError(f"{what} names {', '.join(repeated)} more than once")
    return names


@dataclass(frozen=True, slots=True)
class VoterGroup:
    """A named group of voters of which at least ``at_least`` must approve."""

    name: str
    members: tuple[str, ...]
    at_least: int = 1

    def __post_init__(self) -> None:
        _name(self.name, "a group's name")
        members = _names(self.members, f"the members of group {self.name!r}")
        object.__setattr__(self, "members", members)
        if not members:
            raise InvalidPolicyError(f"group {self.name!r} has no members")
        if (
            isinstance(self.at_least, bool)
            or not isinstance(self.at_least, int)
            or not 1 <= self.at_least <= len(members)
        ):
            raise InvalidPolicyError(
                f"group {self.name!r}: at_least must be a whole number from 1 to its"
                f" {len(members)} members, got {self.at_least!r}"
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalPolicy:
    """How a call's questions are decided: by one answer (the default) or by a quorum.

    Attributes:
        quorum: how many distinct voters must agree (1: the first accepted answer decides).
        voters: who may vote (besides the members of ``groups``); empty with no groups: anyone
            the call's ``allowed_answerers`` admits.
        groups: named groups, each needing ``at_least`` of its members among the approvers.
        deny_ends: a deny by any voter ends the vote denied (off: a deny is one vote against,
            and the vote ends denied only when the quorum can no longer be reached).
        rules: allow / deny / ask rules (:class:`~scope_tool.Rule`), evaluated when an approval
            question is asked: the first that matches decides; an ``allow`` or ``deny`` answers
            the question at once, with the rule as the reason. None matching: a person decides.
        shadow: evaluate the rules but never act on them: their verdict is recorded beside the
            person's answer, to see a rule's effect before turning it on.
        expiry_answer: what a question takes when its answer deadline passes, as JSON text (a
            safe default, e.g. ``'{"decision": "deny", "reason": "no answer in time"}'``);
            ``None``: the call ends EXPIRED. It must satisfy the question's schema when the
            deadline comes, else the call ends EXPIRED saying so.
        reminders: offsets before the answer deadline, in seconds (a ``timedelta`` is taken),
            at each of which the waiting question is sent again once (webhook ``reminder``,
            the call's channels); each must be shorter than the call's ``answer_timeout``.
        escalate_to: who may answer once the deadline passes unanswered: the question is sent
            to them, and a new deadline ``escalation_timeout`` starts (empty: no escalation).
        escalation_timeout: the escalated question's deadline, in seconds (a ``timedelta`` is
            taken); required with ``escalate_to``. When it passes, the call expires as usual.
        escalation_replaces: after escalation only ``escalate_to`` may answer (off: the first
            answerers may still answer too).
        max_extension: how much, in seconds in all, people allowed to answer may extend a
            question's deadline (``ToolCallHandle.extend``); ``None``: no extension.

    Raises:
        InvalidPolicyError: a field is malformed, or the quorum cannot be met by the voters
            named (nothing was started).
    """

    quorum: int = 1
    voters: tuple[str, ...] = ()
    groups: tuple[VoterGroup, ...] = ()
    deny_ends: bool = True
    rules: tuple[Rule, ...] = ()
    shadow: bool = False
    expiry_answer: str | None = None
    reminders: tuple[float, ...] = ()
    escalate_to: tuple[str, ...] = ()
    escalation_timeout: float | None = None
    escalation_replaces: bool = False
    max_extension: float | None = None

    def __post_init__(self) -> None:
        self._check_deadlines()
        if isinstance(self.quorum, bool) or not isinstance(self.quorum, int) or self.quorum < 1:
            raise InvalidPolicyError(
                f"quorum must be a whole number of at least 1, got {self.quorum!r}"
            )
        object.__setattr__(self, "voters", _names(self.voters, "voters"))
        groups: object = self.groups
        if isinstance(groups, str | bytes) or not isinstance(groups, Sequence):
            raise InvalidPolicyError(f"groups must be a sequence of VoterGroup, got {groups!r}")
        groups = tuple(groups)
        for group in groups:
            if not isinstance(group, VoterGroup):
                raise InvalidPolicyError(f"each of groups must be a VoterGroup, got {group!r}")
        _names([group.name for group in groups], "the group names")
        object.__setattr__(self, "groups", groups)
        if not isinstance(self.deny_ends, bool):
            raise InvalidPolicyError(f"deny_ends must be a bool, got {self.deny_ends!r}")
        rules: object = self.rules
        if isinstance(rules, str | bytes) or not isinstance(rules, Sequence):
            raise InvalidPolicyError(f"rules must be a sequence of Rule, got {rules!r}")
        for rule in rules:
            if not isinstance(rule, Rule):
                raise InvalidPolicyError(f"each of rules must be a Rule, got {rule!r}")
        object.__setattr__(self, "rules", tuple(rules))
        _names([rule.name for rule in self.rules], "the rule names")
        if not isinstance(self.shadow, bool):
            raise InvalidPolicyError(f"shadow must be a bool, got {self.shadow!r}")
        if self.expiry_answer is not None:
            if not isinstance(self.expiry_answer, str):
                raise InvalidPolicyError(
                    f"expiry_answer must be JSON text, got {self.expiry_answer!r:.80}"
                )
            try:
                check_ijson(self.expiry_answer.encode("utf-8"))
            except ValueError as error:
                raise InvalidPolicyError(
                    f"expiry_answer is not one JSON document: {error}"
                ) from None
        eligible = self.eligible
        if len(eligible) > MAX_POLICY_NAMES:
            raise InvalidPolicyError(
                f"a policy names at most {MAX_POLICY_NAMES} voters, got {len(eligible)}"
            )
        if eligible and self.quorum > len(eligible):
            raise InvalidPolicyError(
                f"quorum {self.quorum} cannot be met: only {len(eligible)} voters are named"
                f" ({', '.join(eligible)})"
            )
        needed = sum(group.at_least for group in groups)
        if needed > self.quorum:
            raise InvalidPolicyError(
                f"the groups need {needed} approvers in all, more than the quorum of"
                f" {self.quorum}: raise the quorum to at least {needed}"
            )

    def _check_deadlines(self) -> None:
        reminders: object = self.reminders
        if isinstance(reminders, str | bytes) or not isinstance(reminders, Sequence):
            raise InvalidPolicyError(f"reminders must be a sequence of offsets, got {reminders!r}")
        offsets = tuple(_seconds(each, "each of reminders") for each in reminders)
        if len(set(offsets)) != len(offsets):
            raise InvalidPolicyError(f"reminders names an offset more than once: {offsets!r}")
        if len(offsets) > _MAX_REMINDERS:
            raise InvalidPolicyError(
                f"a policy has at most {_MAX_REMINDERS} reminders, got {len(offsets)}"
            )
        # Earliest first: the largest offset before the deadline comes first.
        object.__setattr__(self, "reminders", tuple(sorted(offsets, reverse=True)))
        object.__setattr__(self, "escalate_to", _names(self.escalate_to, "escalate_to"))
        if self.escalation_timeout is not None:
            object.__setattr__(
                self,
                "escalation_timeout",
                _seconds(self.escalation_timeout, "escalation_timeout"),
            )
        if self.escalate_to and self.escalation_timeout is None:
            raise InvalidPolicyError("escalate_to needs an escalation_timeout (the new deadline)")
        if self.escalation_timeout is not None and not self.escalate_to:
            raise InvalidPolicyError("escalation_timeout needs escalate_to (who is asked then)")
        if self.max_extension is not None:
            object.__setattr__(self, "max_extension", _seconds(self.max_extension, "max_extension"))
        if not isinstance(self.escalation_replaces, bool):
            raise InvalidPolicyError(
                f"escalation_replaces must be a bool, got {self.escalation_replaces!r}"
            )
        if self.escalate_to and (self.quorum > 1 or self.groups or self.voters):
            raise InvalidPolicyError(
                "escalate_to cannot be combined with a quorum or named voters: an escalated"
                " question is decided by one answer of the escalated group"
            )

    def check_deadline(self, answer_timeout: timedelta | None) -> None:
        """Refuse reminders or escalation a call's answer deadline cannot carry.

        Raises:
            InvalidPolicyError: reminders or escalation without an ``answer_timeout``, or a
                reminder not shorter than it.
        """
        if not self.has_deadline_steps:
            return
        if answer_timeout is None:
            raise InvalidPolicyError(
                "reminders, escalate_to and max_extension need the call's answer_timeout (the"
                " deadline they count from)"
            )
        limit = answer_timeout.total_seconds()
        late = [each for each in self.reminders if each >= limit]
        if late:
            raise InvalidPolicyError(
                f"reminders must fall before the deadline: offset(s) {late!r} seconds are not"
                f" shorter than the answer_timeout of {limit!r} seconds"
            )

    @property
    def has_deadline_steps(self) -> bool:
        """Whether a waiting question has reminders, escalation or extensions (its own timers)."""
        return bool(self.reminders or self.escalate_to or self.max_extension)

    @property
    def eligible(self) -> tuple[str, ...]:
        """Everyone the policy names (voters, then group members, each once); empty: anyone."""
        seen = dict.fromkeys(self.voters)
        for group in self.groups:
            seen.update(dict.fromkeys(group.members))
        return tuple(seen)

    @property
    def is_quorum(self) -> bool:
        """Whether a question needs more than the first accepted answer."""
        return self.quorum > 1 or bool(self.groups)

    def to_json_dict(self) -> dict[str, Any]:
        """``{quorum, voters, groups: [{name, members, at_least}], deny_ends}``."""
        return {
            "quorum": self.quorum,
            "voters": list(self.voters),
            "groups": [
                {"name": each.name, "members": list(each.members), "at_least": each.at_least}
                for each in self.groups
            ],
            "deny_ends": self.deny_ends,
            "rules": [rule.to_json_dict() for rule in self.rules],
            "shadow": self.shadow,
            "expiry_answer": self.expiry_answer,
            "reminders": list(self.reminders),
            "escalate_to": list(self.escalate_to),
            "escalation_timeout": self.escalation_timeout,
            "escalation_replaces": self.escalation_replaces,
            "max_extension": self.max_extension,
        }

    @classmethod
    def from_json_dict(cls, value: object) -> ApprovalPolicy:
        """The policy a JSON object describes (the shape of :meth:`to_json_dict`).

        Raises:
            InvalidPolicyError: not that shape; the message names what is wrong.
        """
        if not isinstance(value, dict):
            raise InvalidPolicyError(f"a policy must be a JSON object, got {value!r}")
        unknown = sorted(set(value) - set(_JSON_MEMBERS))
        if unknown:
            raise InvalidPolicyError(
                f"unknown policy member(s) {', '.join(unknown)}; a policy has"
                f" {', '.join(_JSON_MEMBERS[:-1])} and {_JSON_MEMBERS[-1]}"
            )
        reminders = value.get("reminders", [])
        if not isinstance(reminders, list):
            raise InvalidPolicyError(f"reminders must be a list of seconds, got {reminders!r}")
        escalate_to = value.get("escalate_to", [])
        if not isinstance(escalate_to, list):
            raise InvalidPolicyError(f"escalate_to must be a list of names, got {escalate_to!r}")
        rules = value.get("rules", [])
        if not isinstance(rules, list):
            raise InvalidPolicyError(f"rules must be a list, got {rules!r}")
        groups = value.get("groups", [])
        if not isinstance(groups, list):
            raise InvalidPolicyError(f"groups must be a list, got {groups!r}")
        built = []
        for group in groups:
            if not isinstance(group, dict) or set(group) - {"name", "members", "at_least"}:
                raise InvalidPolicyError(
                    f"each group must be an object with name, members and at_least, got {group!r}"
                )
            built.append(
                VoterGroup(
                    group.get("name", ""),
                    group.get("members", ()),
                    group.get("at_least", 1),
                )
            )
        return cls(
            quorum=value.get("quorum", 1),
            voters=value.get("voters", ()),
            groups=tuple(built),
            deny_ends=value.get("deny_ends", True),
            rules=tuple(Rule.from_json_dict(each) for each in rules),
            shadow=value.get("shadow", False),
            expiry_answer=value.get("expiry_answer"),
            reminders=tuple(reminders),
            escalate_to=tuple(escalate_to),
            escalation_timeout=value.get("escalation_timeout"),
            escalation_replaces=value.get("escalation_replaces", False),
            max_extension=value.get("max_extension"),
        )

    def evaluate(
        self, tool: str, arguments: bytes | str, principal: Principal | None
    ) -> RuleVerdict | None:
        """The rules' verdict on a call (``None``: the policy has no rules)."""
        if not self.rules:
            return None
        return evaluate(self.rules, tool, arguments, principal)

    def tally(self, votes: Sequence[tuple[str, bytes]]) -> Tally:
        """The state of a vote: ``votes`` are ``(voter, answer text)`` in the order taken, each
        voter once, since the last edit (an edit is the first vote of its ballot)."""
        approvals: list[int] = []
        denials: list[int] = []
        by_text: dict[bytes, list[int]] = {}
        for index, (_, response) in enumerate(votes):
            kind = vote_kind(response)
            if kind in ("approve", "edit"):
                approvals.append(index)
            elif kind == "deny":
                denials.append(index)
                if self.deny_ends:
                    return self._tally(votes, approvals, decided=index, denied=True)
            else:
                by_text.setdefault(response, []).append(index)
        if self._met([votes[i][0] for i in approvals]):
            # The answer the tool gets: the ballot's edit (the arguments approved), else the
            # approval that completed the quorum.
            edits = [i for i in approvals if vote_kind(votes[i][1]) == "edit"]
            return self._tally(votes, approvals, decided=edits[0] if edits else approvals[-1])
        for indexes in by_text.values():
            if self._met([votes[i][0] for i in indexes]):
                return self._tally(votes, indexes, decided=indexes[-1])
        eligible = self.eligible
        if denials and eligible:
            voted = {voter for voter, _ in votes}
            reachable = len(approvals) + sum(1 for each in eligible if each not in voted)
            if reachable < self.quorum:
                return self._tally(votes, approvals, decided=denials[0], denied=True)
        best = max([approvals, *by_text.values()], key=len)
        return self._tally(votes, best)

    def _met(self, voters: Sequence[str]) -> bool:
        if len(set(voters)) < self.quorum:
            return False
        return all(
            sum(1 for each in group.members if each in voters) >= group.at_least
            for group in self.groups
        )

    def _tally(
        self,
        votes: Sequence[tuple[str, bytes]],
        agreeing: Sequence[int],
        *,
        decided: int | None = None,
        denied: bool = False,
    ) -> Tally:
        voted = tuple(voter for voter, _ in votes)
        agreed = tuple(votes[i][0] for i in agreeing)
        return Tally(
            quorum=self.quorum,
            eligible=len(self.eligible),
            agreed=agreed,
            waiting_for=tuple(each for each in self.eligible if each not in voted),
            decided=decided,
            denied=denied,
            groups_short=tuple(
                group.name
                for group in self.groups
                if sum(1 for each in group.members if each in agreed) < group.at_least
            ),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Tally:
    """Where a vote stands.

    Attributes:
        quorum: the votes needed.
        eligible: how many voters the policy names (0: anyone may vote).
        agreed: the voters of the leading choice (the approvers, for an approval), in order.
        waiting_for: named voters who have not voted.
        decided: the index of the vote whose answer decides, once decided.
        denied: the vote ended denied.
        groups_short: groups still short of their ``at_least``.
    """

    quorum: int
    eligible: int
    agreed: tuple[str, ...]
    waiting_for: tuple[str, ...]
    decided: int | None = None
    denied: bool = False
    groups_short: tuple[str, ...] = ()

    def text(self) -> str:
        """One line: ``"2 of 3: alice, bob; waiting for one of: carol, dave"``."""
        of = f" of {self.quorum}"
        who = f": {', '.join(self.agreed)}" if self.agreed else ""
        head = f"{len(self.agreed)}{of}{who}"
        if self.denied:
            return f"{head}; denied"
        if self.decided is not None:
            return f"{head}; decided"
        missing = self.quorum - len(self.agreed)
        parts = [head]
        if self.groups_short:
            parts.append(f"needs a voter of: {', '.join(self.groups_short)}")
        if self.waiting_for:
            count = "one" if missing <= 1 else str(missing)
            parts.append(f"waiting for {count} of: {', '.join(self.waiting_for)}")
        elif missing > 0:
            parts.append(f"waiting for {missing} more")
        return "; ".join(parts)
