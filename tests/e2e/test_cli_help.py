"""``scope-tool --version`` and the help a newcomer reads first: every sub-command says what it does."""

from __future__ import annotations

import argparse
from importlib.metadata import version

import pytest
from helpers.imports import modules_loaded_by

from scope_tool.cli._parser import build_parser

from ._cli import run_cli


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert len(actions) == 1
    return dict(actions[0].choices)


def test_version_prints_the_installed_version() -> None:
    shown = run_cli("--version")
    assert shown.code == 0, shown.stderr
    assert shown.stdout.strip() == f"scope-tool {version('scope-tool')}"


def test_the_top_level_help_has_a_line_for_every_subcommand() -> None:
    shown = run_cli("--help")
    assert shown.code == 0, shown.stderr
    lines = [line.split() for line in shown.stdout.splitlines()]
    for name in _subcommands():
        # argparse puts a long name's summary on the next line ("codec-server").
        described = [
            words if len(words) > 1 else lines[index + 1]
            for index, words in enumerate(lines)
            if words[:1] == [name] and (len(words) > 1 or index + 1 < len(lines))
        ]
        assert [words for words in described if words], (
            f"`scope-tool --help` has no description line for {name!r}"
        )


@pytest.mark.parametrize("name", sorted(_subcommands()))
def test_each_subcommand_help_starts_with_what_it_does(name: str) -> None:
    shown = run_cli(name, "--help")
    assert shown.code == 0, shown.stderr
    paragraphs = shown.stdout.split("\n\n")
    assert paragraphs[0].startswith(f"usage: scope-tool {name}"), shown.stdout
    description = paragraphs[1].strip()
    assert description, shown.stdout
    assert not description.startswith(("positional", "options")), shown.stdout
    assert description.endswith("."), description


def test_output_to_a_reader_that_went_away_ends_quietly() -> None:
    """`scope-tool ... | head`: the reader closed the pipe; no error report, the shell's 141."""
    import os
    import subprocess
    import sys

    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first byte is written
    try:
        done = subprocess.run(
            [sys.executable, "-m", "scope_tool.cli", "token", "issue", "--for", "alice"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            check=False,
            env={**os.environ, "SCOPE_TOOL_IDENTITY_SECRET": "s" * 32},
        )
    finally:
        os.close(write_end)
    assert done.stderr == ""
    assert done.returncode == 141


def test_a_mistyped_command_names_the_nearest_one() -> None:
    typo = run_cli("resutl", "some-call")
    assert typo.code == 2, typo
    assert typo.stderr.splitlines() == [
        "scope-tool: error: unknown command 'resutl'; did you mean 'result'? (scope-tool --help)"
    ]
    unknown = run_cli("frobnicate")
    assert unknown.code == 2, unknown
    listed = unknown.stderr.strip().removeprefix(
        "scope-tool: error: unknown command 'frobnicate'; the commands are "
    )
    assert listed.split(", ") == sorted(_subcommands())


@pytest.mark.parametrize(
    ("argv", "loaded"),
    [
        (["status", "x", "--address", "127.0.0.1:1"], set()),
        (["--help"], set()),
        (["mcp", "--help"], {"scope_tool.mcp"}),
        (["inbox", "--help"], {"scope_tool.inbox"}),
    ],
)
def test_a_command_loads_the_web_stack_only_when_it_is_the_inbox_or_mcp(
    argv: list[str], loaded: set[str]
) -> None:
    """Defining the inbox's and MCP's flags imports their packages (about 0.8 s of start-up,
    a fresh interpreter is the only place to see it): other commands do without."""
    shown = modules_loaded_by(
        f"from scope_tool.cli.__main__ import run\nrun({argv!r})",
        ("scope_tool.mcp", "scope_tool.inbox", "mcp", "starlette"),
    )
    assert shown & {"scope_tool.mcp", "scope_tool.inbox"} == loaded
    if not loaded:
        assert not shown, shown  # nor the SDKs behind them
