"""The one reader of a question's prompt, so every front end shows the same words first.

A tool's prompt is any JSON value. A person should read the question before the details: a
JSON string is the question itself; an object's ``question``, ``message``, ``text`` or ``title``
member (the first that is a string) is the question and the other members are its details.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

__all__ = ["PROMPT_QUESTION_KEYS", "Prompt", "json_value", "read_prompt"]

PROMPT_QUESTION_KEYS = ("question", "message", "text", "title")
"""Object members read as the question, in this order."""

_NOTHING: Any = object()


def json_value(raw: bytes | None) -> Any:
    """Raw JSON bytes as a value; text that is not JSON stays a string, ``None`` stays ``None``."""
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        # Not JSON, or nested deeper than Python's parser goes (I-JSON allows 10,000 levels):
        # shown as the text it is rather than failing the status or page that shows it.
        return raw.decode("utf-8", "replace")


@dataclass(frozen=True, slots=True, kw_only=True)
class Prompt:
    """A prompt split for reading.

    Attributes:
        question: the question as prose; empty when the prompt has none.
        details: everything else, as a JSON value; ``None`` when the question says it all.
    """

    question: str
    details: Any = None

    def details_json(self, *, indent: int | None = None) -> str:
        """The details as JSON text ("" when there are none)."""
        if self.details is None:
            return ""
        return json.dumps(self.details, indent=indent, ensure_ascii=False)

    def one_line(self) -> str:
        """Question then compact details, as a terminal line shows them."""
        if not self.question:
            return self.details_json()
        rest = self.details_json()
        return f"{self.question} {rest}" if rest else self.question


def read_prompt(prompt: bytes) -> Prompt:
    """Split ``prompt`` into its question and details (see the module docstring)."""
    value = json_value(prompt)
    if isinstance(value, str):
        return Prompt(question=value)
    if isinstance(value, dict):
        for key in PROMPT_QUESTION_KEYS:
            lead = value.get(key, _NOTHING)
            if isinstance(lead, str):
                rest = {name: item for name, item in value.items() if name != key}
                return Prompt(question=lead, details=rest or None)
    return Prompt(question="", details=value)
