"""Status values own their JSON: one shape for ``--json``, the inbox API and webhooks."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from scope_tool import FailureKind, Output, Principal
from scope_tool.cli._render import render_status
from scope_tool.client import (
    AnswerRecord,
    CallOutcome,
    CallStatus,
    PendingInput,
    Phase,
    RefusalDetail,
    RefusedAnswer,
    RoundRoute,
    read_prompt,
)
from scope_tool.client.history import (
    AnswerVia,
    CallHistory,
    HistoryAnswer,
    HistoryQuestion,
    HistoryRefusal,
)
from scope_tool.wire import NotifyInput
from scope_tool.wire._status import STATUS_ANSWER_BYTES, shown_answers

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


def test_the_status_shape_leaves_out_the_route_and_shows_the_principal() -> None:
    status = CallStatus(
        call_id="c",
        tool="t",
        phase=Phase.RUNNING,
        round=2,
        principal=Principal(user="u", roles=("b", "a")),
        route=RoundRoute(task_queue="q@t", round=2, contract_digest="d", scheduled_at=ASKED),
    )
    shown = status.to_json_dict()
    assert set(shown) == {
        "call_id",
        "tool",
        "phase",
        "round",
        "pending",
        "answers",
        "outcome",
        "refused",
        "refused_dropped",
        "notify_errors",
        "allowed_answerers",
        "principal",
        "require_verified",
        "waiting_for_worker",
        "policy",
        "votes",
        "tally",
        "rule_verdict",
        "progress",
        "deadline_steps",
        "policy_source",
    }
    assert shown["principal"] == {"user": "u", "tenant": None, "roles": ["a", "b"]}


def test_an_outcome_shows_evidence_apart_from_the_output() -> None:
    outcome = CallOutcome(
        phase=Phase.COMPLETED, output=Output.text_output("hi"), evidence=Output(details=b"[1]")
    )
    shown = outcome.to_json_dict()
    assert set(shown) == {
        "phase",
        "output",
        "text",
        "details",
        "failure_kind",
        "message",
        "rounds",
        "evidence",
    }
    assert shown["text"] == "hi"
    assert shown["details"] is None
    assert shown["failure_kind"] is None
    assert shown["evidence"] == {"details": [1]}


def test_a_history_keeps_microseconds_and_a_short_outcome() -> None:
    trail = CallHistory(
        call_id="c",
        tool="t",
        arguments=b'{"x":1}',
        started_at=ASKED,
        started_by="me",
        questions=(
            HistoryQuestion(
                request_id="c/r1", round=1, prompt=b'"ok?"', response_schema=b"{}", asked_at=ASKED
            ),
        ),
        answers=(
            HistoryAnswer(
                request_id="c/r1",
                round=1,
                response=b"true",
                answered_by=None,
                client_identity="ci",
                answered_at=ASKED,
                via=AnswerVia.UPDATE,
            ),
        ),
        refusals=(
            HistoryRefusal(
                request_id=None,
                reason="schema",
                message="m",
                response=b"2",
                answered_by="z",
                client_identity="ci",
                refused_at=ASKED,
            ),
        ),
        rounds=1,
        execution_status="COMPLETED",
        outcome=CallOutcome(
            phase=Phase.FAILED,
            output=Output.text_output("no"),
            failure_kind=FailureKind.FAILED,
            message="boom",
            rounds=1,
            evidence=Output.text_output("seen"),
        ),
        ended_at=ASKED,
    )
    at = "2026-01-02T03:04:05.678901Z"
    assert trail.to_json() == {
        "call_id": "c",
        "tool": "t",
        "arguments": {"x": 1},
        "started_at": at,
        "started_by": "me",
        "allowed_answerers": [],
        "principal": None,
        "require_verified": False,
        "policy": None,
        "questions": [
            {
                "request_id": "c/r1",
                "round": 1,
                "prompt": "ok?",
                "response_schema": {},
                "asked_at": at,
            }
        ],
        "answers": [
            {
                "request_id": "c/r1",
                "round": 1,
                "response": True,
                "answered_by": None,
                "client_identity": "ci",
                "answered_at": at,
                "via": "update",
                "duplicate": False,
                "verified": False,
                "channel": None,
                "voters": [],
                "reason": "",
                "rule_verdict": "",
                "decided": True,
            }
        ],
        "refusals": [
            {
                "request_id": None,
                "reason": "schema",
                "message": "m",
                "response": 2,
                "answered_by": "z",
                "client_identity": "ci",
                "refused_at": at,
                "via": "signal",
            }
        ],
        "policy_events": [],
        "deadline_steps": [],
        "rounds": 1,
        "execution_status": "COMPLETED",
        "outcome": {
            "phase": "FAILED",
            "output": {"content": [{"type": "text", "text": "no"}]},
            "failure_kind": "failed",
            "message": "boom",
            "rounds": 1,
        },
        "ended_at": at,
    }


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


def _answer(round_number: int, size: int) -> AnswerRecord:
    text = json.dumps("x" * (size - 2)).encode()
    assert len(text) == size
    return AnswerRecord(
        request_id=f"c/r{round_number}",
        round=round_number,
        response=text,
        answered_by="al",
        answered_at=ASKED,
    )


def test_a_status_carries_the_newest_answer_texts_up_to_its_budget() -> None:
    small, large = 1000, STATUS_ANSWER_BYTES - 1000
    answers = (_answer(1, large), _answer(2, small), _answer(3, large), _answer(4, small))
    shown = shown_answers(answers)
    # The newest two fill the budget exactly; the older ones are left out, each with its size.
    assert [a.omitted_response_bytes for a in shown] == [large, small, 0, 0]
    assert [a.response for a in shown[:2]] == [b"null", b"null"]
    assert shown[2:] == answers[2:]
    assert sum(len(a.response) for a in shown[2:]) == STATUS_ANSWER_BYTES
    assert shown_answers(()) == ()


def test_an_answer_longer_than_the_budget_is_left_out_and_an_older_small_one_shown() -> None:
    answers = (_answer(1, 10), _answer(2, STATUS_ANSWER_BYTES + 1))
    shown = shown_answers(answers)
    assert shown[0] == answers[0]
    assert shown[1].omitted_response_bytes == STATUS_ANSWER_BYTES + 1
    as_json = shown[1].to_json_dict()
    assert as_json["response"] is None
    assert as_json["omitted_response_bytes"] == STATUS_ANSWER_BYTES + 1
    assert shown[0].to_json_dict()["omitted_response_bytes"] == 0


def test_the_terminal_names_an_omitted_answer_by_its_size_and_where_to_read_it() -> None:
    status = CallStatus(
        call_id="c",
        tool="t",
        phase=Phase.RUNNING,
        round=3,
        answers=shown_answers((_answer(1, 20), _answer(2, STATUS_ANSWER_BYTES + 1))),
    )
    text = render_status(status)
    assert f'"{"x" * 18}" by al' in text
    assert f"({STATUS_ANSWER_BYTES + 1} bytes; scope-tool history c shows it) by al" in text
