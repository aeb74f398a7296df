"""Answer integrity: an answer reaches exactly the question it was meant for, once.

* an answer naming another call's request, or an earlier round's, is refused and changes nothing;
* a replayed (duplicate) answer is accepted once: the round advances once, one effect;
* concurrent answers to one request: exactly one wins, every other gets a clear refusal.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

import pytest
from helpers.servers import DedicatedDevServer
from temporalio.client import Client

from scope_tool import Request
from scope_tool.client import (
    DATA_CONVERTER,
    AnswerReceipt,
    AnswerRejectedError,
    Phase,
    ToolCallHandle,
    ToolCalls,
)

from ._ledger import SideEffectLedger
from ._processes import WorkerProcess
from ._refusals import workflow_task_failures

CONCURRENT_ANSWERS = 64
IN_FLIGHT_ANSWERS = 24
"""More than the server's default ``history.maxInFlightUpdates`` (10)."""


async def _waiting_call(calls: ToolCalls, prefix: str, *, rounds: int = 1) -> ToolCallHandle:
    call_id = f"{prefix}-{uuid.uuid4().hex[:12]}"
    handle = await calls.start(
        Request(name="approve_write", arguments=json.dumps({"key": call_id, "rounds": rounds})),
        call_id=call_id,
    )
    await _until_waiting(handle, round_number=1)
    return handle


async def _until_waiting(handle: ToolCallHandle, *, round_number: int) -> None:
    for _ in range(400):
        status = await handle.status()
        if status.phase is Phase.AWAITING_INPUT and status.round == round_number:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{handle.call_id} never waited on round {round_number}: {status}")


def _approval(call_id: str) -> dict[str, object]:
    return {"approve": True, "key": call_id}


async def test_answer_for_another_call_is_refused(
    reliability_calls: ToolCalls, shared_ledger: SideEffectLedger
) -> None:
    first = await _waiting_call(reliability_calls, "integrity-a")
    second = await _waiting_call(reliability_calls, "integrity-b")
    before_first, before_second = await first.status(), await second.status()

    with pytest.raises(AnswerRejectedError) as refused:
        await first.answer(_approval(first.call_id), request_id=f"{second.call_id}/r1")
    assert refused.value.reason == "stale_request"
    assert second.call_id in str(refused.value)
    assert (await first.status()) == before_first
    assert (await second.status()) == before_second

    # Each call then takes its own answer and records its own key, nobody else's.
    await first.answer(_approval(first.call_id), request_id=f"{first.call_id}/r1")
    await second.answer(_approval(second.call_id), request_id=f"{second.call_id}/r1")
    for handle in (first, second):
        assert (await asyncio.wait_for(handle.result(), 60)).phase is Phase.COMPLETED
    rows = [row for row in shared_ledger.rows() if row[0] in (first.call_id, second.call_id)]
    assert sorted(rows) == sorted(
        [
            (first.call_id, first.call_id, "approve_write"),
            (second.call_id, second.call_id, "approve_write"),
        ]
    )


async def test_answer_for_an_earlier_round_is_refused_and_replay_is_accepted_once(
    reliability_calls: ToolCalls, shared_ledger: SideEffectLedger
) -> None:
    handle = await _waiting_call(reliability_calls, "integrity-rounds", rounds=2)
    round_one = f"{handle.call_id}/r1"
    first = await handle.answer(
        _approval(handle.call_id), request_id=round_one, answered_by="alice"
    )
    assert (first.request_id, first.round, first.duplicate) == (round_one, 1, False)
    await _until_waiting(handle, round_number=2)
    waiting = await handle.status()

    # The exact replay (a client retrying after a lost reply) is accepted, not re-applied.
    replay = await handle.answer(
        _approval(handle.call_id), request_id=round_one, answered_by="alice"
    )
    assert replay.request_id == round_one
    assert replay.round == 1
    # A different answer to the earlier round is refused.
    with pytest.raises(AnswerRejectedError) as refused:
        await handle.answer(
            {"approve": False, "key": handle.call_id}, request_id=round_one, answered_by="mallory"
        )
    assert refused.value.reason == "stale_request"
    # The same replay as a signal is recorded neither as an answer nor as a new round.
    await handle.signal_answer(_approval(handle.call_id), request_id=round_one)
    await asyncio.sleep(0.3)
    after = await handle.status()
    assert after.round == waiting.round == 2
    assert after.answers == waiting.answers
    assert len(after.answers) == 1
    assert after.pending is not None
    assert after.pending.request_id == f"{handle.call_id}/r2"

    await handle.answer(_approval(handle.call_id), request_id=f"{handle.call_id}/r2")
    outcome = await asyncio.wait_for(handle.result(), 60)
    assert outcome.phase is Phase.COMPLETED
    assert outcome.rounds == 3
    assert shared_ledger.effect_counts()[handle.call_id] == 1
    assert await workflow_task_failures(reliability_calls.client, [handle.call_id]) == ()


