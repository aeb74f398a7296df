"""The one settings reader: environment, overrides, the one truth rule, the worker command."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from scope_tool.config.settings import DEFAULT_ADDRESS, DEFAULT_TASK_QUEUE, Settings
from scope_tool.wire.errors import SettingsError


def test_defaults_then_environment_then_overrides() -> None:
    assert Settings.from_env({}) == Settings(address=DEFAULT_ADDRESS, task_queue=DEFAULT_TASK_QUEUE)
    environ = {
        "SCOPE_TOOL_ADDRESS": "t:1",
        "SCOPE_TOOL_TASK_QUEUE": "q",
        "SCOPE_TOOL_NAMESPACE": "",
    }
    read = Settings.from_env(environ, task_queue="flag-q", namespace=None)
    assert (read.address, read.namespace, read.task_queue) == ("t:1", "default", "flag-q")


@pytest.mark.parametrize(
    ("word", "tls"),
    [
        ("1", True),
        ("TRUE", True),
        ("yes", True),
        ("on", True),
        ("0", False),
        ("false", False),
        ("no", False),
        ("off", False),
    ],
)
def test_one_truth_rule_for_booleans(word: str, tls: bool) -> None:
    assert Settings.from_env({"SCOPE_TOOL_TLS": word}).tls_config() is tls


def test_an_unknown_boolean_word_is_an_error_naming_the_variable() -> None:
    with pytest.raises(SettingsError, match=r"SCOPE_TOOL_TLS must be one of .* got 'maybe'"):
        Settings.from_env({"SCOPE_TOOL_TLS": "maybe"})


def test_unknown_settings_and_a_lone_client_cert_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="unknown settings: adress"):
        Settings().with_overrides(adress="x")
    with pytest.raises(SettingsError, match="given together"):
        Settings.from_env({"SCOPE_TOOL_TLS_CERT": str(tmp_path / "c.pem")})


def test_the_worker_command_carries_every_setting_through_the_environment(tmp_path: Path) -> None:
    settings = Settings(
        address="t:1", namespace="ns", task_queue="q", tls=True, tls_ca=tmp_path / "ca.pem"
    )
    command, variables = settings.worker_command("m:registry", retry_safe=("add",))
    assert command == [
        sys.executable,
        "-m",
        "scope_tool.workers",
        "--tools",
        "m:registry",
        "--retry-safe",
        "add",
    ]
    assert Settings.from_env(variables) == settings
