"""What a round can carry: refuse a result Temporal could not deliver where it is produced.

A round's result and the next round's input are each one Temporal payload, refused by the
server past 2 MiB (``PayloadsTooLarge``). Left alone, a 3 MiB output or a 1 MiB prompt with a
1 MiB state ended the call ERRORED "outcome unknown", though the tool had finished, and a
question that left no room for an answer made a call nobody could answer (#17 item 4). Here
the activity measures its result as the converter will send it and, when it cannot be carried,
returns an ERRORED round whose message says the tool DID run and names the limit.
"""

from __future__ import annotations

from typing import Final

from scope_tool import MAX_INPUT_BYTES
from scope_tool.wire import (
    CallToolInput,
    RoundCompleted,
    RoundErrored,
    RoundInputRequested,
    RoundResult,
)
from scope_tool.workflows._answer_check import ROUND_INPUT_LIMIT, encoded_size

__all__ = ["ROUND_RESULT_LIMIT", "carried"]

ROUND_RESULT_LIMIT: Final = ROUND_INPUT_LIMIT
"""Largest encoded output or question a round may return (2 MiB - 64 KiB of envelope)."""

_LARGEST_ANSWER: Final = MAX_INPUT_BYTES + 2
"""An answer of MAX_INPUT_BYTES plain characters, as a JSON string."""


def carried(result: RoundResult, round_input: CallToolInput) -> RoundResult:
    """``result``, or an ERRORED round when it (or the round it leads to) cannot be carried."""
    where = f"tool {round_input.tool!r} (round {round_input.round})"
    if isinstance(result, RoundCompleted):
        size = encoded_size(result.output.to_json())
        if size > ROUND_RESULT_LIMIT:
            return RoundErrored(
                message=f"{where} completed, but its output is {size} bytes encoded, over the"
                f" {ROUND_RESULT_LIMIT}-byte limit of a round's result (Temporal's 2 MiB"
                " payload limit), so it cannot be returned; the tool DID run to completion"
                " and its effects happened"
            )
    elif isinstance(result, RoundInputRequested):
        request = encoded_size(result.input_request)
        arguments = encoded_size(round_input.arguments)
        needed = arguments + request + _LARGEST_ANSWER
        if request > ROUND_RESULT_LIMIT or needed > ROUND_INPUT_LIMIT:
            return RoundErrored(
                message=f"{where} ran and asked a question of {request} bytes encoded; with the"
                f" call's arguments ({arguments} bytes) and the largest allowed answer"
                f" ({MAX_INPUT_BYTES} bytes) the next round's input would be {needed} bytes,"
                f" over the {ROUND_INPUT_LIMIT}-byte limit of what a round can carry (Temporal's"
                " 2 MiB payload limit), so the question was not asked; make the prompt, state"
                " or arguments smaller"
            )
    return result
