"""An answer's text: the JSON sent for a response value, refused as the workflow would refuse it.

The facade encodes every answer here before anything is sent, so a value that is not JSON
(``NaN``, a set, a bare word) is refused at once with the ``invalid_json`` reason and detail the
workflow gives, and the same bytes are what the workflow checks and the tool receives.
"""

from __future__ import annotations

import json
from typing import Any, Final

from scope_tool import MAX_INPUT_BYTES, check_ijson
from scope_tool.wire.errors import AnswerRejectedError, RefusalDetail, RefusalReason

__all__ = ["MAX_NAME_BYTES", "AnswerText", "encode_answer", "is_short_text"]

MAX_NAME_BYTES: Final = 4096
"""Longest request id or ``answered_by`` sent (they travel with every answer)."""


class AnswerText(bytes):
    """An answer's JSON text as :func:`encode_answer` checked it.

    :meth:`ToolCallHandle.answer` sends it as it is instead of checking it again, so a front
    end that refuses bad text before connecting (the CLI) parses the answer once on its side.
    The workflow decides every answer whatever the client checked.
    """

    __slots__ = ()


def is_short_text(text: str, *, limit: int = MAX_NAME_BYTES) -> bool:
    """Whether ``text`` is UTF-8 (no lone surrogates) of at most ``limit`` bytes."""
    try:
        return len(text.encode("utf-8")) <= limit
    except UnicodeEncodeError:
        return False


def encode_answer(response: Any, *, call_id: str) -> AnswerText:
    """An answer as the JSON text sent, or the ``invalid_json`` refusal the workflow would give.

    ``bytes`` and ``str`` are JSON text and go through :func:`scope_tool.check_ijson`, the same
    check the workflow applies; a plain word that is not JSON gets the quoted form suggested.
    Any other value is encoded as compact JSON.
    """
    if isinstance(response, bytes | bytearray | memoryview | str):
        if isinstance(response, str):
            raw = response.encode("utf-8", "surrogatepass")
        else:
            raw = bytes(response)
        if len(raw) > MAX_INPUT_BYTES:
            return AnswerText(raw)  # refused as too_large, with its size
        try:
            check_ijson(raw)
        except ValueError as err:
            raise _not_json(raw, err, call_id=call_id) from None
        return AnswerText(raw)
    try:
        return AnswerText(
            json.dumps(response, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode(
                "utf-8"
            )
        )
    except (TypeError, ValueError) as err:
        raise AnswerRejectedError(
            f"the answer is not JSON-compatible: {err}",
            reason=RefusalReason.INVALID_JSON,
            call_id=call_id,
        ) from None
    except RecursionError:
        raise AnswerRejectedError(
            "the answer is nested too deeply to encode as a Python value;"
            " send it as bytes holding its JSON text",
            reason=RefusalReason.INVALID_JSON,
            call_id=call_id,
        ) from None


def _not_json(raw: bytes, err: ValueError, *, call_id: str) -> AnswerRejectedError:
    message = f"the answer is not one I-JSON document: {err}"
    suggestion = None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = ""
    if text.strip() and text.strip()[0] not in '{["-0123456789':
        # A bare word (canary, yes): the person most likely meant the JSON string.
        suggestion = json.dumps(text.strip(), ensure_ascii=False)
        message += f" (to answer the string {text.strip()!r}, send '{suggestion}')"
    return AnswerRejectedError(
        message,
        reason=RefusalReason.INVALID_JSON,
        call_id=call_id,
        detail=RefusalDetail(problem=str(err), suggestion=suggestion),
    )
