"""Every ``scope-tool`` sub-command and flag that README.md and docs/ mention exists in the parser.

Command lines are read where a reader copies them from: code blocks and inline code spans. Each
``scope-tool WORD`` names a sub-command (or is a top-level flag); every ``--flag`` after it, up to
a shell comment or the next command, must be one that sub-command accepts. ``make run ARGS="..."``
passes flags to ``scope-tool dev``, so those are checked against ``dev``.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass

import pytest

from scope_tool.cli._parser import build_parser

from ._markdown import ROOT, doc_pages, inline_code, read_page


@dataclass(frozen=True, slots=True, kw_only=True)
class Mention:
    where: str
    command: str  # the sub-command, "" for top-level flags, or an UPPER placeholder
    flags: tuple[str, ...]


_PARSER = build_parser()
_SUBCOMMANDS: dict[str, argparse.ArgumentParser] = next(
    dict(action.choices)
    for action in _PARSER._actions
    if isinstance(action, argparse._SubParsersAction)
)
_FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")
_INVOCATION = re.compile(r"(?<![\w./-])scope-tool\s+(\S+)")
_END = re.compile(r"\s#\s|\s\|\s|&&|;|\(or:")


def _segments(text: str) -> list[tuple[str, str]]:
    """(sub-command word, the rest up to the next command or comment) for each invocation."""
    found = []
    starts = list(_INVOCATION.finditer(text))
    for index, match in enumerate(starts):
        end = starts[index + 1].start() if index + 1 < len(starts) else len(text)
        rest = text[match.end() : end]
        cut = _END.search(rest)
        found.append((match.group(1).strip("`'\"),."), rest[: cut.start()] if cut else rest))
    return found


def _mentions() -> list[Mention]:
    found: list[Mention] = []
    for path in doc_pages():
        page = read_page(path)
        where = str(path.relative_to(ROOT))
        texts = [(block.line, line) for block in page.blocks for line in block.text.splitlines()]
        texts += inline_code(page)
        for line_number, text in texts:
            for word, rest in _segments(text):
                flags = tuple(_FLAG.findall(rest))
                if word.startswith("--"):
                    found.append(
                        Mention(where=f"{where}:{line_number}", command="", flags=(word, *flags))
                    )
                else:
                    found.append(Mention(where=f"{where}:{line_number}", command=word, flags=flags))
            make_run = re.search(r"make run\b.*?ARGS=\"([^\"]*)\"", text)
            if make_run:
                found.append(
                    Mention(
                        where=f"{where}:{line_number}",
                        command="dev",
                        flags=tuple(_FLAG.findall(make_run.group(1))),
                    )
                )
    return found


def _accepts(parser: argparse.ArgumentParser, flag: str) -> bool:
    """Whether ``parser`` or one of its own sub-commands (``token issue``) takes ``flag``."""
    for action in parser._actions:
        if flag in action.option_strings:
            return True
        if isinstance(action, argparse._SubParsersAction) and any(
            _accepts(nested, flag) for nested in action.choices.values()
        ):
            return True
    return False


def test_the_docs_mention_commands() -> None:
    """Guards the scanner: it must see the commands the README walks through."""
    commands = {mention.command for mention in _mentions()}
    assert {"dev", "call", "pending", "answer", "result", "worker", "inbox"} <= commands, commands
    assert any("--tools" in mention.flags for mention in _mentions())


@pytest.mark.parametrize("mention", _mentions(), ids=lambda m: f"{m.where}:{m.command}")
def test_mentioned_command_and_flags_exist(mention: Mention) -> None:
    if mention.command == "":
        parsers = [_PARSER]
    elif mention.command.isupper():  # a placeholder such as COMMAND: any sub-command
        parsers = list(_SUBCOMMANDS.values())
    else:
        assert mention.command in _SUBCOMMANDS, (
            f"{mention.where}: `scope-tool {mention.command}` is not a sub-command "
            f"(there are: {', '.join(sorted(_SUBCOMMANDS))})"
        )
        parsers = [_SUBCOMMANDS[mention.command]]
    for flag in mention.flags:
        assert any(_accepts(parser, flag) for parser in parsers), (
            f"{mention.where}: `scope-tool {mention.command} {flag}`: no such flag"
        )


def test_the_cli_page_lists_every_subcommand() -> None:
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    for name in _SUBCOMMANDS:
        assert f"`scope-tool {name}" in text, f"docs/cli.md does not list `scope-tool {name}`"


def test_every_flag_on_the_cli_page_exists() -> None:
    """docs/cli.md also names flags on their own (the connection table): each must exist."""
    page = read_page(ROOT / "docs" / "cli.md")
    texts = [text for _, text in inline_code(page)]
    texts += [block.text for block in page.blocks]
    flags = {flag for text in texts for flag in _FLAG.findall(text)}
    assert "--address" in flags
    parsers = [_PARSER, *_SUBCOMMANDS.values()]
    unknown = sorted(flag for flag in flags if not any(_accepts(p, flag) for p in parsers))
    assert not unknown, f"docs/cli.md names flags no command has: {unknown}"
