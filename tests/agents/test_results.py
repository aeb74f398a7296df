"""model_result: what a model sees for each phase, and for a call waiting for a person."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from scope_tool import FailureKind, MediaBlock, Output, TextBlock
from scope_tool.agents import model_result
from scope_tool.client import CallOutcome, CallStatus, PendingInput, Phase

SECRET = "db password is hunter2"


def outcome(phase: Phase, text: str = "", **extra) -> CallOutcome:
    return CallOutcome(phase=phase, output=Output.text_output(text), **extra)


def test_completed_gives_the_output_text_and_json_details():
    result = model_result(outcome(Phase.COMPLETED, "wrote 5 bytes"), call_id="c1")
    assert (result.text, result.is_error, result.call_id) == ("wrote 5 bytes", False, "c1")
    assert result.ended
    details = CallOutcome(phase=Phase.COMPLETED, output=Output.json_output(b'{"sum": 5}'))
    assert model_result(details).text == '{"sum": 5}'
    assert model_result(CallOutcome(phase=Phase.COMPLETED)).text == (
        "The tool completed without output."
    )


def test_media_is_named_not_dropped():
    output = Output(
        content=(TextBlock("see "), MediaBlock(mime_type="image/png", uri="https://x/y.png"))
    )
    text = model_result(CallOutcome(phase=Phase.COMPLETED, output=output)).text
    assert text == "see [image/png attachment at https://x/y.png]"


@pytest.mark.parametrize("phase", [Phase.FAILED, Phase.REJECTED, Phase.INVALID])
def test_unsuccessful_outcomes_give_their_model_visible_output_as_an_error(phase):
    result = model_result(
        outcome(phase, "error: denied: not today", message=SECRET, failure_kind=FailureKind.FAILED)
    )
    assert result.text == "error: denied: not today"
    assert result.is_error
    assert SECRET not in result.text


@pytest.mark.parametrize(
    ("phase", "sentence"),
    [
        (Phase.EXPIRED, "The tool call expired: nobody answered its question before the deadline."),
        (Phase.CANCELLED, "The tool call was cancelled before it finished."),
        (Phase.ERRORED, "The tool call ended with an internal error; its outcome is unknown."),
    ],
)
def test_expired_cancelled_and_errored_give_one_sentence_never_the_evidence(phase, sentence):
    call = CallOutcome(
        phase=phase,
        output=Output.text_output(SECRET),
        message=SECRET,
        evidence=Output.text_output(SECRET),
    )
    result = model_result(call)
    assert result.text == sentence
    assert result.is_error
    assert SECRET not in result.text


def status(prompt: bytes, **extra) -> CallStatus:
    return CallStatus(
        call_id="turn-1:call_a",
        tool="write_file",
        phase=Phase.AWAITING_INPUT,
        round=1,
        pending=PendingInput(
            request_id="turn-1:call_a/r1",
            prompt=prompt,
            response_schema=b"{}",
            asked_at=datetime.now(UTC),
        ),
        **extra,
    )


def test_a_call_waiting_for_approval_says_so_with_its_call_id():
    result = model_result(status(b'{"kind":"scope_tool.approval","question":"ok?"}'))
    assert result.text == (
        "The call of write_file is waiting for approval from a person"
        " (call id turn-1:call_a); its result will come once they answer."
    )
    assert result.waiting
    assert not result.is_error
    assert (result.call_id, result.request_id) == ("turn-1:call_a", "turn-1:call_a/r1")


def test_a_call_waiting_for_other_input_says_input():
    assert "waiting for input from a person" in model_result(status(b'"which one?"')).text


def test_a_status_with_an_outcome_maps_the_outcome_and_a_running_one_says_running():
    ended = CallStatus(
        call_id="c",
        tool="t",
        phase=Phase.COMPLETED,
        round=1,
        outcome=outcome(Phase.COMPLETED, "ok"),
    )
    assert model_result(ended).text == "ok"
    assert model_result(ended).call_id == "c"
    running = CallStatus(call_id="c", tool="t", phase=Phase.RUNNING, round=1)
    assert model_result(running).text == "The call of t is still running (call id c)."
    assert not model_result(running).ended


def test_anything_else_is_refused():
    with pytest.raises(TypeError, match="expected a CallOutcome or CallStatus"):
        model_result("COMPLETED")  # type: ignore[arg-type]


def test_provider_messages_have_the_published_shapes():
    """OpenAI Chat Completions tool message; Anthropic tool_result block (is_error optional)."""
    import jsonschema

    done = model_result(outcome(Phase.COMPLETED, "ok"))
    jsonschema.validate(
        done.openai_message("call_1"),
        {
            "type": "object",
            "properties": {
                "role": {"const": "tool"},
                "tool_call_id": {"type": "string"},
                "content": {"type": "string"},
            },
            "required": ["role", "tool_call_id", "content"],
            "additionalProperties": False,
        },
    )
    anthropic = {
        "type": "object",
        "properties": {
            "type": {"const": "tool_result"},
            "tool_use_id": {"type": "string"},
            "content": {"type": "string"},
            "is_error": {"type": "boolean"},
        },
        "required": ["type", "tool_use_id"],
        "additionalProperties": False,
    }
    jsonschema.validate(done.anthropic_block("toolu_1"), anthropic)
    assert "is_error" not in done.anthropic_block("toolu_1")
    failed = model_result(outcome(Phase.REJECTED, "denied"))
    jsonschema.validate(failed.anthropic_block("toolu_2"), anthropic)
    assert failed.anthropic_block("toolu_2") == {
        "type": "tool_result",
        "tool_use_id": "toolu_2",
        "content": "denied",
        "is_error": True,
    }
    assert failed.openai_message("call_2")["content"] == "denied"
