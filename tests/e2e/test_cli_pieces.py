"""The CLI's pure pieces, in-process: answer hints, prompts, tables, flags and the dev lock.

These run without a server; the subprocess tests around them show the same behaviour end to end.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
from pydantic import BaseModel

from scope_tool import Func, Request, bind, require_approval
from scope_tool.cli._dev import waiting_calls_url
from scope_tool.cli._parser import build_parser
from scope_tool.cli._render import (
    answer_hint,
    prompt_text,
    render_status,
    render_table,
    schema_refusal_details,
    status_to_json,
)
from scope_tool.client import CallStatus, PendingInput, Phase
from scope_tool.config._embedded_server import SEARCH_ATTRIBUTES
from scope_tool.config.settings import Settings
from scope_tool.serving._connection import settings_from_args
from scope_tool.serving._dev_server import DevLock, DevServerSettings
from scope_tool.serving._errors import EXIT_FAILED, EXIT_USAGE, CommandError
from scope_tool.wire import ASSIGNEE_KEY, PHASE_KEY, TOOL_KEY


@pytest.mark.parametrize(
    ("schema", "example"),
    [
        ({"type": "boolean"}, "true"),
        ({"type": "string", "enum": ["canary", "blue-green"]}, '"canary"'),
        ({"const": 7}, "7"),
        (
            {
                "type": "object",
                "required": ["approve", "note"],
                "properties": {"approve": {"type": "boolean"}, "note": {"type": "string"}},
            },
            '{"approve": true, "note": "..."}',
        ),
    ],
)
def test_answer_hint_gives_an_example_the_schema_names(schema: object, example: str) -> None:
    assert answer_hint("c1", json.dumps(schema).encode()) == f"scope-tool answer c1 '{example}'"


def test_prompt_text_shows_the_question_first() -> None:
    assert prompt_text(b'"Approve?"') == "Approve?"
    assert prompt_text(b'{"question":"Approve?"}') == "Approve?"
    assert prompt_text(b'{"question":"Write?","path":"a"}') == 'Write? {"path": "a"}'
    assert prompt_text(b"[1,2]") == "[1, 2]"


def test_table_aligns_and_flattens_newlines() -> None:
    table = render_table(("A", "LONGER"), [("x\ny", "1"), ("zzzz", "22")])
    assert table.splitlines() == ["A     LONGER", "x y   1", "zzzz  22"]


def _waiting(allowed: tuple[str, ...]) -> CallStatus:
    pending = PendingInput(
        request_id="c1/r1",
        prompt=b'"Ship it?"',
        response_schema=b'{"type":"boolean"}',
        asked_at=datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC),
    )
    return CallStatus(
        call_id="c1",
        tool="ask",
        phase=Phase.AWAITING_INPUT,
        round=1,
        pending=pending,
        allowed_answerers=allowed,
    )


def test_status_names_who_may_answer_only_when_restricted() -> None:
    restricted = _waiting(("bob", "alice"))
    lines = render_status(restricted).splitlines()
    assert [line.split(maxsplit=3)[-1] for line in lines if line.startswith("who may answer")] == [
        "bob, alice"
    ]
    assert status_to_json(restricted)["allowed_answerers"] == ["bob", "alice"]
    anyone = _waiting(())
    assert "who may answer" not in render_status(anyone)
    assert status_to_json(anyone)["allowed_answerers"] == []


def test_a_refused_non_approval_answer_shows_the_schema() -> None:
    details = schema_refusal_details(_waiting(()))
    assert details.splitlines()[0] == "the answer must satisfy this JSON Schema:"
    assert json.loads(details.split("\n", 1)[1]) == {"type": "boolean"}


class Person(BaseModel):
    name: str


async def test_a_refused_approval_answer_shows_the_decisions_not_the_schema() -> None:
    def greet(person: Person) -> str:
        return f"hello {person.name}"

    binding = bind(require_approval(Func(greet, name="greet")))
    result = await binding.call(
        binding.contract.prepare(Request(name="greet", arguments='{"name": "Ada"}'))
    )
    asked = result.input_request
    assert asked is not None
    status = replace(
        _waiting(()),
        pending=PendingInput(
            request_id="c1/r1",
            prompt=asked.prompt,
            response_schema=asked.response_schema,
            asked_at=datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC),
        ),
    )
    lines = schema_refusal_details(status).splitlines()
    assert lines[0] == "an answer is one of these decisions:"
    assert [line.split()[:2] for line in lines[1:]] == [
        ["to", "approve"],
        ["to", "deny"],
        ["to", "edit"],
    ]
    assert 'scope-tool answer c1 \'{"decision":"approve"}\'' in lines[1]
    # The same commands the status page shows, each answer one the schema accepts.
    shown = render_status(status)
    for line in lines[1:]:
        assert line.split(maxsplit=2)[2] in shown
        asked.continuation(line.split("'")[1])


def test_waiting_calls_url_carries_the_phase_query() -> None:
    url = waiting_calls_url("http://localhost:8233")
    parsed = urlparse(url)
    assert parsed.path == "/namespaces/default/workflows"
    assert parse_qs(parsed.query)["query"] == [f'{PHASE_KEY.name}="AWAITING_INPUT"']


def test_dev_server_registers_the_runtime_search_attributes(tmp_path: Path) -> None:
    assert (
        (TOOL_KEY.name, "Keyword"),
        (PHASE_KEY.name, "Keyword"),
        (ASSIGNEE_KEY.name, "KeywordList"),
    ) == SEARCH_ATTRIBUTES
    command = DevServerSettings(data_dir=tmp_path, port=1234, ui_port=5678).command()
    assert command[1:3] == ("server", "start-dev")
    flags = list(itertools.pairwise(command))
    assert ("--db-filename", str(tmp_path / "dev.db")) in flags
    assert ("--sqlite-pragma", "journal_mode=wal") in flags
    assert ("--sqlite-pragma", "synchronous=normal") in flags
    # Without it every task not handed over inline waits ~40 ms (see SERVER_TUNING).
    assert ("--dynamic-config-value", "history.transferProcessorMaxPollRPS=1000") in flags
    assert ("--search-attribute", f"{PHASE_KEY.name}=Keyword") in flags
    assert ("--search-attribute", f"{ASSIGNEE_KEY.name}=KeywordList") in flags
    assert ("--port", "1234") in flags
    assert ("--ui-port", "5678") in flags


def test_dev_lock_is_exclusive_and_names_its_holder(tmp_path: Path) -> None:
    first = DevLock(tmp_path)
    first.acquire()
    first.record(pid=4242, port=7000, ui_port=8000)
    try:
        with pytest.raises(CommandError) as refused:
            DevLock(tmp_path).acquire()
        assert refused.value.exit_code == EXIT_FAILED
        assert "pid 4242, Temporal at localhost:7000, Web UI http://localhost:8000" in str(
            refused.value
        )
    finally:
        first.release()
    second = DevLock(tmp_path)
    second.acquire()
    second.release()
    assert not (tmp_path / "dev.lock").exists()


def test_connection_flags_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCOPE_TOOL_ADDRESS", "temporal.example:7233")
    monkeypatch.setenv("SCOPE_TOOL_NAMESPACE", "agents")
    monkeypatch.setenv("SCOPE_TOOL_TLS", "true")
    options = settings_from_args(build_parser().parse_args(["pending"]))
    assert (options.address, options.namespace, options.task_queue) == (
        "temporal.example:7233",
        "agents",
        "scope-tools",
    )
    assert options.tls_config() is True
    flagged = build_parser().parse_args(["pending", "--address", "other:1", "--namespace", "x"])
    assert settings_from_args(flagged).address == "other:1"
    monkeypatch.delenv("SCOPE_TOOL_TLS")
    plain = settings_from_args(build_parser().parse_args(["pending"]))
    assert plain.tls_config() is False


def _tls_from_environment() -> object:
    """What ``python -m scope_tool.workers`` connects with: the one settings reader, from the environment."""
    return Settings.from_env().tls_config()


def test_the_worker_process_reads_tls_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in (
        "SCOPE_TOOL_TLS",
        "SCOPE_TOOL_TLS_CA",
        "SCOPE_TOOL_TLS_CERT",
        "SCOPE_TOOL_TLS_KEY",
    ):
        monkeypatch.delenv(name, raising=False)
    assert _tls_from_environment() is False
    monkeypatch.setenv("SCOPE_TOOL_TLS", "1")
    assert _tls_from_environment() is True
    monkeypatch.setenv("SCOPE_TOOL_TLS", "no")  # one truth rule: "no" is plain text everywhere
    assert _tls_from_environment() is False
    assert settings_from_args(build_parser().parse_args(["pending"])).tls_config() is False
    monkeypatch.setenv("SCOPE_TOOL_TLS", "1")
    cert, key, ca = tmp_path / "c.pem", tmp_path / "k.pem", tmp_path / "ca.pem"
    cert.write_bytes(b"CERT")
    key.write_bytes(b"KEY")
    ca.write_bytes(b"CA")
    monkeypatch.setenv("SCOPE_TOOL_TLS_CERT", str(cert))
    monkeypatch.setenv("SCOPE_TOOL_TLS_KEY", str(key))
    monkeypatch.setenv("SCOPE_TOOL_TLS_CA", str(ca))
    config = _tls_from_environment()
    assert not isinstance(config, bool)
    assert (config.server_root_ca_cert, config.client_cert, config.client_private_key) == (
        b"CA",
        b"CERT",
        b"KEY",
    )
    monkeypatch.delenv("SCOPE_TOOL_TLS_KEY")
    with pytest.raises(ValueError, match="given together"):
        _tls_from_environment()


def test_mtls_files_are_read_and_missing_ones_named(tmp_path: Path) -> None:
    cert, key = tmp_path / "c.pem", tmp_path / "k.pem"
    cert.write_bytes(b"CERT")
    key.write_bytes(b"KEY")
    args = build_parser().parse_args(["pending", "--tls-cert", str(cert), "--tls-key", str(key)])
    config = settings_from_args(args).tls_config()
    assert not isinstance(config, bool)
    assert (config.client_cert, config.client_private_key) == (b"CERT", b"KEY")
    missing = build_parser().parse_args(
        ["pending", "--tls-cert", str(cert), "--tls-key", str(tmp_path / "nope.pem")]
    )
    with pytest.raises(CommandError) as refused:
        settings_from_args(missing)
    assert refused.value.exit_code == EXIT_USAGE
    assert "nope.pem" in refused.value.message


def test_status_text_escapes_control_characters_of_who_answered() -> None:
    """``--by`` sent by another client with ESC and CR cannot rewrite a line (#25 item 11)."""
    from scope_tool.client import AnswerRecord

    forged = "bob\x1b[2K\routcome  REJECTED by security\nrequest id     FAKE"
    status = replace(
        _waiting(()),
        answers=(
            AnswerRecord(
                request_id="c1/r0",
                round=0,
                response=b"true",
                answered_by=forged,
                answered_at=datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC),
            ),
        ),
    )
    shown = render_status(status)
    assert "\x1b" not in shown
    assert "\r" not in shown
    assert not any(line.startswith("request id     FAKE") for line in shown.splitlines())
    assert "bob\\x1b[2K\\routcome" in shown
