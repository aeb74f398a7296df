"""``make bench`` entry: what sending one answer email costs, engine vs a bare ``smtplib`` send.

Engine: the ``scope_tool.send_email`` path for one recipient (``Announcer._send_one``): render
the question, mint a signed link per decision, lock and check the once-only ledger entry, send
over SMTP, mark the entry sent (fsync). Baseline, same SMTP server, same run: ``smtplib`` sending
an already-built message of the same size, nothing else. Both go to ``aiosmtpd`` on loopback,
alternating, one message at a time, after a warm-up; figures are medians of
``SCOPE_TOOL_BENCH_CHANNEL_RUNS`` messages (default 40). No goal: the figure says what the
once-only guarantee and the rendering add to a send.
"""

from __future__ import annotations

import json
import os
import smtplib
import socket
import statistics
import time
from email.message import EmailMessage
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller
from bench_report import Figure

from scope_tool.config.channels import EmailSettings
from scope_tool.wire import AnnounceInput
from scope_tool.wire.links import link_key
from scope_tool.workers._channels import Announcer, compose


class _Count:
    def __init__(self) -> None:
        self.received = 0

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.received += 1
        return "250 OK"


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _question(index: int) -> AnnounceInput:
    return AnnounceInput(
        call_id=f"bench-{index}",
        tool="deploy",
        request_id=f"bench-{index}/r1",
        arguments=json.dumps({"service": "api", "version": "1.4.2", "index": index}),
        prompt=json.dumps({"question": "Deploy api 1.4.2 to production?"}).encode(),
        response_schema=b'{"type": "boolean"}',
        allowed_answerers=("alice",),
        channels=("email",),
    )


def test_one_answer_email_engine_vs_bare_smtplib(bench_report: Any, tmp_path: Path) -> None:
    runs = int(os.environ.get("SCOPE_TOOL_BENCH_CHANNEL_RUNS", "40"))
    counter = _Count()
    port = _port()
    controller = Controller(counter, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        settings = EmailSettings(
            host="127.0.0.1",
            port=port,
            starttls=False,
            sender="bench@example.test",
            directory={"alice": "alice@example.test"},
            inbox_url="http://inbox.example.test",
        )
        secret = b"bench-identity-secret-0123456789"
        announcer = Announcer(email=settings, identity_secret=secret, ledger=tmp_path / "ledger")
        key = link_key(secret)
        engine: list[float] = []
        bare: list[float] = []
        for index in range(runs + 1):
            question = _question(index)
            begun = time.perf_counter()
            assert announcer._send_one(settings, key, question, "alice", "alice@example.test")
            engine_seconds = time.perf_counter() - begun

            rendered = compose(
                question,
                recipient="alice",
                inbox_url=settings.inbox_url,
                key=key,
                lifetime_seconds=3600,
            )
            mail = EmailMessage()
            mail["Subject"], mail["From"], mail["To"] = (
                rendered.subject,
                settings.sender,
                "a@x.test",
            )
            mail.set_content(rendered.text)
            mail.add_alternative(rendered.html, subtype="html")
            begun = time.perf_counter()
            with smtplib.SMTP("127.0.0.1", port, timeout=20) as smtp:
                smtp.send_message(mail)
            bare_seconds = time.perf_counter() - begun
            if index:  # the first of each is the warm-up
                engine.append(engine_seconds)
                bare.append(bare_seconds)
        # The ledger holds: sending the same question again sends nothing.
        assert not announcer._send_one(settings, key, _question(1), "alice", "alice@example.test")
        assert counter.received == 2 * (runs + 1)
    finally:
        controller.stop()
    figure = bench_report.record(
        Figure(
            benchmark="answer email (one recipient)",
            metric="send median",
            unit="ms",
            engine=statistics.median(engine) * 1000,
            baseline=statistics.median(bare) * 1000,
            note="render + signed links + once-only ledger (fsync) vs bare smtplib, loopback",
        )
    )
    print(
        f"\nanswer email: engine {figure.engine:.2f} ms, bare smtplib {figure.baseline:.2f} ms,"
        f" ratio {figure.ratio}"
    )
