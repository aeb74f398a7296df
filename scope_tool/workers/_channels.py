"""The activities that send a waiting question through a channel: ``scope_tool.send_email``
(one message per allowed answerer) and ``scope_tool.post_slack`` (one message with buttons).

Each message offers one link or button per decision (:func:`scope_tool.wire.links.decisions`),
each carrying a signed answer-link token bound to the call, the request, the decision and the
recipient; a question whose schema is not that simple gets a link to the inbox's form instead.

Once-only delivery. A message is identified by its channel, call id, request id and recipient.
Before sending, the activity locks that message's entry in the ledger (a directory,
``SCOPE_TOOL_CHANNEL_LEDGER``; ``flock``, released by the kernel when a process dies) and sends
only if the entry does not say ``sent``; it writes ``sent`` (and fsyncs) as soon as the server
accepted the message, before anything else. So a retry, whether after a timeout, an error or a
worker killed mid-activity, finds ``sent`` and skips the message, and an attempt still running
elsewhere holds the lock until it knows. Workers that share the ledger directory (one host, or
a shared volume with working ``flock``) share this guarantee. The one window left is a process
killed between the server's acceptance and the write (microseconds): the message is then sent
again with the same ``Message-ID`` (derived from the same identity), which mail systems use to
collapse duplicates.
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import html
import json
import os
import smtplib
import ssl
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formatdate
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote

from temporalio import activity
from temporalio.exceptions import ApplicationError

from scope_tool.config.channels import EmailSettings, SlackSettings
from scope_tool.wire import POST_SLACK_ACTIVITY, SEND_EMAIL_ACTIVITY, AnnounceInput
from scope_tool.wire._approval_prompt import read_approval
from scope_tool.wire._prompt import json_value, read_prompt
from scope_tool.wire.links import Decision, decisions, issue_link, link_key
from scope_tool.workflows._announce import CHANNEL_REFUSED

__all__ = ["Announcer", "Ledger", "Message", "compose"]

_TIMEOUT_SECONDS: Final = 20.0
_SENT: Final = b"sent"


class Ledger:
    """A directory of once-only entries, one file per message (see the module docstring)."""

    def __init__(self, directory: Path) -> None:
        self._directory = directory

    def path(self, *identity: str) -> Path:
        """The entry of the message identified by ``identity``."""
        digest = hashlib.sha256("\0".join(identity).encode("utf-8")).hexdigest()
        return self._directory / digest

    @contextmanager
    def entry(self, *identity: str) -> Iterator[tuple[bool, Callable[[], None]]]:
        """Hold the message's entry locked: yields (already sent, mark it sent)."""
        self._directory.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(self.path(*identity), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            sent = os.pread(descriptor, len(_SENT), 0) == _SENT

            def mark() -> None:
                os.pwrite(descriptor, _SENT, 0)
                os.fsync(descriptor)

            yield sent, mark
        finally:
            os.close(descriptor)  # releases the lock


@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    """A question rendered for people: subject, plain text, HTML and its links."""

    subject: str
    text: str
    html: str
    links: tuple[tuple[str, str], ...]
    """``(label, URL)`` per decision, or one ``("Answer in the inbox", URL)``."""


def _question_text(question: AnnounceInput) -> tuple[str, str]:
    """The question's sentence and its details as indented JSON text ("" when none)."""
    approval = read_approval(question.prompt, question.response_schema)
    if approval is not None:
        return approval.question, approval.description
    prompt = read_prompt(question.prompt)
    details = (
        json.dumps(prompt.details, indent=2, ensure_ascii=False)
        if prompt.details is not None
        else ""
    )
    return prompt.question or "Input is needed", details


def _arguments_text(arguments: str | bytes) -> str:
    return arguments.decode("utf-8", "replace") if isinstance(arguments, bytes) else arguments


def inbox_link(inbox_url: str, call_id: str) -> str:
    """The call's page in the inbox."""
    return f"{inbox_url}/calls/{quote(call_id, safe='')}"


def compose(
    question: AnnounceInput,
    *,
    recipient: str,
    inbox_url: str,
    key: bytes,
    lifetime_seconds: float,
    now: float | None = None,
) -> Message:
    """The email to ``recipient``: the prompt, the exact arguments, one link per decision."""
    sentence, details = _question_text(question)
    choices: tuple[Decision, ...] = decisions(question.prompt, question.response_schema)
    form = inbox_link(inbox_url, question.call_id)
    links = tuple(
        (
            choice.label,
            f"{inbox_url}/channels/email/"
            + issue_link(
                key=key,
                call_id=question.call_id,
                request_id=question.request_id,
                decision=choice.answer,
                recipient=recipient,
                channel="email",
                lifetime_seconds=lifetime_seconds,
                now=now,
            ),
        )
        for choice in choices
    ) or (("Answer in the inbox", form),)
    arguments = _arguments_text(question.arguments)
    minutes = max(1, int(lifetime_seconds // 60))
    lines = [
        f"The tool {question.tool} waits for your answer (call {question.call_id},"
        f" request {question.request_id}).",
        "",
        sentence,
    ]
    if details:
        lines += ["", details]
    lines += ["", "Arguments, exactly as the call runs with them:", arguments, ""]
    for label, url in links:
        lines.append(f"{label}: {url}")
    lines += [
        "",
        f"Each link opens a page that asks you to confirm; it is yours alone, works once and"
        f" expires in {minutes} min. The call's page in the inbox: {form}",
    ]
    escape = html.escape
    buttons = "".join(
        f'<p><a href="{escape(url)}" style="padding:6px 14px;border:1px solid #333;'
        f'text-decoration:none">{escape(label)}</a></p>'
        for label, url in links
    )
    body = (
        f"<p>The tool <b>{escape(question.tool)}</b> waits for your answer"
        f" (call <code>{escape(question.call_id)}</code>,"
        f" request <code>{escape(question.request_id)}</code>).</p>"
        f"<p><b>{escape(sentence)}</b></p>"
        + (f"<pre>{escape(details)}</pre>" if details else "")
        + "<p>Arguments, exactly as the call runs with them:</p>"
        f"<pre>{escape(arguments)}</pre>{buttons}"
        f"<p>Each link opens a page that asks you to confirm; it is yours alone, works once and"
        f' expires in {minutes} min. <a href="{escape(form)}">The call in the inbox</a>.</p>'
    )
    short = sentence if len(sentence) <= 80 else sentence[:77] + "..."
    return Message(
        subject=f"[scope-tool] {question.tool}: {short}",
        text="\n".join(lines),
        html=body,
        links=links,
    )


def message_id(question: AnnounceInput, recipient: str, sender: str) -> str:
    """The same ``Message-ID`` for the same question and recipient, on every attempt."""
    digest = hashlib.sha256(
        "\0".join(("email", *_identity(question), recipient)).encode("utf-8")
    ).hexdigest()[:40]
    domain = sender.rpartition("@")[2].strip(">") or "scope-tool.invalid"
    return f"<{digest}@{domain}>"


def _identity(question: AnnounceInput) -> tuple[str, ...]:
    """What makes a message once-only: the call, the request and (for a reminder) its number."""
    occasion = (str(question.occasion),) if question.occasion else ()
    return (question.call_id, question.request_id, *occasion)


class Announcer:
    """The channel activities with a worker's settings (``None``: that channel is off here).

    Args:
        email: how to send mail.
        slack: how to post to Slack.
        identity_secret: the secret answer links are signed with (derived key).
        ledger: the directory of once-only entries (``SCOPE_TOOL_CHANNEL_LEDGER``).
    """

    def __init__(
        self,
        *,
        email: EmailSettings | None = None,
        slack: SlackSettings | None = None,
        identity_secret: bytes | None = None,
        ledger: Path | None = None,
    ) -> None:
        self._email = email
        self._slack = slack
        self._key = link_key(identity_secret) if identity_secret is not None else None
        self._ledger = Ledger(ledger or Path(".scope-tool/channel-sent"))

    def _refuse(self, message: str) -> ApplicationError:
        return ApplicationError(message, type=CHANNEL_REFUSED, non_retryable=True)

    def _link_key(self, channel: str) -> bytes:
        if self._key is None:
            raise self._refuse(
                f"{channel} answers need SCOPE_TOOL_IDENTITY_SECRET on the worker (its links are"
                " signed with it, and the inbox checks them with the same secret)"
            )
        return self._key

    @activity.defn(name=SEND_EMAIL_ACTIVITY)
    async def send_email(self, question: AnnounceInput) -> list[str]:
        """Send the question to each allowed answerer with an address; returns who got it now.

        A call without allowed answerers goes to everyone in ``SCOPE_TOOL_EMAIL_TO``.
        """
        settings = self._email
        if settings is None:
            raise self._refuse(
                "call asks for email but this worker has no SMTP settings (SCOPE_TOOL_SMTP_HOST)"
            )
        key = self._link_key("email")
        recipients = question.allowed_answerers or tuple(settings.directory)
        addressed = [(name, settings.address_of(name)) for name in recipients]
        missing = [name for name, address in addressed if address is None]
        if missing and len(missing) == len(addressed):
            raise self._refuse(
                f"no email address for {', '.join(missing) or 'anyone'}: add NAME=ADDRESS to"
                " SCOPE_TOOL_EMAIL_TO"
            )
        if missing:
            activity.logger.warning("no email address for %s (SCOPE_TOOL_EMAIL_TO)", missing)
        sent: list[str] = []
        async with _Heartbeating():
            for name, address in addressed:
                if address is None:
                    continue
                if await asyncio.to_thread(self._send_one, settings, key, question, name, address):
                    sent.append(name)
        return sent

    def _send_one(
        self, settings: EmailSettings, key: bytes, question: AnnounceInput, name: str, to: str
    ) -> bool:
        with self._ledger.entry("email", *_identity(question), name) as (
            done,
            mark,
        ):
            if done:
                return False
            message = compose(
                question,
                recipient=name,
                inbox_url=settings.inbox_url,
                key=key,
                lifetime_seconds=settings.link_lifetime_seconds,
            )
            mail = EmailMessage()
            mail["Subject"] = message.subject
            mail["From"] = settings.sender
            mail["To"] = to
            mail["Date"] = formatdate(localtime=False)
            mail["Message-ID"] = message_id(question, name, settings.sender)
            mail["Auto-Submitted"] = "auto-generated"
            mail.set_content(message.text)
            mail.add_alternative(message.html, subtype="html")
            with smtplib.SMTP(settings.host, settings.port, timeout=_TIMEOUT_SECONDS) as smtp:
                smtp.ehlo()
                if settings.starttls:
                    smtp.starttls(context=ssl.create_default_context())
                    smtp.ehlo()
                if settings.username is not None and settings.password is not None:
                    smtp.login(settings.username, settings.password)
                smtp.send_message(mail)
                mark()  # the server accepted it: from now on it is sent
            return True

    @activity.defn(name=POST_SLACK_ACTIVITY)
    async def post_slack(self, question: AnnounceInput) -> bool:
        """Post the question with a button per decision; False when it was posted before."""
        settings = self._slack
        if settings is None:
            raise self._refuse(
                "call asks for slack but this worker has no Slack settings"
                " (SCOPE_TOOL_SLACK_WEBHOOK_URL or SCOPE_TOOL_SLACK_BOT_TOKEN)"
            )
        key = self._link_key("slack")
        async with _Heartbeating():
            return await asyncio.to_thread(self._post_one, settings, key, question)

    def _post_one(self, settings: SlackSettings, key: bytes, question: AnnounceInput) -> bool:
        with self._ledger.entry("slack", *_identity(question)) as (done, mark):
            if done:
                return False
            payload: dict[str, Any] = slack_message(
                question,
                key=key,
                lifetime_seconds=settings.link_lifetime_seconds,
                inbox_url=settings.inbox_url,
            )
            if settings.webhook_url is not None:
                url, headers = settings.webhook_url, {}
            else:
                url = f"{settings.api_url}/chat.postMessage"
                headers = {"Authorization": f"Bearer {settings.bot_token}"}
                payload["channel"] = settings.channel
            reply = _post_json(url, payload, headers)
            if settings.webhook_url is None:
                found = json_value(reply)
                if not isinstance(found, dict) or found.get("ok") is not True:
                    error = (
                        found.get("error")
                        if isinstance(found, dict)
                        else reply[:200].decode("utf-8", "replace")
                    )
                    raise RuntimeError(f"chat.postMessage refused the message: {error}")
            mark()
            return True


def slack_message(
    question: AnnounceInput,
    *,
    key: bytes,
    lifetime_seconds: float,
    inbox_url: str | None,
    now: float | None = None,
) -> dict[str, Any]:
    """The Block Kit message: the question, the exact arguments, a button per decision."""
    sentence, details = _question_text(question)
    arguments = _arguments_text(question.arguments)
    text = f"*{sentence}*\n`{question.tool}` call `{question.call_id}` ({question.request_id})"
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": text[:2900]}},
    ]
    if details:
        blocks.append(
            {"type": "section", "text": {"type": "mrkdwn", "text": f"```{details[:2800]}```"}}
        )
    blocks.append(
        {
            "type": "section",
            "text": {"type": "mrkdwn", "text": f"Arguments:\n```{arguments[:2800]}```"},
        }
    )
    elements: list[dict[str, Any]] = []
    for index, choice in enumerate(decisions(question.prompt, question.response_schema)):
        button: dict[str, Any] = {
            "type": "button",
            "action_id": f"scope_tool_decide_{index}",
            "text": {"type": "plain_text", "text": choice.label[:75]},
            "value": issue_link(
                key=key,
                call_id=question.call_id,
                request_id=question.request_id,
                decision=choice.answer,
                recipient="",
                channel="slack",
                lifetime_seconds=lifetime_seconds,
                now=now,
            ),
        }
        if choice.answer in ("true", '{"decision":"approve"}'):
            button["style"] = "primary"
        elif choice.answer in ("false", '{"decision":"deny"}'):
            button["style"] = "danger"
        elements.append(button)
    if inbox_url is not None:
        elements.append(
            {
                "type": "button",
                "action_id": "scope_tool_open_inbox",
                "text": {"type": "plain_text", "text": "Open in the inbox"},
                "url": inbox_link(inbox_url, question.call_id),
            }
        )
    if elements:
        blocks.append({"type": "actions", "block_id": "scope_tool_decisions", "elements": elements})
    return {"text": f"{question.tool} waits for an answer: {sentence}"[:3000], "blocks": blocks}


def _post_json(url: str, payload: dict[str, Any], headers: dict[str, str]) -> bytes:
    request = urllib.request.Request(
        url,
        data=json.dumps(payload).encode("utf-8"),
        method="POST",
        headers={"Content-Type": "application/json; charset=utf-8", **headers},
    )
    with urllib.request.urlopen(request, timeout=_TIMEOUT_SECONDS) as response:
        body: bytes = response.read()
        status = response.status
    if not 200 <= status < 300:
        raise RuntimeError(f"Slack answered HTTP {status}")
    return body


class _Heartbeating:
    """Heartbeat every second while a send runs (a lost worker is noticed within seconds)."""

    def __init__(self) -> None:
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> None:
        async def beat() -> None:
            while True:
                activity.heartbeat()
                await asyncio.sleep(1.0)

        self._task = asyncio.ensure_future(beat())

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with suppress(asyncio.CancelledError):
                await self._task
