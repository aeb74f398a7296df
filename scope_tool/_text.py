"""The shape check of a text field: a ``str``, not empty, not too long, encodable as UTF-8.

Output blocks and principals hold text the model or a policy reads, so each refuses the same
faults in the same order and words, each with its own error type.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["checked_text"]


def checked_text(
    value: object,
    what: str,
    *,
    error: Callable[[str], Exception],
    blank_is_empty: bool = False,
    max_chars: int | None = None,
) -> str:
    """``value`` when it is usable text, else ``error`` saying what is wrong with ``what``.

    Args:
        value: The value to check.
        what: Names the field in the message (``"text block: text"``).
        error: Builds the exception from the message (the caller's error type).
        blank_is_empty: Refuse white space only too ("must not be blank"), not just ``""``.
        max_chars: The most characters allowed, if there is a limit.
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
    return value
