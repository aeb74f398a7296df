"""The plain functions both sides of every benchmark run.

The engine wraps them as scope-tool tools (``bench_tools``) and the bare-Temporal baseline calls
them from ordinary activities (``bare_workflows``). Keeping the work identical and trivial means
the figures measure what each side adds around a tool call, not the tool itself.

It imports only the standard library, so that the workflow sandbox can load it.
"""

from __future__ import annotations

import json
from decimal import Decimal

__all__ = [
    "ANSWER_LIMIT",
    "DECIMALS_SCHEMA",
    "approval_outcome",
    "approval_prompt",
    "decimals_answer",
    "echo_text",
    "hand_checked_decimals",
]


def echo_text(text: str) -> str:
    """Return ``text`` unchanged: a tool that completes at once."""
    return text


def approval_outcome(text: str, *, approved: bool) -> str:
    """The text a person's decision on ``text`` produces; unique per call, so results are checkable."""
    return f"{'approved' if approved else 'declined'}: {text}"


def approval_prompt(text: str) -> str:
    """The question a person is asked about ``text`` (the first round of an approval)."""
    return f"Approve {text!r}?"


# --- the costly answer (#17 item 1): ~1 MiB of decimals against an anyOf/multipleOf schema ------

DECIMALS_SCHEMA = {
    "type": "array",
    "items": {
        "anyOf": [
            {"type": "integer"},
            {"type": "number", "multipleOf": 0.01},
            {"type": "string"},
        ]
    },
}
"""The issue's costly schema: each item an integer, a multiple of 0.01 or a string."""

ANSWER_LIMIT = 1 << 20
"""``scope_tool.MAX_INPUT_BYTES``, repeated so this module needs only the standard library."""


def decimals_answer(*, refused: bool) -> bytes:
    """``[1.23,1.23,...]`` just under 1 MiB; ``refused``: its last item is 1.234 instead."""
    count = (ANSWER_LIMIT - 2) // 5 - 1
    items = [b"1.23"] * count + [b"1.234" if refused else b"1.23"]
    return b"[" + b",".join(items) + b"]"


def hand_checked_decimals(text: str) -> str | None:
    """The baseline's check, written by hand for this one schema: None, or the problem.

    What a bare Temporal program would do instead of a schema engine: parse with exact numbers
    and test each item (no I-JSON strictness, no generic keywords, no step budget).
    """
    hundredth = Decimal("0.01")
    items = json.loads(text, parse_float=Decimal)
    if not isinstance(items, list):
        return "not an array"
    for index, item in enumerate(items):
        if isinstance(item, int | str) and not isinstance(item, bool):
            continue
        if isinstance(item, Decimal) and item % hundredth == 0:
            continue
        return f"/{index}: {item} is not valid under any of the given schemas"
    return None
