"""The shape check of a text field: a ``str``, not empty, not too long, encodable as UTF-8.

Output blocks and principals hold text the model or a policy reads, so each refuses the same
faults in the same order and words, each with its own error type.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["checked_text", "control_character", "escaped_controls"]

_CONTROLS = re.compile(
    # C0 and C1 controls, DEL, the line and paragraph separators and the bidi overrides: what a
    # terminal acts on (ESC, CR) or what reorders or breaks a line when shown.
    "[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)
_LAYOUT = frozenset("\n\t")


def control_character(text: str) -> str | None:
    """The first control character in ``text`` (see ``_CONTROLS``), or ``None``."""
    found = _CONTROLS.search(text)
    return found.group() if found else None


def escaped_controls(text: str, *, keep_layout: bool = False) -> str:
    """``text`` with each control character written as an escape (``\\x1b``, ``\\n``).

    Args:
        keep_layout: Leave newlines and tabs as they are (a block of text, not one field).
    """

    def escape(found: re.Match[str]) -> str:
        char = found.group()
        if keep_layout and char in _LAYOUT:
            return char
        return repr(char)[1:-1] if char.isascii() else f"\\u{ord(char):04x}"

    return _CONTROLS.sub(escape, text)


def checked_text(
    value: object,
    what: str,
    *,
    error: Callable[[str], Exception],
    blank_is_empty: bool = False,
    max_chars: int | None = None,
    one_line: bool = False,
) -> str:
    """``value`` when it is usable text, else ``error`` saying what is wrong with ``what``.

    Args:
        value: The value to check.
        what: Names the field in the message (``"text block: text"``).
        error: Builds the exception from the message (the caller's error type).
        blank_is_empty: Refuse white space only too ("must not be blank"), not just ``""``.
        max_chars: The most characters allowed, if there is a limit.
        one_line: Refuse control characters (a name shown on one line of a terminal or log,
            where a newline forges a line and ESC rewrites one).
    """
    if not isinstance(value, str):
        raise error(f"{what} must be a str, not {type(value).__name__}")
    if blank_is_empty and not value.strip():
        raise error(f"{what} must not be blank")
    if not value:
        raise error(f"{what} must not be empty")
    if max_chars is not None and len(value) > max_chars:
        raise error(f"{what} is longer than {max_chars} characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise error(f"{what} is not valid UTF-8 text") from None
    if one_line and (char := control_character(value)) is not None:
        raise error(f"{what} contains the control character {char!r}: {value[:80]!r}")
    return value
