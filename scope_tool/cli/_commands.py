"""How a ``scope-tool`` sub-command is declared, so every one reads and helps alike.

The one-line summary shows in ``scope-tool --help`` and, capitalised, heads the command's own
help; a command about one call takes the call's id first; ``--json`` means the same everywhere.
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_json_flag", "call_command", "command"]


def command(commands: Any, name: str, summary: str) -> argparse.ArgumentParser:
    """A sub-command of ``commands`` (argparse's sub-parsers) headed by ``summary``."""
    parser: argparse.ArgumentParser = commands.add_parser(
        name,
        help=summary,
        description=summary[0].upper() + summary[1:] + ".",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return parser


def call_command(commands: Any, name: str, summary: str) -> argparse.ArgumentParser:
    """A sub-command about one call: its first argument is the call's id."""
    parser = command(commands, name, summary)
    parser.add_argument("call_id", metavar="ID", help="the call's id")
    return parser


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    """``--json``: print the command's result as JSON (the documented status shapes)."""
    parser.add_argument("--json", action="store_true", help="machine-readable output")
