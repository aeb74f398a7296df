"""The one error hierarchy of ``scope_tool_agents``::

    AgentsError(Exception)
    ├── StrictModeError   (ValueError)  a definition cannot be sent with OpenAI's strict mode
    └── TurnError         (ValueError)  a model turn's tool calls are malformed (nothing started)

Errors the durable runtime raises (``workflows.ToolCallsError`` and its subclasses) pass through
unchanged: an adapter renders, it does not re-decide.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scope_tool_agents._formats import StrictProblem

__all__ = ["AgentsError", "StrictModeError", "TurnError"]


class AgentsError(Exception):
    """Base of every exception ``scope_tool_agents`` raises for its own reasons."""


class StrictModeError(AgentsError, ValueError):
    """Some definitions break OpenAI strict mode; ``.problems`` lists each one, with where.

    Attributes:
        problems: Every problem found, in registry order (tool name, JSON pointer, rule).
    """

    def __init__(self, problems: Sequence[StrictProblem]) -> None:
        self.problems = tuple(problems)
        lines = "\n".join(f"  - {problem}" for problem in self.problems)
        super().__init__(
            f"{len(self.problems)} problem(s) break OpenAI strict mode"
            f" (send these tools with strict=False, or change their schemas):\n{lines}"
        )


class TurnError(AgentsError, ValueError):
    """A turn's tool calls were refused before anything started (the message says why)."""
