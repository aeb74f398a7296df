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
    """

    outcome: CheckOutcome
    detail: str = ""
    steps: int = 0

    @property
    def accepted(self) -> bool:
        return self.outcome is CheckOutcome.ACCEPTED
