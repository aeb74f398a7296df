"""Answers whose text goes ahead of their update by signal (``scope_tool.wire._staging``), no server.

The decision itself is ``AnswerCheck``'s; these pin what staging adds: the text an update names
by digest is put back before deciding, a repeat of an accepted staged answer is still a
duplicate, and an update whose text is gone is refused saying to send it again.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

from scope_tool import MAX_INPUT_BYTES, InputRequest
from scope_tool.client import Phase, RefusalReason
from scope_tool.wire import AnswerInput, ToolCallInput
from scope_tool.wire._staging import KEPT_STAGED, StagedTexts, text_digest
from scope_tool.wire._status import AnswerRecord, PendingInput
from scope_tool.workflows._answer_check import Accepted, AnswerCheck, CallState, Refused

CALL = "call-1"
REQUEST = f"{CALL}/r1"
QUESTION = InputRequest(prompt=b'"answer"', response_schema={}, state=b"null")
PENDING = PendingInput(
    request_id=REQUEST,
    prompt=QUESTION.prompt,
    response_schema=QUESTION.response_schema,
    asked_at=datetime(2026, 1, 1, tzinfo=UTC),
)


def _by_digest(text: bytes) -> AnswerInput:
    return AnswerInput(response=b"", request_id=REQUEST, response_digest=text_digest(text))


def _decide(answer: AnswerInput, answered: dict[str, AnswerRecord] | None = None) -> object:
    state = CallState(
        call=ToolCallInput(call_id=CALL, tool="ask"),
        phase=Phase.AWAITING_INPUT if not answered else Phase.RUNNING,
        pending=None if answered else PENDING,
        pending_request=None if answered else QUESTION,
        answered=answered or {},
    )
    return AnswerCheck(state).validate(answer, identity_secret=None, now=0.0)


def test_the_digest_is_sha256_hex() -> None:
    assert text_digest(b"[1]") == hashlib.sha256(b"[1]").hexdigest()


def test_a_staged_text_is_put_back_and_decided() -> None:
    staged = StagedTexts()
    staged.add(b'{"ok": 1}')
    answer = staged.unstaged(_by_digest(b'{"ok": 1}'))
    assert answer.response == b'{"ok": 1}'
    assert answer.response_digest is None
    assert isinstance(_decide(answer), Accepted)


def test_an_answer_without_a_digest_is_left_as_it_is() -> None:
    plain = AnswerInput(response=b"true", request_id=REQUEST)
    assert StagedTexts().unstaged(plain) is plain


def test_an_update_whose_text_is_gone_is_refused_saying_to_send_it_again() -> None:
    missing = StagedTexts().unstaged(_by_digest(b"[1, 2]"))
    verdict = _decide(missing)
    assert isinstance(verdict, Refused)
    assert verdict.reason is RefusalReason.INVALID_JSON
    assert "did not reach call 'call-1'" in verdict.message
    assert "send the answer again" in verdict.message


def test_a_repeat_of_an_accepted_staged_answer_is_a_duplicate_even_once_its_text_is_gone() -> None:
    text = b"[" + b"1," * 40_000 + b"1]"
    answered = {
        REQUEST: AnswerRecord(
            request_id=REQUEST,
            round=1,
            response=text,
            answered_by="alice",
            answered_at=datetime(2026, 1, 1, tzinfo=UTC),
        )
    }
    repeat = _decide(_by_digest(text), answered)
    assert isinstance(repeat, Accepted)
    assert repeat.duplicate
    other = _decide(_by_digest(text + b" "), answered)
    assert isinstance(other, Refused)
    assert other.reason is RefusalReason.STALE_REQUEST


def test_clear_drops_every_text() -> None:
    staged = StagedTexts()
    staged.add(b"1")
    staged.add(b"2")
    staged.clear()
    assert len(staged) == 0
    assert staged.unstaged(_by_digest(b"1")).response_digest is not None


def test_only_the_newest_texts_are_kept() -> None:
    staged = StagedTexts()
    texts = [str(number).encode() for number in range(KEPT_STAGED + 2)]
    for text in texts:
        staged.add(text)
    assert len(staged) == KEPT_STAGED
    assert staged.unstaged(_by_digest(texts[0])).response_digest is not None
    assert staged.unstaged(_by_digest(texts[-1])).response == texts[-1]


def test_a_text_staged_again_counts_as_the_newest() -> None:
    staged = StagedTexts()
    staged.add(b"first")
    for number in range(KEPT_STAGED - 1):
        staged.add(str(number).encode())
    staged.add(b"first")
    staged.add(b"one more")
    assert staged.unstaged(_by_digest(b"first")).response == b"first"


def test_a_text_longer_than_any_answer_is_not_kept() -> None:
    staged = StagedTexts()
    staged.add(b" " * (MAX_INPUT_BYTES + 1))
    assert len(staged) == 0
