"""Entry point of ``scope-tool`` (console script) and ``python -m scope_tool.cli``.

Every user mistake ends as one line on stderr and exit code 1 or 2, never a traceback; an
unexpected defect prints one line too, and the traceback only with ``SCOPE_TOOL_DEBUG=1``. A
finished command leaves through ``os._exit`` after flushing, because short-lived temporalio
clients can crash at interpreter exit (sdk-python issue 300).
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import os
import sys
import traceback
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from scope_tool.cli._calls import (
    run_answer,
    run_call,
    run_cancel,
    run_delegate,
    run_extend,
    run_pending,
    run_reevaluate,
    run_result,
    run_status,
    run_withdraw,
)
from scope_tool.cli._codec import run_codec_server
from scope_tool.cli._dev import run_dev
from scope_tool.cli._history import run_history
from scope_tool.cli._identity import run_token
from scope_tool.cli._mcp import run_mcp
from scope_tool.cli._parser import build_parser
from scope_tool.cli._runtime import use_quiet_runtime
from scope_tool.cli._serve import run_inbox, run_worker
from scope_tool.cli._tools import run_tools
from scope_tool.serving._errors import EXIT_FAILED, EXIT_USAGE, CommandError

__all__ = ["main"]

_COMMANDS: dict[str, Callable[[argparse.Namespace], Coroutine[Any, Any, int]]] = {
    "dev": run_dev,
    "call": run_call,
    "status": run_status,
    "answer": run_answer,
    "pending": run_pending,
    "result": run_result,
    "cancel": run_cancel,
    "withdraw": run_withdraw,
    "extend": run_extend,
    "delegate": run_delegate,
    "reevaluate": run_reevaluate,
    "inbox": run_inbox,
    "history": run_history,
    "tools": run_tools,
    "codec-server": run_codec_server,
    "mcp": run_mcp,
    "token": run_token,
}


EXIT_READER_GONE = 141
"""The shell's code for a command whose output reader went away (128 + SIGPIPE)."""


def run(argv: Sequence[str] | None = None) -> int:
    """Parse and run one command; return its exit code (no ``os._exit``: usable in tests)."""
    try:
        return _run(argv)
    except BrokenPipeError:
        # `scope-tool history ID | head`: the reader has what it wanted. Stop quietly, as
        # other command-line tools do, instead of reporting an error nobody asked about.
        _discard_stdout()
        return EXIT_READER_GONE


def _discard_stdout() -> None:
    """Point stdout at /dev/null, so the flush at exit does not fail a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (AttributeError, OSError, ValueError):  # stdout replaced by something without a fd
        pass


def _command_word(argv: Sequence[str]) -> str:
    """The command the arguments name: their first word, ``""`` when there is none
    (``--help``, ``--version``)."""
    return argv[0] if argv and not argv[0].startswith("-") else ""


def _unknown_command(word: str) -> str | None:
    """Why ``word`` is not a command, with the nearest one; ``None`` when it is one (or empty).

    argparse would print its usage and every command name; a typo deserves the one it missed.
    """
    names = sorted([*_COMMANDS, "worker"])
    if not word or word in names:
        return None
    close = difflib.get_close_matches(word, names, n=1, cutoff=0.6)
    if close:
        return f"unknown command {word!r}; did you mean {close[0]!r}? (scope-tool --help)"
    return f"unknown command {word!r}; the commands are {', '.join(names)}"


def _run(argv: Sequence[str] | None) -> int:
    command_word = _command_word(sys.argv[1:] if argv is None else argv)
    unknown = _unknown_command(command_word)
    if unknown is not None:
        _fail(unknown)
        return EXIT_USAGE
    try:
        args = build_parser(command_word).parse_args(argv)
    except SystemExit as exit_request:
        return exit_request.code if isinstance(exit_request.code, int) else EXIT_USAGE
    try:
        if args.command == "worker":
            return run_worker(args)
        use_quiet_runtime()  # before the first client: no raw core log lines on the terminal
        return asyncio.run(_COMMANDS[args.command](args))
    except CommandError as error:
        _fail(error.message, error.details)
        return error.exit_code
    except KeyboardInterrupt:
        _fail("interrupted")
        return 130
    except BrokenPipeError:
        raise
    except Exception as error:
        if os.environ.get("SCOPE_TOOL_DEBUG"):
            traceback.print_exc()
        _fail(
            f"unexpected {type(error).__name__}: {error} (set SCOPE_TOOL_DEBUG=1 for a traceback)"
        )
        return EXIT_FAILED


def _fail(message: str, details: str = "") -> None:
    sys.stdout.flush()
    print(f"scope-tool: error: {message}", file=sys.stderr)
    if details:
        print(details, file=sys.stderr)
    sys.stderr.flush()


def main() -> None:
    """Console-script entry: run, flush, and leave without interpreter teardown."""
    code = run()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
