"""``scope-tool mcp`` as a person types it: bad settings are one clear line, exit code 2."""

from __future__ import annotations

import subprocess
import sys

import pytest
from mcp_harness import REPOSITORY, environment


def _run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scope_tool.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPOSITORY,
        env=environment(**env),
        check=False,
    )


def test_help_names_the_transports():
    done = _run("mcp", "--help")
    assert done.returncode == 0
    assert "--http HOST:PORT" in done.stdout
    assert "--inbox-url" in done.stdout


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (("--http", "nonsense"), {}, "--http must be HOST:PORT"),
        (("--wait", "0"), {}, "--wait must be a positive number"),
        (("--inbox-url", "ftp://x"), {}, "--inbox-url must be an http(s) URL"),
        ((), {"SCOPE_TOOL_MCP_STATE_KEY": "short"}, "at least 32 bytes"),
        (("--http", "0.0.0.0:8236"), {}, "is not a loopback address"),
        (("--http", "10.1.2.3:8236"), {}, "pass --auth-tokens FILE"),
        (("--http", "127.0.0.1:8236"), {"SCOPE_TOOL_MCP_TOKENS": "alice short"}, "shorter than"),
        (
            ("--http", "0.0.0.0:8236", "--oauth-issuer", "https://id.example"),
            {},
            "needs --resource-url",
        ),
        (("--auth-tokens", "/nonexistent"), {}, "apply to --http"),
    ],
)
def test_bad_settings_are_one_line_and_exit_2(tmp_path, args, env, message):
    done = _run(
        "mcp",
        "--tools",
        "mcp_test_tools:REGISTRY",
        "--state-key-file",
        str(tmp_path / "k"),
        "--address",
        "127.0.0.1:1",
        *args,
        **env,
    )
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""  # stdout is the stdio protocol channel: nothing else goes there


def test_an_unknown_registry_is_refused_before_connecting(tmp_path):
    done = _run(
        "mcp",
        "--tools",
        "no_such_module:registry",
        "--state-key-file",
        str(tmp_path / "k"),
        "--address",
        "127.0.0.1:1",
    )
    assert done.returncode == 2
    assert "cannot import module 'no_such_module'" in done.stderr


def test_the_state_key_file_is_made_once_and_private(tmp_path):
    key = tmp_path / "state.key"
    done = _run(
        "mcp",
        "--tools",
        "mcp_test_tools:REGISTRY",
        "--state-key-file",
        str(key),
        "--address",
        "127.0.0.1:1",
    )
    assert done.returncode == 1  # no server there: the connection error, after the key was made
    assert "cannot reach Temporal" in done.stderr
    assert key.stat().st_mode & 0o777 == 0o600
    assert len(key.read_bytes()) >= 32


def test_a_missing_extra_says_how_to_install_it():
    code = (
        "import sys; sys.modules['scope_tool.mcp'] = None\n"
        "from scope_tool.cli.__main__ import run\n"
        "sys.exit(run(['mcp', '--tools', 'a:b']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=REPOSITORY,
        env=environment(),
    )
    assert done.returncode == 1
    assert "scope-tool mcp needs the mcp extra: pip install 'scope-tool[mcp]'" in done.stderr
