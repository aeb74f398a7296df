"""The inbox's options read their ``SCOPE_TOOL_INBOX_*`` variables with the settings' rules.

A mistyped variable is a one-line error from ``scope-tool inbox`` (exit code 2) naming the
variable, and does not touch any other command: the parser of every command is built with the
inbox's options, so reading a variable at build time once broke ``scope-tool pending`` too.
"""

from __future__ import annotations

import argparse

import pytest

from scope_tool.cli._parser import build_parser
from scope_tool.inbox import InboxOptions, add_arguments
from scope_tool.inbox.server import DEFAULT_PORT


def _inbox_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser


@pytest.mark.parametrize("word", ["1", "true", "YES", "on", " yes "])
def test_dev_loopback_takes_every_truth_word(word: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCOPE_TOOL_INBOX_DEV_LOOPBACK", word)
    assert _inbox_parser().parse_args([]).dev_loopback is True


@pytest.mark.parametrize("word", ["0", "false", "no", "off"])
def test_dev_loopback_off_words_and_the_flag(word: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCOPE_TOOL_INBOX_DEV_LOOPBACK", word)
    parser = _inbox_parser()
    assert parser.parse_args([]).dev_loopback is False
    assert parser.parse_args(["--dev-loopback"]).dev_loopback is True


def test_dev_loopback_unset_is_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SCOPE_TOOL_INBOX_DEV_LOOPBACK", raising=False)
    assert _inbox_parser().parse_args([]).dev_loopback is False


def test_port_from_the_environment_and_its_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SCOPE_TOOL_INBOX_PORT", raising=False)
    assert _inbox_parser().parse_args([]).port == DEFAULT_PORT
    monkeypatch.setenv("SCOPE_TOOL_INBOX_PORT", "9100")
    assert _inbox_parser().parse_args([]).port == 9100
    assert _inbox_parser().parse_args(["--port", "0"]).port == 0


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        ("SCOPE_TOOL_INBOX_PORT", "84o0", "'84o0' is not a port number from 0 to 65535"),
        ("SCOPE_TOOL_INBOX_PORT", "70000", "'70000' is not a port number"),
        ("SCOPE_TOOL_INBOX_DEV_LOOPBACK", "maybe", "SCOPE_TOOL_INBOX_DEV_LOOPBACK must be one of"),
    ],
)
def test_a_mistyped_variable_fails_only_the_inbox_with_its_name(
    variable: str,
    value: str,
    said: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv(variable, value)
    parser = build_parser()
    assert parser.parse_args(["pending"]).command == "pending"  # other commands unaffected
    with pytest.raises(SystemExit) as exited:
        parser.parse_args(["inbox"])
    assert exited.value.code == 2
    error = capsys.readouterr().err
    assert said in error
    assert "Traceback" not in error


def test_the_parsed_flags_are_the_inbox_options(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HOST", "PORT", "IDENTITY_HEADER", "TOKEN_SECRET", "ALLOWED_HOSTS", "WEB_UI"):
        monkeypatch.delenv(f"SCOPE_TOOL_INBOX_{name}", raising=False)
    monkeypatch.setenv("SCOPE_TOOL_INBOX_HOST", "")  # empty: unset, as every setting
    monkeypatch.setenv("SCOPE_TOOL_INBOX_WEB_UI", "http://localhost:8233")
    args = _inbox_parser().parse_args(
        ["--port", "0", "--token-secret", "s" * 32, "--allowed-host", "inbox.example.com"]
    )
    assert InboxOptions.from_args(args) == InboxOptions(
        host="127.0.0.1",
        port=0,
        token_secret="s" * 32,
        allowed_hosts=("inbox.example.com",),
        web_ui_url="http://localhost:8233",
    )
    assert InboxOptions.from_args(_inbox_parser().parse_args([])) == InboxOptions(
        web_ui_url="http://localhost:8233"
    )


def test_every_option_with_a_variable_names_it_in_its_help() -> None:
    text = _inbox_parser().format_help().replace("\n", " ")
    for name in ("HOST", "PORT", "IDENTITY_HEADER", "TOKEN_SECRET", "DEV_LOOPBACK", "WEB_UI"):
        assert f"(env SCOPE_TOOL_INBOX_{name})" in " ".join(text.split()), name
