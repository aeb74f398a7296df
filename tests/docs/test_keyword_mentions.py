"""Calls written in prose name their keyword-only arguments (#25 item 14).

A sample that does not run is caught by ``test_samples``; a call written inline in a sentence is
not, and ``ModelToolCall(tool_call_id, name, arguments)`` read as a positional call that raises
``TypeError``. Every keyword-only class written as a call in the docs spells its keywords.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from scope_tool.agents import ModelToolCall

DOCS = Path(__file__).resolve().parents[2] / "docs"
KEYWORD_ONLY = (ModelToolCall,)


@pytest.mark.parametrize("cls", KEYWORD_ONLY, ids=lambda cls: cls.__name__)
def test_keyword_only_classes_are_written_with_keywords(cls: type) -> None:
    fields = {field.name for field in dataclasses.fields(cls)}
    mentions = [
        (page.name, match.group(1))
        for page in sorted(DOCS.glob("*.md"))
        for match in re.finditer(rf"\b{cls.__name__}\(([^()]*)\)", page.read_text("utf-8"))
        if match.group(1).strip()
    ]
    assert mentions, f"docs never write {cls.__name__}(...)"
    for page, arguments in mentions:
        for argument in arguments.split(","):
            keyword = argument.split("=", 1)[0].strip()
            assert "=" in argument, (page, arguments)
            assert keyword in fields, (page, arguments)
