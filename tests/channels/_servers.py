"""Real servers the channel tests talk to: an SMTP server (aiosmtpd on loopback) and a Slack
stand-in (an HTTP server on loopback taking incoming-webhook posts).

Both record what they received; tests wait on those records (never a fixed sleep).
"""

from __future__ import annotations

import email
import email.policy
import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.message import EmailMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from aiosmtpd.controller import Controller


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Mailbox:
    """What the SMTP server accepted, in order; ``hold_quit`` makes it stall each QUIT."""

    messages: list[EmailMessage] = field(default_factory=list)
    recipients: list[list[str]] = field(default_factory=list)
    hold_quit: threading.Event | None = None
    quit_reached: threading.Event = field(default_factory=threading.Event)
    port: int = 0

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        parsed = email.message_from_bytes(envelope.content, policy=email.policy.default)
        assert isinstance(parsed, EmailMessage)
        self.messages.append(parsed)
        self.recipients.append(list(envelope.rcpt_tos))
        return "250 OK"

    async def handle_QUIT(self, server: Any, session: Any, envelope: Any) -> str:
        self.quit_reached.set()
        if self.hold_quit is not None:
            import asyncio

            held = self.hold_quit
            await asyncio.get_running_loop().run_in_executor(None, held.wait, 60)
        return "221 Bye"

    def to(self, address: str) -> list[EmailMessage]:
        return [
            m for m, rcpt in zip(self.messages, self.recipients, strict=True) if address in rcpt
        ]


@contextmanager
def smtp_server() -> Iterator[Mailbox]:
    """aiosmtpd listening on 127.0.0.1 (a free port), recording every message."""
    mailbox = Mailbox(port=free_port())
    controller = Controller(mailbox, hostname="127.0.0.1", port=mailbox.port)
    controller.start()
    try:
        yield mailbox
    finally:
        if mailbox.hold_quit is not None:
            mailbox.hold_quit.set()
        controller.stop()


@dataclass
class SlackHook:
    """Posts the stand-in received, as parsed JSON."""

    posts: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    url: str = ""
    api_url: str = ""
    api_reply: dict[str, Any] = field(default_factory=lambda: {"ok": True, "ts": "1.2"})


@contextmanager
def slack_webhook() -> Iterator[SlackHook]:
    """An HTTP server on loopback that answers ``ok`` to every POST, like an incoming webhook."""
    hook = SlackHook()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            hook.posts.append(json.loads(self.rfile.read(length)))
            hook.headers.append(dict(self.headers.items()))
            api = self.path.endswith("/chat.postMessage")  # the Web API answers JSON
            self.send_response(200)
            self.send_header("Content-Type", "application/json" if api else "text/plain")
            self.end_headers()
            self.wfile.write(json.dumps(hook.api_reply).encode() if api else b"ok")

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    hook.url = f"http://127.0.0.1:{server.server_address[1]}/services/T000/B000/XXXX"
    hook.api_url = f"http://127.0.0.1:{server.server_address[1]}/api"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield hook
    finally:
        server.shutdown()
        server.server_close()
