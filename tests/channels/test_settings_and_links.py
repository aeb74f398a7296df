"""The pure parts of the channels: settings read with clear errors, link tokens, the decisions a
question offers, the email a person receives; and a worker still imports without a web stack."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from typing import Any

import pytest

from scope_tool.config.channels import EmailSettings, SlackReceiving, SlackSettings
from scope_tool.wire import AnnounceInput
from scope_tool.wire.errors import SettingsError
from scope_tool.wire.links import LinkError, decisions, issue_link, link_key, verify_link
from scope_tool.workers._channels import compose, message_id

BASE = {
    "SCOPE_TOOL_SMTP_HOST": "smtp.example.test",
    "SCOPE_TOOL_EMAIL_FROM": "approvals@example.test",
    "SCOPE_TOOL_INBOX_PUBLIC_URL": "https://inbox.example.test/",
}


def test_email_settings_are_read_with_defaults() -> None:
    assert EmailSettings.from_env({}) is None
    settings = EmailSettings.from_env(
        {**BASE, "SCOPE_TOOL_EMAIL_TO": "alice=alice@example.test, bob = bob@example.test"}
    )
    assert settings is not None
    assert (settings.port, settings.starttls, settings.username) == (587, True, None)
    assert settings.inbox_url == "https://inbox.example.test"
    assert settings.address_of("bob") == "bob@example.test"
    assert settings.address_of("carol@example.test") == "carol@example.test"
    assert settings.address_of("carol") is None
    assert "secret" not in repr(
        EmailSettings.from_env(
            {**BASE, "SCOPE_TOOL_SMTP_USERNAME": "u", "SCOPE_TOOL_SMTP_PASSWORD": "secret"}
        )
    )


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"SCOPE_TOOL_SMTP_PORT": "smtp"}, "SCOPE_TOOL_SMTP_PORT"),
        ({"SCOPE_TOOL_SMTP_STARTTLS": "maybe"}, "SCOPE_TOOL_SMTP_STARTTLS"),
        ({"SCOPE_TOOL_SMTP_USERNAME": "u"}, "SCOPE_TOOL_SMTP_PASSWORD"),
        ({"SCOPE_TOOL_EMAIL_FROM": ""}, "SCOPE_TOOL_EMAIL_FROM"),
        ({"SCOPE_TOOL_INBOX_PUBLIC_URL": ""}, "SCOPE_TOOL_INBOX_PUBLIC_URL"),
        ({"SCOPE_TOOL_INBOX_PUBLIC_URL": "inbox"}, "SCOPE_TOOL_INBOX_PUBLIC_URL"),
        ({"SCOPE_TOOL_LINK_LIFETIME": "-5"}, "SCOPE_TOOL_LINK_LIFETIME"),
        ({"SCOPE_TOOL_EMAIL_TO": "alice"}, "SCOPE_TOOL_EMAIL_TO"),
        ({"SCOPE_TOOL_EMAIL_TO": "alice=nowhere"}, "SCOPE_TOOL_EMAIL_TO"),
    ],
)
def test_a_bad_email_setting_is_named(changes: dict[str, str], named: str) -> None:
    with pytest.raises(SettingsError, match=named):
        EmailSettings.from_env({**BASE, **changes})


def test_slack_settings_are_read_with_clear_errors() -> None:
    assert SlackSettings.from_env({}) is None
    hook = SlackSettings.from_env({"SCOPE_TOOL_SLACK_WEBHOOK_URL": "https://hooks.slack.com/x"})
    assert hook is not None
    assert hook.webhook_url == "https://hooks.slack.com/x"
    with pytest.raises(SettingsError, match="SCOPE_TOOL_SLACK_CHANNEL"):
        SlackSettings.from_env({"SCOPE_TOOL_SLACK_BOT_TOKEN": "xoxb-1"})
    with pytest.raises(SettingsError, match="not both"):
        SlackSettings.from_env(
            {"SCOPE_TOOL_SLACK_BOT_TOKEN": "xoxb-1", "SCOPE_TOOL_SLACK_WEBHOOK_URL": "https://h/x"}
        )
    assert SlackReceiving.from_env({}) is None
    with pytest.raises(SettingsError, match="SCOPE_TOOL_SLACK_USERS"):
        SlackReceiving.from_env({"SCOPE_TOOL_SLACK_SIGNING_SECRET": "s"})
    receiving = SlackReceiving.from_env(
        {"SCOPE_TOOL_SLACK_SIGNING_SECRET": "s", "SCOPE_TOOL_SLACK_USERS": "U1=alice"}
    )
    assert receiving is not None
    assert receiving.users == {"U1": "alice"}


KEY = link_key(b"k" * 32)


def _link(**changes: Any) -> str:
    claims: dict[str, Any] = {
        "key": KEY,
        "call_id": "c",
        "request_id": "c/r1",
        "decision": "true",
        "recipient": "alice",
        "channel": "email",
        "lifetime_seconds": 60,
        "now": 1000.0,
    }
    return issue_link(**{**claims, **changes})


def test_a_link_is_bound_signed_and_short_lived() -> None:
    claims = verify_link(_link(), key=KEY, now=1030.0)
    assert (claims.call_id, claims.request_id, claims.decision, claims.recipient) == (
        "c",
        "c/r1",
        "true",
        "alice",
    )
    with pytest.raises(LinkError) as expired:
        verify_link(_link(), key=KEY, now=1060.0)
    assert expired.value.reason == "token_expired"
    assert expired.value.claims is not None
    with pytest.raises(LinkError, match="signature") as forged:
        verify_link(_link(), key=link_key(b"x" * 32), now=1030.0)
    assert forged.value.reason == "not_verified"
    for broken in ("", "sl1.a", "st1.a.b", "sl1.é.b", _link() + "x"):
        with pytest.raises(LinkError):
            verify_link(broken, key=KEY, now=1030.0)
    # A link token is not an identity token, nor signed with the identity secret itself.
    with pytest.raises(LinkError):
        verify_link(_link(key=b"k" * 32), key=KEY, now=1030.0)


def _schema(value: Any) -> bytes:
    return json.dumps(value).encode()


@pytest.mark.parametrize(
    ("schema", "answers"),
    [
        ({"type": "boolean"}, ["true", "false"]),
        ({"enum": ["small", "large"]}, ['"small"', '"large"']),
        ({"oneOf": [{"const": 1}, {"const": 2}]}, ["1", "2"]),
        (
            {
                "type": "object",
                "properties": {"decision": {"enum": ["approve", "deny"]}, "reason": {}},
                "required": ["decision"],
            },
            ['{"decision":"approve"}', '{"decision":"deny"}'],
        ),
        ({"type": "string"}, []),
        ({"enum": list(range(11))}, []),
        ({"type": "boolean", "const": True}, []),
    ],
)
def test_the_decisions_a_question_offers(schema: Any, answers: list[str]) -> None:
    found = decisions(b'"Go?"', _schema(schema))
    assert [each.answer for each in found] == answers


def _question(schema: Any) -> AnnounceInput:
    return AnnounceInput(
        call_id="deploy/7",
        tool="deploy",
        request_id="deploy/7/r1",
        arguments='{"service": "api", "version": "1.4.2"}',
        prompt=json.dumps({"question": "Deploy <api>?", "details": {"env": "prod"}}).encode(),
        response_schema=_schema(schema),
        allowed_answerers=("alice",),
        channels=("email",),
    )


def test_the_email_shows_the_prompt_the_exact_arguments_and_one_link_per_decision() -> None:
    message = compose(
        _question({"type": "boolean"}),
        recipient="alice",
        inbox_url="https://inbox.example.test",
        key=KEY,
        lifetime_seconds=1800,
        now=1000.0,
    )
    assert "Deploy <api>?" in message.text
    assert '{"service": "api", "version": "1.4.2"}' in message.text
    assert "&lt;api&gt;" in message.html
    assert "<api>" not in message.html
    assert [label for label, _ in message.links] == ["Approve", "Deny"]
    token = message.links[0][1].rsplit("/", 1)[1]
    assert verify_link(token, key=KEY, now=1001.0).decision == "true"
    assert "expires in 30 min" in message.text
    # A schema that is not a simple decision links to the inbox's form instead.
    form = compose(
        _question({"type": "string"}),
        recipient="alice",
        inbox_url="https://inbox.example.test",
        key=KEY,
        lifetime_seconds=60,
    )
    assert form.links == (("Answer in the inbox", "https://inbox.example.test/calls/deploy%2F7"),)
    first = message_id(_question({"type": "boolean"}), "alice", "a@example.test")
    assert first == message_id(_question({"type": "string"}), "alice", "a@example.test")
    assert first != message_id(_question({"type": "boolean"}), "bob", "a@example.test")
    # A reminder of the same question is a message of its own (once only, too).
    reminder = dataclasses.replace(_question({"type": "boolean"}), occasion=1)
    assert message_id(reminder, "alice", "a@example.test") != first


def test_a_worker_imports_without_a_web_stack() -> None:
    code = (
        "import sys, scope_tool.workers, scope_tool.workers._channels, scope_tool.config.channels\n"
        "print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    loaded = set(done.stdout.split())
    assert not loaded & {"starlette", "jinja2", "uvicorn", "aiosmtpd", "httpx"}, loaded