@pytest.mark.parametrize("with_request_id", [True, False], ids=["request-id", "pending"])
async def test_concurrent_answers_exactly_one_wins(
    reliability_calls: ToolCalls, shared_ledger: SideEffectLedger, with_request_id: bool
) -> None:
    handle = await _waiting_call(reliability_calls, "integrity-race")
    request_id = f"{handle.call_id}/r1" if with_request_id else None
    base = json.dumps(_approval(handle.call_id)).encode()
    # Same meaning, different bytes: none of them is a replay of another.
    answers = [base + b" " * index for index in range(CONCURRENT_ANSWERS)]

    async def send(index: int) -> object:
        return await handle.answer(
            answers[index], request_id=request_id, answered_by=f"racer-{index}"
        )

    results = await asyncio.gather(
        *(send(index) for index in range(CONCURRENT_ANSWERS)), return_exceptions=True
    )
    winners = [result for result in results if isinstance(result, AnswerReceipt)]
    losers = [result for result in results if isinstance(result, AnswerRejectedError)]
    others = [repr(result) for result in results if isinstance(result, BaseException)]
    others = [text for text in others if "AnswerRejectedError" not in text]
    assert others == [], f"a losing answer got something other than a refusal: {others}"
    assert len(winners) == 1, results
    assert len(losers) == CONCURRENT_ANSWERS - 1
    assert all(loser.reason in ("stale_request", "not_waiting", "finished") for loser in losers)
    assert all(str(loser) for loser in losers)

    outcome = await asyncio.wait_for(handle.result(), 60)
    assert outcome.phase is Phase.COMPLETED
    status = await handle.status()
    assert len(status.answers) == 1
    assert shared_ledger.effect_counts()[handle.call_id] == 1
    assert await workflow_task_failures(reliability_calls.client, [handle.call_id]) == ()


async def test_answers_past_the_servers_in_flight_limit_each_get_a_verdict(
    reliability_server: DedicatedDevServer, reliability_dir: Path
) -> None:
    """Temporal admits 10 updates per workflow at once and turns the rest away busy. With the
    worker down, every answer piles up; once a worker is back each one gets its verdict."""
    ledger = SideEffectLedger(reliability_dir / f"in-flight-{uuid.uuid4().hex[:8]}.db")
    task_queue = f"in-flight-{uuid.uuid4().hex[:8]}"

    def worker(name: str) -> WorkerProcess:
        return WorkerProcess(
            address=reliability_server.address,
            task_queue=task_queue,
            ledger_file=ledger.path,
            log_file=reliability_dir / f"{task_queue}-{name}.log",
        )

    first, second = worker("first"), worker("second")
    try:
        first.start()
        await asyncio.to_thread(first.wait_ready, timeout=60.0)
        client = await Client.connect(reliability_server.address, data_converter=DATA_CONVERTER)
        calls = ToolCalls(client, task_queue=task_queue)
        handle = await _waiting_call(calls, "in-flight")
        first.kill()  # SIGKILL: nothing answers the updates until the second worker polls

        base = json.dumps(_approval(handle.call_id)).encode()
        sent = [
            asyncio.create_task(
                handle.answer(base + b" " * index, request_id=f"{handle.call_id}/r1")
            )
            for index in range(IN_FLIGHT_ANSWERS)
        ]
        await asyncio.sleep(1.0)  # the first 10 are admitted, the rest are turned away busy
        second.start()
        await asyncio.to_thread(second.wait_ready, timeout=60.0)
        results = await asyncio.gather(*sent, return_exceptions=True)

        winners = [result for result in results if isinstance(result, AnswerReceipt)]
        refusals = [result for result in results if isinstance(result, AnswerRejectedError)]
        assert [r for r in results if r not in winners and r not in refusals] == []
        assert len(winners) == 1
        assert {refusal.reason for refusal in refusals} <= {
            "stale_request",
            "not_waiting",
            "finished",
        }
        outcome = await asyncio.wait_for(handle.result(), 60)
        assert outcome.phase is Phase.COMPLETED, outcome
        assert (await asyncio.to_thread(ledger.effect_counts))[handle.call_id] == 1
    finally:
        first.stop()
        second.stop()


@pytest.mark.parametrize("levels", [500, 5_000, 10_000])
async def test_deep_answer_within_the_protocol_limit_reaches_the_tool(
    reliability_calls: ToolCalls, levels: int
) -> None:
    """Admission has two sides: I-JSON nested up to 10 000 deep is a valid answer."""
    call_id = f"integrity-deep-{uuid.uuid4().hex[:12]}"
    handle = await reliability_calls.start(Request(name="free_answer"), call_id=call_id)
    await _until_waiting(handle, round_number=1)
    answer = ("[" * levels + "]" * levels).encode()
    await handle.answer(answer, request_id=f"{call_id}/r1")
    outcome = await asyncio.wait_for(handle.result(), 60)
    assert outcome.phase is Phase.COMPLETED, outcome
    assert outcome.output.text() == f"got {len(answer)} bytes"
