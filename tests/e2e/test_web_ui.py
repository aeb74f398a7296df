"""The Temporal Web UI of ``scope-tool dev``, filtered to waiting calls, shows a waiting call.

Headless Debian Chromium (never a downloaded browser) opens the link ``dev`` prints, the workflow
list with the query ``ScopeToolPhase="AWAITING_INPUT"``, and must find the call id on the page.
A screenshot goes to ``test-artifacts/`` for a person to look at.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from urllib.parse import parse_qs, urlparse

from playwright.async_api import async_playwright

from scope_tool.cli._dev import waiting_calls_url

from ._cli import DevProcess, cli

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def _start_waiting_call(dev: DevProcess) -> str:
    assert Path(CHROMIUM).is_file(), f"{CHROMIUM} is missing: run `make browser` (apt chromium)"
    call_id = f"web-ui-{uuid.uuid4().hex[:8]}"
    arguments = json.dumps({"path": "ui.txt", "content": "seen in the Web UI"})
    assert cli(dev, "call", "write_file", arguments, "--id", call_id).code == 0
    deadline = time.monotonic() + 30
    while call_id not in cli(dev, "pending").stdout:
        assert time.monotonic() < deadline, "the call never showed up as waiting"
        time.sleep(0.3)
    return call_id


async def test_web_ui_lists_the_waiting_call(dev_session: DevProcess) -> None:
    call_id = _start_waiting_call(dev_session)
    url = waiting_calls_url(f"http://localhost:{dev_session.ui_port}")
    assert f"http://localhost:{dev_session.ui_port}" in dev_session.text
    assert url.split("//", 1)[1] in dev_session.text, "dev did not print the filtered link"
    ARTIFACTS.mkdir(exist_ok=True)
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=list(CHROMIUM_FLAGS)
        )
        try:
            page = await browser.new_page(viewport={"width": 1400, "height": 900})
            await page.goto(url, wait_until="domcontentloaded", timeout=60_000)
            await page.get_by_text(call_id).first.wait_for(timeout=60_000)
            await page.screenshot(path=str(ARTIFACTS / "web-ui-waiting-calls.png"), full_page=True)
            body = await page.inner_text("body")
        finally:
            await browser.close()
    assert call_id in body
    assert parse_qs(urlparse(url).query)["query"] == ['ScopeToolPhase="AWAITING_INPUT"']
