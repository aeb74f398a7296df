"""How a call looks to a person and to the JSON API: prompts, times, rounds, fingerprints.

The workflow's :class:`~scope_tool.client.CallStatus` keeps raw JSON as bytes and times as datetimes;
pages want readable text ("waiting 5 min", the prompt as prose when it is a string) and the API
wants JSON values. Both are built here, from the same snapshot, so the page and the API never
disagree. A *fingerprint* summarises what a page shows; the page's script compares it with the
API's to know when to refresh.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from scope_tool.client import CallStatus, PendingInput, read_prompt

__all__ = [
    "PromptView",
    "call_fingerprint",
    "call_json",
    "call_path",
    "pending_fingerprint",
    "pending_json",
    "prompt_view",
    "relative_time",
]


def call_path(call_id: str) -> str:
    """The page of one call (the id is quoted whole, so ids with ``/`` work)."""
    return "/calls/" + quote(call_id, safe="")


@dataclass(frozen=True, slots=True, kw_only=True)
class PromptView:
    """A prompt for display: its question as prose, the rest as pretty JSON.

    Attributes:
        text: The question: the prompt itself when it is a string, else an object's
            ``question``/``message``/``text``/``title`` member; empty when there is none.
        details: Everything else, as indented JSON (empty when the text says it all).
    """

    text: str
    details: str

    def summary(self, limit: int = 160) -> str:
        """One line for the inbox list."""
        line = " ".join((self.text or self.details).split())
        return line if len(line) <= limit else line[: limit - 1] + "…"


def prompt_view(prompt: bytes) -> PromptView:
    """Readable form of a prompt (``scope_tool.client.read_prompt``), details as indented JSON."""
    read = read_prompt(prompt)
    return PromptView(text=read.question, details=read.details_json(indent=2))


def relative_time(moment: datetime, *, now: datetime | None = None) -> str:
    """``"3 min ago"`` or ``"in 2 h"``: what a person scanning a list wants to know."""
    current = now or datetime.now(UTC)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    seconds = (moment - current).total_seconds()
    size = abs(seconds)
    if size < 45:
        amount = f"{int(size)} s"
    elif size < 45 * 60:
        amount = f"{round(size / 60)} min"
    elif size < 36 * 3600:
        amount = f"{round(size / 3600)} h"
    else:
        amount = f"{round(size / 86400)} d"
    return f"in {amount}" if seconds > 0 else f"{amount} ago"


def pending_json(status: CallStatus, pending: PendingInput) -> dict[str, Any]:
    """One waiting call as the API lists it: the pending shape plus where the call is."""
    return {
        "call_id": status.call_id,
        "tool": status.tool,
        "round": status.round,
        **pending.to_json_dict(),
        "url": call_path(status.call_id),
    }


def call_json(status: CallStatus) -> dict[str, Any]:
    """One call as the API shows it (:meth:`CallStatus.to_json_dict`), with its fingerprint."""
    pending = status.pending
    return {
        **status.to_json_dict(),
        "pending": pending_json(status, pending) if pending is not None else None,
        "fingerprint": call_fingerprint(status),
    }


def _digest(parts: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()[:16]


def call_fingerprint(status: CallStatus) -> str:
    """Changes whenever what the call page shows changes (phase, round, question, answers)."""
    pending = status.pending.request_id if status.pending is not None else ""
    return _digest(
        [
            status.phase.value,
            str(status.round),
            pending,
            str(len(status.answers)),
            str(len(status.refused)),
            "waiting for a worker" if status.waiting_for_worker is not None else "",
        ]
    )


def pending_fingerprint(request_ids: Sequence[str]) -> str:
    """Changes whenever a call starts or stops waiting."""
    return _digest(sorted(request_ids))
