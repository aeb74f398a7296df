"""A tool that wraps another: :class:`~scope_tool.Guard` and the approval gate.

A wrapper shows the wrapped tool's definition as it was when the wrapper was made, so later
changes to the wrapped tool cannot widen what was approved, and hands the wrapped tool back
through ``unwrap()``, so its capabilities (its input validator) stay reachable: ``bind`` looks
through wrappers for them.
"""

from __future__ import annotations

from scope_tool._definition import Definition
from scope_tool._tool import Tool

__all__ = ["Wrapper"]


class Wrapper:
    """The part every wrapping tool shares: the snapshotted definition and ``unwrap()``.

    A subclass sets ``_tool`` and ``_definition`` in its constructor and implements ``call``.
    """

    __slots__ = ("_definition", "_tool")

    _definition: Definition
    _tool: Tool

    def definition(self) -> Definition:
        """The wrapped tool's definition, snapshotted when the wrapper was made."""
        return self._definition

    def unwrap(self) -> Tool:
        """The wrapped tool, so its capabilities (its input validator) stay reachable."""
        return self._tool
