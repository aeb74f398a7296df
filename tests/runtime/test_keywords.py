"""Keywords typed as a TypedDict (``**options: Unpack[...]``) still refuse a misspelling at run time."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from scope_tool import Request
from scope_tool.client import ToolCallHandle, ToolCalls
from scope_tool.client._keywords import refuse_unknown_keywords


def test_known_keywords_pass() -> None:
    refuse_unknown_keywords({"a": 1}, {"a", "b"}, "things")
    refuse_unknown_keywords({}, {"a"}, "things")


def test_the_first_unknown_keyword_is_named_with_the_known_ones() -> None:
    with pytest.raises(TypeError) as caught:
        refuse_unknown_keywords({"zz": 1, "colour": 2, "a": 3}, {"a", "b"}, "things")
    assert str(caught.value) == "unexpected keyword argument 'colour' (things: a, b)"


async def test_signal_answer_refuses_a_misspelled_keyword_before_sending() -> None:
    handle = ToolCallHandle(SimpleNamespace(id="call-1"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="'answerd_by' \\(answer keywords: answered_by, "):
        await handle.signal_answer(True, answerd_by="alice")  # type: ignore[call-arg]


async def test_start_refuses_a_misspelled_call_option(
    temporal_client: Any, task_queue: str
) -> None:
    calls = ToolCalls(temporal_client, task_queue=task_queue)
    with pytest.raises(TypeError, match="'notify_ulr' \\(call options: allowed_answerers, "):
        await calls.start(  # type: ignore[call-arg]
            Request(name="echo", arguments="{}"), call_id="kw-1", notify_ulr="http://x"
        )
