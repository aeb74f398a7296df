"""User mistakes end as one clear line on stderr and the documented exit code, never a traceback.

Exit codes: 2 for a wrong command line (bad JSON, unknown flag), 1 for a refusal or failure
(unknown call id, unknown tool, server unreachable).
"""

from __future__ import annotations

import uuid

import pytest

from ._cli import DevProcess, assert_user_error, cli, free_port, run_cli


def test_no_command_is_a_usage_error() -> None:
    result = run_cli()
    assert result.code == 2
    assert "Traceback" not in result.stderr
    assert "usage: scope-tool" in result.stderr


def test_bad_json_arguments_are_refused_before_connecting() -> None:
    # No server at this address: the JSON is checked first, so the error names the JSON.
    result = run_cli("call", "add", "{not json", address=f"127.0.0.1:{free_port()}")
    assert_user_error(result, code=2, contains="ARGS is not valid JSON")
    assert len(result.stderr.strip().splitlines()) == 1


def test_server_down_says_how_to_start_one() -> None:
    address = f"127.0.0.1:{free_port()}"
    for command in (("status", "some-call"), ("pending",), ("call", "add", "{}")):
        result = run_cli(*command, address=address)
        assert_user_error(
            result,
            code=1,
            contains=f"cannot reach Temporal at {address} (is `scope-tool dev` running?)",
        )
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_unknown_call_id(dev_session: DevProcess) -> None:
    for command in ("status", "result", "cancel"):
        result = cli(dev_session, command, "no-such-call-anywhere")
        assert_user_error(result, code=1, contains="no call with id 'no-such-call-anywhere'")
    answered = cli(dev_session, "answer", "no-such-call-anywhere", "true")
    assert_user_error(answered, code=1, contains="no call with id 'no-such-call-anywhere'")


def test_unknown_tool_is_refused_before_anything_starts(dev_session: DevProcess) -> None:
    result = cli(dev_session, "call", "no_such_tool", "{}", "--id", "never-started", "--wait")
    assert_user_error(result, code=1, contains="no worker serves tool 'no_such_tool'")
    assert "scope-tool tools" in result.stderr
    missing = cli(dev_session, "status", "never-started")
    assert_user_error(missing, code=1, contains="no call with id 'never-started'")


def test_invalid_arguments_are_refused_before_anything_starts(dev_session: DevProcess) -> None:
    result = cli(dev_session, "call", "add", '{"a": "two", "b": 3}', "--wait")
    assert result.code == 2, result
    assert "started" not in result.stdout
    assert "do not satisfy the input schema of tool 'add' at /a:" in result.stderr
    assert "Traceback" not in result.stdout + result.stderr


def test_bad_flags_are_usage_errors(dev_session: DevProcess) -> None:
    assert run_cli("call", "add", "{}", "--timeout", "-3").code == 2
    assert run_cli("pending", "--limit", "0").code == 2
    assert run_cli("status").code == 2
    mtls = cli(dev_session, "status", "x", "--tls-cert", "/nonexistent.pem")
    assert_user_error(mtls, code=2, contains="--tls-cert and --tls-key go together")


def test_worker_with_a_malformed_tools_spec() -> None:
    result = run_cli("worker", "--tools", "no-colon-here")
    assert_user_error(result, code=2, contains="--tools must be module:attribute")
    missing = run_cli("worker", "--tools", "no_such_module_xyz:registry")
    assert_user_error(missing, code=1, contains="cannot find module 'no_such_module_xyz'")
    # A module without that attribute is the same kind of mistake: same prefix, same code.
    no_attribute = run_cli("worker", "--tools", "examples.tools:nope")
    assert_user_error(no_attribute, code=1, contains="has no attribute 'nope'")
    not_a_registry = run_cli("worker", "--tools", "examples.tools:Path")
    assert_user_error(not_a_registry, code=1, contains="not a scope_tool.Registry")


def _call_id(stdout: str) -> str:
    first = stdout.splitlines()[0]
    assert first.startswith("started call "), stdout
    return first.split()[2]


def test_reusing_a_call_id_with_other_arguments_is_an_error(dev_session: DevProcess) -> None:
    call_id = f"reuse-{uuid.uuid4().hex[:12]}"
    first = cli(dev_session, "call", "add", '{"a":1,"b":2}', "--id", call_id, "--wait")
    assert first.code == 0, first
    assert f"started call {call_id} (tool add)" in first.stdout
    other = cli(dev_session, "call", "add", '{"a":5,"b":5}', "--id", call_id, "--wait")
    assert_user_error(  # refused (1), not a bad command line (2): docs/cli.md's table
        other, code=1, contains=f"call '{call_id}' already exists with other arguments"
    )
    assert "a new call needs a new id" in other.stderr
    same = cli(dev_session, "call", "add", '{"a":1,"b":2}', "--id", call_id, "--wait")
    assert same.code == 0, same
    assert f"attached to the existing call {call_id} (tool add)" in same.stdout
    assert "started call" not in same.stdout


def test_timeout_without_wait_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """`--timeout` bounds `--wait`; alone it would be ignored, so it is refused, before connecting."""
    from scope_tool.cli.__main__ import run

    assert run(["call", "add", '{"a": 1, "b": 2}', "--timeout", "5"]) == 2
    error = capsys.readouterr().err
    assert error.startswith("scope-tool: error: --timeout"), error
    assert "--wait" in error, error
