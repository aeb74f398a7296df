"""Settings of the answer channels (email, Slack), read from ``SCOPE_TOOL_*`` variables.

Workers send (:class:`EmailSettings`, :class:`SlackSettings`); the inbox receives (links need
``SCOPE_TOOL_IDENTITY_SECRET`` only; Slack's interactivity needs :class:`SlackReceiving`). Each
``from_env`` names the variable that is wrong and what it must be, and reads nothing else.

Email (worker):

=================================  =========================================================
``SCOPE_TOOL_SMTP_HOST``            the SMTP server (unset: email is off)
``SCOPE_TOOL_SMTP_PORT``            its port (default 587)
``SCOPE_TOOL_SMTP_STARTTLS``        upgrade with STARTTLS before logging in (default on)
``SCOPE_TOOL_SMTP_USERNAME``        login name (unset: no login)
``SCOPE_TOOL_SMTP_PASSWORD``        login password (environment only)
``SCOPE_TOOL_EMAIL_FROM``           the From address (required with a host)
``SCOPE_TOOL_EMAIL_TO``             ``name=address`` pairs, comma-separated: where each
                                    answerer's mail goes (an answerer name that is itself an
                                    address needs no entry)
``SCOPE_TOOL_LINK_LIFETIME``        seconds an answer link stays valid (default 3600)
``SCOPE_TOOL_INBOX_PUBLIC_URL``     the inbox's address as recipients reach it (links point
                                    there; required with a host)
=================================  =========================================================

Slack (worker sends; inbox receives):

=================================  =========================================================
``SCOPE_TOOL_SLACK_WEBHOOK_URL``    an incoming webhook URL, or
``SCOPE_TOOL_SLACK_BOT_TOKEN``      a bot token for ``chat.postMessage`` with
``SCOPE_TOOL_SLACK_CHANNEL``        the channel to post in
``SCOPE_TOOL_SLACK_API_URL``        Slack's Web API base (default ``https://slack.com/api``)
``SCOPE_TOOL_SLACK_SIGNING_SECRET`` the app's signing secret (inbox: verifies button presses)
``SCOPE_TOOL_SLACK_USERS``          ``SLACK_USER_ID=answerer`` pairs, comma-separated (inbox)
=================================  =========================================================

Both (worker): ``SCOPE_TOOL_CHANNEL_LEDGER``, the directory recording each message sent, so a
retry after a crash never sends it twice (default ``.scope-tool/channel-sent``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

from scope_tool.config.settings import parse_flag
from scope_tool.wire.errors import SettingsError

__all__ = [
    "DEFAULT_LINK_LIFETIME_SECONDS",
    "EmailSettings",
    "SlackReceiving",
    "SlackSettings",
    "ledger_from_env",
    "parse_pairs",
]

DEFAULT_LINK_LIFETIME_SECONDS: Final = 3600.0
_MAX_LINK_LIFETIME_SECONDS: Final = 7 * 24 * 3600.0


def parse_pairs(variable: str, text: str) -> dict[str, str]:
    """``a=b,c=d`` as a dict; an entry without ``=`` or with an empty side is an error.

    Raises:
        SettingsError: names ``variable`` and the bad entry.
    """
    pairs: dict[str, str] = {}
    for entry in (each.strip() for each in text.split(",")):
        if not entry:
            continue
        key, sep, value = entry.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise SettingsError(f"{variable}: entry {entry!r} must be KEY=VALUE")
        pairs[key.strip()] = value.strip()
    return pairs


def ledger_from_env(environ: Mapping[str, str] | None = None) -> Path:
    """``SCOPE_TOOL_CHANNEL_LEDGER``, else ``.scope-tool/channel-sent``."""
    env = os.environ if environ is None else environ
    return Path(env.get("SCOPE_TOOL_CHANNEL_LEDGER", "").strip() or ".scope-tool/channel-sent")


def _url(variable: str, value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SettingsError(f"{variable} must be an http:// or https:// URL, got {value!r}")
    return value.rstrip("/")


@dataclass(frozen=True, slots=True, kw_only=True)
class EmailSettings:
    """How a worker sends answer emails (see the module docstring for the variables)."""

    host: str
    port: int = 587
    starttls: bool = True
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    sender: str
    directory: Mapping[str, str] = field(default_factory=dict)
    link_lifetime_seconds: float = DEFAULT_LINK_LIFETIME_SECONDS
    inbox_url: str

    def address_of(self, answerer: str) -> str | None:
        """Where ``answerer``'s mail goes: the directory's entry, else the name if it is an
        address, else ``None`` (nobody to send to)."""
        found = self.directory.get(answerer)
        if found is not None:
            return found
        return answerer if "@" in answerer else None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> EmailSettings | None:
        """The settings, or ``None`` when ``SCOPE_TOOL_SMTP_HOST`` is unset (email off).

        Raises:
            SettingsError: a variable is malformed, or one email needs is missing (named).
        """
        env = os.environ if environ is None else environ
        host = env.get("SCOPE_TOOL_SMTP_HOST", "").strip()
        if not host:
            return None
        port_text = env.get("SCOPE_TOOL_SMTP_PORT", "").strip() or "587"
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise SettingsError(f"SCOPE_TOOL_SMTP_PORT must be a port number, got {port_text!r}")
        starttls_text = env.get("SCOPE_TOOL_SMTP_STARTTLS", "").strip()
        starttls = parse_flag("SCOPE_TOOL_SMTP_STARTTLS", starttls_text) if starttls_text else True
        username = env.get("SCOPE_TOOL_SMTP_USERNAME", "").strip() or None
        password = env.get("SCOPE_TOOL_SMTP_PASSWORD") or None
        if (username is None) != (password is None):
            raise SettingsError(
                "SCOPE_TOOL_SMTP_USERNAME and SCOPE_TOOL_SMTP_PASSWORD go together (SMTP login)"
            )
        sender = env.get("SCOPE_TOOL_EMAIL_FROM", "").strip()
        if "@" not in sender:
            raise SettingsError(
                f"SCOPE_TOOL_EMAIL_FROM must be the From address of answer emails, got {sender!r}"
            )
        inbox = env.get("SCOPE_TOOL_INBOX_PUBLIC_URL", "").strip()
        if not inbox:
            raise SettingsError(
                "SCOPE_TOOL_INBOX_PUBLIC_URL must be set with SCOPE_TOOL_SMTP_HOST: answer links"
                " point to the inbox, at the address recipients reach it"
            )
        lifetime = _lifetime(env.get("SCOPE_TOOL_LINK_LIFETIME", "").strip())
        directory = parse_pairs("SCOPE_TOOL_EMAIL_TO", env.get("SCOPE_TOOL_EMAIL_TO", ""))
        for name, address in directory.items():
            if "@" not in address:
                raise SettingsError(
                    f"SCOPE_TOOL_EMAIL_TO: {name}'s address {address!r} is not an email address"
                )
        return cls(
            host=host,
            port=int(port_text),
            starttls=starttls,
            username=username,
            password=password,
            sender=sender,
            directory=directory,
            link_lifetime_seconds=lifetime,
            inbox_url=_url("SCOPE_TOOL_INBOX_PUBLIC_URL", inbox),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class SlackSettings:
    """How a worker posts to Slack: an incoming webhook, or ``chat.postMessage`` with a bot."""

    webhook_url: str | None = field(default=None, repr=False)
    bot_token: str | None = field(default=None, repr=False)
    channel: str | None = None
    api_url: str = "https://slack.com/api"
    link_lifetime_seconds: float = DEFAULT_LINK_LIFETIME_SECONDS
    inbox_url: str | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> SlackSettings | None:
        """The settings, or ``None`` when neither a webhook URL nor a bot token is set.

        Raises:
            SettingsError: a malformed URL, or a bot token without a channel.
        """
        env = os.environ if environ is None else environ
        webhook = env.get("SCOPE_TOOL_SLACK_WEBHOOK_URL", "").strip() or None
        token = env.get("SCOPE_TOOL_SLACK_BOT_TOKEN", "").strip() or None
        if webhook is None and token is None:
            return None
        if webhook is not None and token is not None:
            raise SettingsError(
                "set SCOPE_TOOL_SLACK_WEBHOOK_URL or SCOPE_TOOL_SLACK_BOT_TOKEN, not both"
            )
        channel = env.get("SCOPE_TOOL_SLACK_CHANNEL", "").strip() or None
        if token is not None and channel is None:
            raise SettingsError(
                "SCOPE_TOOL_SLACK_BOT_TOKEN posts with chat.postMessage, which needs"
                " SCOPE_TOOL_SLACK_CHANNEL (a channel id such as C0123456789)"
            )
        api = env.get("SCOPE_TOOL_SLACK_API_URL", "").strip() or "https://slack.com/api"
        inbox = env.get("SCOPE_TOOL_INBOX_PUBLIC_URL", "").strip()
        lifetime_text = env.get("SCOPE_TOOL_LINK_LIFETIME", "").strip()
        return cls(
            webhook_url=_url("SCOPE_TOOL_SLACK_WEBHOOK_URL", webhook) if webhook else None,
            bot_token=token,
            channel=channel,
            api_url=_url("SCOPE_TOOL_SLACK_API_URL", api),
            link_lifetime_seconds=_lifetime(lifetime_text),
            inbox_url=_url("SCOPE_TOOL_INBOX_PUBLIC_URL", inbox) if inbox else None,
        )


def _lifetime(text: str) -> float:
    if not text:
        return DEFAULT_LINK_LIFETIME_SECONDS
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= _MAX_LINK_LIFETIME_SECONDS:
        raise SettingsError(
            f"SCOPE_TOOL_LINK_LIFETIME must be seconds in (0, 604800], got {text!r}"
        )
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class SlackReceiving:
    """What the inbox needs to take Slack button presses: the signing secret and who is who."""

    signing_secret: str = field(repr=False)
    users: Mapping[str, str]

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> SlackReceiving | None:
        """The settings, or ``None`` when ``SCOPE_TOOL_SLACK_SIGNING_SECRET`` is unset.

        Raises:
            SettingsError: the user table is malformed or empty.
        """
        env = os.environ if environ is None else environ
        secret = env.get("SCOPE_TOOL_SLACK_SIGNING_SECRET", "").strip()
        if not secret:
            return None
        users = parse_pairs("SCOPE_TOOL_SLACK_USERS", env.get("SCOPE_TOOL_SLACK_USERS", ""))
        if not users:
            raise SettingsError(
                "SCOPE_TOOL_SLACK_USERS must map Slack user ids to answerers"
                " (U0123ABCD=alice,U0456EFGH=bob): an unmapped presser is refused"
            )
        return cls(signing_secret=secret, users=users)
