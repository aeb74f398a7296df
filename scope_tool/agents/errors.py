"""The errors of ``scope_tool.agents``, a branch of the package's one tree (``scope_tool.errors``)::

    scope_tool.errors.ToolError
    └── AgentsError
        ├── StrictModeError   (ValueError)  a definition cannot be sent with OpenAI's strict mode
        └── TurnError         (ValueError)  a turn's tool calls are malformed (nothing started)

Errors the durable runtime raises (``scope_tool.client.ToolCallsError`` and its subclasses) pass through
unchanged: an adapter renders, it does not re-decide.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from scope_tool.errors import ToolError

__all__ = ["AgentsError", "StrictModeError", "StrictProblem", "TurnError"]


@dataclass(frozen=True, slots=True, kw_only=True)
class StrictProblem:
    """One reason a tool's schema cannot be sent with OpenAI ``strict: true``.

    Attributes:
        tool: The tool's name.
        pointer: JSON pointer into the input schema (``""`` is the root).
        rule: What strict mode requires there, in words.
    """

    tool: str
    pointer: str
    rule: str

    def __str__(self) -> str:
        return f"{self.tool}: {self.pointer or '(root)'}: {self.rule}"


class AgentsError(ToolError):
    """Base of every exception ``scope_tool.agents`` raises for its own reasons."""


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
