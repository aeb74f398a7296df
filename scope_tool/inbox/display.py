"""JSON values, times and links as a person reads them on a page.

A call's arguments, a prompt's details and an answer are JSON; shown as one indented JSON text,
a file's content becomes one long string full of ``\\n`` escapes. Here an object is shown member
by member: text members as text (line breaks kept), everything else as indented JSON. Times are
shown to the second in UTC next to their relative form ("in 2 h"), never with microseconds.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from scope_tool.client import json_value

__all__ = [
    "DisplayField",
    "clock_time",
    "display_fields",
    "display_value",
    "duration_text",
    "value_fields",
    "web_ui_call_url",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class DisplayField:
    """One member of a JSON object, ready to show.

    Attributes:
        name: The member's name ("" for a value that is not an object).
        text: The value: the string itself for text, else indented JSON.
        is_text: True when ``text`` is the value's own text (show it as prose, not code).
    """

    name: str
    text: str
    is_text: bool


def display_value(value: Any) -> DisplayField:
    """A JSON value alone: text as text, anything else as indented JSON."""
    if isinstance(value, str):
        return DisplayField(name="", text=value, is_text=True)
    return DisplayField(
        name="", text=json.dumps(value, indent=2, ensure_ascii=False), is_text=False
    )


def display_fields(raw: bytes | str | None) -> tuple[DisplayField, ...]:
    """Raw JSON as fields to show: an object's members one by one, any other value alone."""
    if raw is None:
        return ()
    return value_fields(json_value(raw.encode("utf-8") if isinstance(raw, str) else raw))


def value_fields(value: Any) -> tuple[DisplayField, ...]:
    """A JSON value as fields to show (see :func:`display_fields`); ``None`` shows nothing."""
    if value is None:
        return ()
    if isinstance(value, dict):
        return tuple(
            DisplayField(name=name, text=shown.text, is_text=shown.is_text)
            for name, shown in ((name, display_value(item)) for name, item in value.items())
        )
    return (display_value(value),)


def clock_time(moment: datetime | None) -> str:
    """``2026-12-01 09:15:03 UTC``: to the second, in UTC ("" for no time)."""
    if moment is None:
        return ""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def duration_text(seconds: float) -> str:
    """``2 h``, ``1 h 30 min``, ``45 min``, ``20 s``: a duration as a person reads it."""
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{hours} h"] if hours else []
    if minutes:
        parts.append(f"{minutes} min")
    if secs and not hours:
        parts.append(f"{secs} s")
    return " ".join(parts) or "0 s"


def web_ui_call_url(base: str | None, *, namespace: str, call_id: str) -> str | None:
    """The call's page in the Temporal Web UI (``None`` when no Web UI is configured)."""
    if not base:
        return None
    return (
        f"{base.rstrip('/')}/namespaces/{quote(namespace, safe='')}"
        f"/workflows/{quote(call_id, safe='')}"
    )
