"""A waiting call's own page in the Temporal Web UI reads as prose, not as escaped payloads.

``scope-tool dev`` runs the Web UI; a ``write_file`` call with a two-line content waits for
approval. Headless Debian Chromium opens the call's page (the link the inbox shows) and must
find, in the "Summary & Details" part, the tool, the arguments member by member with the
content's line break intact, and the pending question with the command that answers it. A
screenshot goes to ``test-artifacts/web-ui-call.png``.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from pathlib import Path

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page, async_playwright

from ._cli import DevProcess, cli
from .test_web_ui import ARTIFACTS, CHROMIUM, CHROMIUM_FLAGS

CONTENT = 'first line of "the note"\nsecond line'


def _start_waiting_call(dev: DevProcess) -> str:
    assert Path(CHROMIUM).is_file(), f"{CHROMIUM} is missing: run `make browser` (apt chromium)"
    call_id = f"web-ui-call-{uuid.uuid4().hex[:8]}"
    arguments = json.dumps({"path": "notes/today.txt", "content": CONTENT})
    assert cli(dev, "call", "write_file", arguments, "--id", call_id).code == 0
    deadline = time.monotonic() + 30
    while call_id not in cli(dev, "pending").stdout:
        assert time.monotonic() < deadline, "the call never showed up as waiting"
        time.sleep(0.3)
    return call_id


async def test_the_web_ui_shows_the_question_and_arguments_readably(
    dev_session: DevProcess,
) -> None:
    call_id = _start_waiting_call(dev_session)
    url = f"http://localhost:{dev_session.ui_port}/namespaces/default/workflows/{call_id}"
    ARTIFACTS.mkdir(exist_ok=True)
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=list(CHROMIUM_FLAGS)
        )
        try:
            page = await browser.new_page(viewport={"width": 1400, "height": 1300})
            await page.goto(url, wait_until="domcontentloaded", timeout=60_000)
            # The link without a run id opens the latest run; the metadata has its own tab.
            await page.get_by_text("User Metadata").first.click(timeout=60_000)
            texts = await _metadata_texts(page, "Write this exact content to notes/today.txt?")
            await page.screenshot(path=str(ARTIFACTS / "web-ui-call.png"), full_page=True)
        finally:
            await browser.close()
    summary, details, current = (re.sub(r"\n{2,}", "\n", text).strip() for text in texts)
    assert "scope-tool call of write_file" in summary
    # The arguments member by member: the content as text, its quotes and line break intact.
    assert "path\nnotes/today.txt" in details
    assert CONTENT in details
    assert '\\"' not in details
    # The pending question in words, its details readable, and the command that answers it.
    assert "write_file waits for an answer" in current
    assert CONTENT in current
    assert f"scope-tool answer {call_id} 'true'" in current


async def _metadata_texts(page: Page, question: str) -> tuple[str, str, str]:
    """The Summary, Details and Current Details texts (the UI renders each in its own frame)."""
    deadline = time.monotonic() + 60
    while True:
        texts: list[str] = []
        for frame in page.frames[1:]:
            try:
                texts.append(await frame.inner_text("body", timeout=2_000))
            except PlaywrightError:
                continue  # a frame still loading, or gone
        summary = next((text for text in texts if "scope-tool call of" in text), None)
        details = next((text for text in texts if "Arguments" in text), None)
        current = next((text for text in texts if question in text), None)
        if summary is not None and details is not None and current is not None:
            return summary, details, current
        assert time.monotonic() < deadline, f"no metadata frames with the question: {texts}"
        await page.wait_for_timeout(500)
