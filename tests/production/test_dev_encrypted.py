"""``scope-tool dev`` with encryption on: its database holds no secret, its Web UI shows it.

One real ``dev`` (server, worker, codec server) with ``SCOPE_TOOL_ENCRYPTION_KEYS`` set. A marker
travels in the arguments, prompt, state and answer. The CLI shows it; the dev database files
never contain it; headless Chromium opens the call in the Web UI, which decodes through the
codec server ``dev`` started, and finds it on the page. ``dev --metrics`` serves the worker's
metrics, the finished call counted.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e._cli import DevProcess, cli, free_port, start_dev, wait_until_gone
from e2e.test_web_ui import ARTIFACTS, CHROMIUM, CHROMIUM_FLAGS
from playwright.async_api import TimeoutError as PlaywrightTimeoutError
from playwright.async_api import async_playwright

from production.keys import new_key_entry

TESTS = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def encrypted_dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevProcess]:
    saved = dict(os.environ)
    os.environ["SCOPE_TOOL_ENCRYPTION_KEYS"] = new_key_entry("dev1")
    os.environ["PYTHONPATH"] = os.pathsep.join(
        part for part in (str(TESTS), os.environ.get("PYTHONPATH", "")) if part
    )
    try:
        dev = start_dev(
            tmp_path_factory.mktemp("encrypted-dev"),
            "--tools",
            "production.tools:REGISTRY",
            "--codec-port",
            str(free_port()),
            "--metrics",
            f"127.0.0.1:{free_port()}",
            "--no-inbox",
        )
        try:
            yield dev
        finally:
            server_pid = int(str(dev.lock_facts().get("server_pid", 0)))
            dev.stop(signal.SIGINT)
            assert wait_until_gone(server_pid), "the dev server outlived scope-tool dev"
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _scrape(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        return str(response.read().decode())


def _database_bytes(data_dir: Path) -> bytes:
    files = sorted(data_dir.glob("dev.db*"))
    assert files, f"no database files in {data_dir}"
    return b"".join(each.read_bytes() for each in files)


@pytest.mark.timeout(300)
async def test_secrets_stay_out_of_the_database_and_show_in_cli_and_web_ui(
    encrypted_dev: DevProcess,
) -> None:
    dev = encrypted_dev
    assert "Codec server         http://localhost:" in dev.text
    marker = f"SECRET-{uuid.uuid4().hex}"
    call_id = f"note-{uuid.uuid4().hex[:8]}"
    started = cli(dev, "call", "secret_note", json.dumps({"note": marker}), "--id", call_id)
    assert started.code == 0, started.stderr
    deadline = time.monotonic() + 30
    while call_id not in (pending := cli(dev, "pending")).stdout:
        assert time.monotonic() < deadline, "the call never showed up as waiting"
        await asyncio.sleep(0.3)
    assert marker in pending.stdout
    answered = cli(
        dev,
        "answer",
        call_id,
        json.dumps({"approve": True, "comment": f"{marker}-ok"}),
        "--by",
        "ops",
    )
    assert answered.code == 0, answered.stderr
    result = cli(dev, "result", call_id, "--wait")
    assert result.code == 0, result.stderr
    assert f"filed {marker}: {marker}-ok" in result.stdout
    history = cli(dev, "history", call_id)
    assert f"{marker}-ok" in history.stdout

    assert marker.encode() not in _database_bytes(dev.data_dir)

    [metrics] = [line.split()[-1] for line in dev.text.splitlines() if "Worker metrics" in line]
    scraped = _scrape(metrics)
    assert "scope_tool_calls{" in scraped
    assert any(
        line.startswith("scope_tool_calls{")
        and 'tool="secret_note"' in line
        and 'phase="COMPLETED"' in line
        and line.endswith(" 1")
        for line in scraped.splitlines()
    ), scraped

    url = f"http://localhost:{dev.ui_port}/namespaces/default/workflows/{call_id}"
    ARTIFACTS.mkdir(exist_ok=True)
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=list(CHROMIUM_FLAGS)
        )
        try:
            page = await browser.new_page(viewport={"width": 1400, "height": 1600})
            codec_calls: list[str] = []
            page.on(
                "response",
                lambda response: (
                    codec_calls.append(f"{response.status} {response.url}")
                    if "/decode" in response.url
                    else None
                ),
            )
            body = ""
            for _attempt in range(3):  # a loaded machine can keep the UI busy past one wait
                await page.goto(url, wait_until="domcontentloaded", timeout=60_000)
                try:
                    await page.get_by_text(marker).first.wait_for(timeout=40_000)
                except PlaywrightTimeoutError:
                    continue
                body = await page.content()
                break
            await page.screenshot(path=str(ARTIFACTS / "web-ui-decrypted.png"), full_page=True)
            shown = await page.inner_text("body")
        finally:
            await browser.close()
    assert marker in body, f"codec calls {codec_calls}; the page showed:\n{shown[:3000]}"
