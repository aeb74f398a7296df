"""Answers whose text travels ahead of their update, by signal ``stage_answer``.

Temporal echoes an update's input in the worker's reply that accepts or rejects it, and hands
a call all its waiting updates in one workflow task, whose reply gRPC caps at 4 MiB. So the
facade sends an answer longer than :data:`~scope_tool.wire.STAGE_ABOVE_BYTES` as a signal (not
echoed) and then its update with only the text's SHA-256 (``AnswerInput.response_digest``).
The workflow keeps the staged texts here and puts the text back into the answer before
deciding it; the history reader does the same, so both see the answer that was sent.

Staging decides nothing: a staged text is only looked up by an update naming its digest. The
texts are dropped once a question is answered (every answer staged for it is then stale) and,
past :data:`KEPT_STAGED` texts, oldest first; an update whose text is gone is refused by
``check_answer`` with a message saying to send it again.
"""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Final

from scope_tool import MAX_INPUT_BYTES
from scope_tool.wire import AnswerInput

__all__ = ["KEPT_STAGED", "StagedTexts", "text_digest"]

KEPT_STAGED: Final = 16
"""Staged texts a call keeps at most (each up to ``MAX_INPUT_BYTES``; the oldest goes first)."""


def text_digest(text: bytes) -> str:
    """The digest an update names a staged text by: SHA-256, lowercase hex."""
    return hashlib.sha256(text).hexdigest()


class StagedTexts:
    """The texts staged by signal and not yet used, by digest, oldest first."""

    def __init__(self) -> None:
        self._texts: dict[str, bytes] = {}

    def add(self, text: bytes) -> None:
        """Keep ``text`` (one over ``MAX_INPUT_BYTES`` is dropped: no answer that long is taken)."""
        if len(text) > MAX_INPUT_BYTES:
            return
        digest = text_digest(text)
        self._texts.pop(digest, None)
        self._texts[digest] = text
        while len(self._texts) > KEPT_STAGED:
            del self._texts[next(iter(self._texts))]

    def unstaged(self, answer: AnswerInput) -> AnswerInput:
        """``answer`` with its staged text put back; unchanged when it names none or one gone."""
        digest = answer.response_digest
        if digest is None or digest not in self._texts:
            return answer
        return dataclasses.replace(answer, response=self._texts[digest], response_digest=None)

    def clear(self) -> None:
        """Drop every staged text (a question was answered: they were all for it)."""
        self._texts.clear()

    def __len__(self) -> int:
        return len(self._texts)
