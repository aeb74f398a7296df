"""The command line's own error: one clear line on stderr and an exit code.

A user mistake (bad JSON, an unknown call id, a server that is not running) is not a bug, so
it must never print a traceback. Every command raises :class:`CommandError` with the line to
print and the exit code; ``__main__`` turns it into output and ``os._exit``.
"""

from __future__ import annotations

from scope_tool.errors import ToolError

__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_USAGE", "CommandError"]

EXIT_OK = 0
"""The command did what was asked (for ``call --wait`` and ``result``: the call completed)."""

EXIT_FAILED = 1
"""Refused or failed: the server said no, the answer was wrong, the call did not complete."""

EXIT_USAGE = 2
"""The command line itself was wrong (argparse uses the same code)."""


class CommandError(ToolError):
    """A user-facing failure: ``message`` is printed as one line, then ``details`` verbatim.

    Args:
        message: What was wrong, with the offending value.
        exit_code: :data:`EXIT_FAILED` or :data:`EXIT_USAGE`.
        details: Optional extra text printed after the line (for example the JSON Schema an
            answer must satisfy), so the user can fix the input without another command.
    """

    def __init__(self, message: str, *, exit_code: int = EXIT_FAILED, details: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.details = details

    @classmethod
    def usage(cls, error: BaseException) -> CommandError:
        """The command line (or a setting) was wrong: ``error``'s own message, exit code 2."""
        return cls(str(error), exit_code=EXIT_USAGE)
