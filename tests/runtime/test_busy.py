"""An answer turned away for load is retried; one turned away for its content is not."""

from __future__ import annotations

import pytest
from temporalio.service import RPCError, RPCStatusCode

from workflows._busy import retry_while_busy, server_busy

IN_FLIGHT = RPCError(
    "limit on number of concurrent in-flight updates has been reached (10)",
    RPCStatusCode.RESOURCE_EXHAUSTED,
    b"",
)
ABORTED = RPCError("workflow update was aborted", RPCStatusCode.UNAVAILABLE, b"")
CLOSING = RPCError(
    "workflow operation can not be applied because workflow is closing",
    RPCStatusCode.RESOURCE_EXHAUSTED,
    b"",
)
NOT_FOUND = RPCError("workflow not found", RPCStatusCode.NOT_FOUND, b"")


def test_busy_means_load_not_content() -> None:
    assert server_busy(IN_FLIGHT)
    assert server_busy(ABORTED)
    assert not server_busy(CLOSING)
    assert not server_busy(NOT_FOUND)


async def test_busy_is_retried_until_it_goes_through() -> None:
    turned_away = [IN_FLIGHT, ABORTED, IN_FLIGHT]
    attempts = 0

    async def send() -> str:
        nonlocal attempts
        attempts += 1
        if turned_away:
            raise turned_away.pop(0)
        return "verdict"

    assert await retry_while_busy(send) == "verdict"
    assert attempts == 4


@pytest.mark.parametrize("error", [CLOSING, NOT_FOUND], ids=["closing", "not-found"])
async def test_other_errors_reach_the_caller_at_once(error: RPCError) -> None:
    attempts = 0

    async def send() -> str:
        nonlocal attempts
        attempts += 1
        raise error

    with pytest.raises(RPCError) as raised:
        await retry_while_busy(send)
    assert raised.value is error
    assert attempts == 1


async def test_a_server_busy_past_the_budget_reaches_the_caller() -> None:
    attempts = 0

    async def send() -> str:
        nonlocal attempts
        attempts += 1
        raise IN_FLIGHT

    with pytest.raises(RPCError) as raised:
        await retry_while_busy(send, budget_seconds=0.3)
    assert raised.value is IN_FLIGHT
    assert 2 <= attempts < 40
