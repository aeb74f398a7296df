"""``scope-tool history`` as text: a long answer or schema is cut, saying where the rest is."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from scope_tool.cli._history import SHOWN_CHARACTERS, render_history
from scope_tool.client.history import AnswerVia, CallHistory, HistoryAnswer, HistoryQuestion

AT = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def _trail(answer: bytes, schema: bytes = b"{}") -> CallHistory:
    return CallHistory(
        call_id="c",
        tool="t",
        arguments=b"{}",
        started_at=AT,
        started_by="client",
        questions=(
            HistoryQuestion(
                request_id="c/r1", round=1, prompt=b'"answer"', response_schema=schema, asked_at=AT
            ),
        ),
        answers=(
            HistoryAnswer(
                request_id="c/r1",
                round=1,
                response=answer,
                answered_by="al",
                client_identity="cli",
                answered_at=AT,
                via=AnswerVia.UPDATE,
            ),
        ),
    )


def test_a_short_answer_is_shown_whole() -> None:
    assert ': {"ok":1}' in render_history(_trail(b'{"ok": 1}'))


def test_a_long_answer_and_schema_are_cut_with_their_size() -> None:
    answer = json.dumps("x" * 100_000).encode()
    schema = json.dumps({"description": "d" * 2_000}).encode()
    text = render_history(_trail(answer, schema))
    assert (
        f'"{"x" * (SHOWN_CHARACTERS - 1)}... ({len(answer)} bytes; --json shows all of it)' in text
    )
    assert f"... ({len(schema)} bytes; --json shows all of it)" in text
    assert len(text) < 3 * SHOWN_CHARACTERS + 1_000
