"""The verdict of a bounded schema check: accepted, refused, or over its work budget."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = ["CheckOutcome", "SchemaCheck"]


class CheckOutcome(StrEnum):
    """How a bounded check ended. ``OVER_BUDGET`` says nothing about the value: the check
    stopped before deciding, and must be finished elsewhere (outside workflow code)."""

    ACCEPTED = "accepted"
    REFUSED = "refused"
    OVER_BUDGET = "over_budget"


@dataclass(frozen=True, slots=True, kw_only=True)
class SchemaCheck:
    """The result of ``CompiledSchema.check``.

    Attributes:
        outcome: accepted, refused or over budget.
        detail: for a refusal, the text ``validate`` would raise
            (``jsonschema: validate value: <pointer>: <reason>`` or the invalid-JSON text);
            for over budget, which budget ran out; empty when accepted.
        steps: keyword applications spent (the unit of ``max_steps``); the same value and
            schema always spend the same steps, so a verdict replays identically.
        path: for a refusal of a parsed value, the JSON pointer of the offending value
            ("" for the root); None otherwise (accepted, over budget, not I-JSON).
        violation: for such a refusal, the validator's message alone (``detail`` without
            its prefix and pointer); None otherwise.
    """

    outcome: CheckOutcome
    detail: str = ""
    steps: int = 0
    path: str | None = None
    violation: str | None = None

    @property
    def accepted(self) -> bool:
        return self.outcome is CheckOutcome.ACCEPTED
