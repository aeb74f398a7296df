"""Where a webhook may be POSTed: one rule for every entry point (#25 item 12)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from scope_tool import Request
from scope_tool.client import ToolCalls
from scope_tool.config.webhook import check_destination, parse_allowed


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://[::ffff:169.254.169.254]/",
        "http://[::ffff:a9fe:a9fe]/",
        "http://[fe80::1]/hook",
        "http://[fd00:ec2::254]/",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://100.100.100.200/",
    ],
)
def test_link_local_and_metadata_destinations_are_refused_by_default(url: str) -> None:
    with pytest.raises(ValueError, match="link-local or cloud metadata"):
        check_destination(url, ())


def test_an_allow_list_entry_naming_such_a_host_allows_it() -> None:
    check_destination("http://169.254.10.1/hook", parse_allowed("http://169.254.10.1/"))


@pytest.mark.parametrize(
    "url",
    [
        "https://hooks.example.com/hooks/../admin",
        "https://hooks.example.com/hooks/%2e%2e/admin",
        "https://hooks.example.com/hooks/.%2E/admin",
        "https://hooks.example.com/hooks/./../admin",
    ],
)
def test_dot_segments_are_resolved_before_the_prefix_is_matched(url: str) -> None:
    with pytest.raises(ValueError, match="not allowed"):
        check_destination(url, parse_allowed("https://hooks.example.com/hooks/"))


def test_a_path_that_stays_under_the_prefix_is_allowed() -> None:
    allowed = parse_allowed("https://hooks.example.com/hooks/")
    check_destination("https://hooks.example.com/hooks/a/../b", allowed)
    check_destination("https://hooks.example.com/hooks/b", allowed)


async def test_the_facade_applies_the_allow_list_setting_as_the_cli_does(
    temporal_address: str, temporal_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCOPE_TOOL_NOTIFY_ALLOWED", "https://hooks.example.com/hooks/")
    request = Request(name="anything", arguments=json.dumps({}))
    for calls in (
        await ToolCalls.connect(temporal_address, task_queue=f"q-{uuid.uuid4()}"),
        ToolCalls(temporal_client, task_queue=f"q-{uuid.uuid4()}"),
    ):
        with pytest.raises(ValueError, match="not allowed"):
            await calls.start(
                request, call_id=f"c-{uuid.uuid4()}", notify_url="https://evil.example/x"
            )
