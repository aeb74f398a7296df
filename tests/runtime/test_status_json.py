"""Status values own their JSON: one shape for ``--json``, the inbox API and webhooks."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from scope_tool import FailureKind, Output
from workflows import (
    AnswerRecord,
    CallOutcome,
    CallStatus,
    PendingInput,
    Phase,
    RefusalDetail,
    RefusedAnswer,
    read_prompt,
)
from workflows.wire import NotifyInput

ASKED = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)


def test_a_status_serialises_every_member_as_json_values() -> None:
    pending = PendingInput(
        request_id="c/r2",
        prompt=b'{"question":"Ship?","plan":[1]}',
        response_schema=b'{"type":"boolean"}',
        asked_at=ASKED,
    )
    status = CallStatus(
        call_id="c",
        tool="deploy",
        phase=Phase.AWAITING_INPUT,
        round=2,
        pending=pending,
        answers=(
            AnswerRecord(
                request_id="c/r1", round=1, response=b"true", answered_by="al", answered_at=ASKED
            ),
        ),
        refused=(
            RefusedAnswer(
                request_id=None,
                reason="schema",
                message="no",
                detail=RefusalDetail(problem="bad", schema_path=""),
            ),
        ),
        allowed_answerers=("al",),
    )
    shown = status.to_json_dict()
    assert json.loads(json.dumps(shown)) == shown
    assert shown["phase"] == "AWAITING_INPUT"
    assert shown["pending"] == {
        "request_id": "c/r2",
        "prompt": {"question": "Ship?", "plan": [1]},
        "response_schema": {"type": "boolean"},
        "asked_at": "2026-01-02T03:04:05.678Z",
        "deadline": None,
    }
    assert shown["answers"][0]["response"] is True
    assert shown["refused"][0]["detail"]["schema_path"] == ""
    assert shown["allowed_answerers"] == ["al"]
    assert shown["outcome"] is None


def test_an_outcome_serialises_output_text_and_failure() -> None:
    outcome = CallOutcome(
        phase=Phase.FAILED,
        output=Output(details=b'{"n":1}'),
        failure_kind=FailureKind.FAILED,
        message="boom",
        rounds=1,
    )
    shown = outcome.to_json_dict()
    assert shown["phase"] == "FAILED"
    assert shown["details"] == {"n": 1}
    assert shown["failure_kind"] == "failed"
    assert shown["message"] == "boom"
    assert json.loads(shown["text"]) == {"n": 1}
    assert shown["output"]["details"] == {"n": 1}


def test_the_webhook_body_uses_the_same_prompt_value() -> None:
    notice = NotifyInput(
        url="http://x",
        event="awaiting_input",
        call_id="c",
        tool="t",
        phase="AWAITING_INPUT",
        request_id="c/r1",
        prompt='{"question":"Ship?"}',
    )
    assert notice.to_json_dict()["prompt"] == {"question": "Ship?"}


@pytest.mark.parametrize(
    ("prompt", "question", "details"),
    [
        (b'"Approve?"', "Approve?", None),
        (b'{"question":"Write?","path":"a"}', "Write?", {"path": "a"}),
        (b'{"title":"T","message":"M"}', "M", {"title": "T"}),
        (b'{"question":3,"text":"x"}', "x", {"question": 3}),
        (b"[1,2]", "", [1, 2]),
    ],
)
def test_one_prompt_reader(prompt: bytes, question: str, details: object) -> None:
    read = read_prompt(prompt)
    assert (read.question, read.details) == (question, details)
