"""Polling helpers (a call's phase, a ledger's content), each failing loudly after a bound."""

from __future__ import annotations

import asyncio
from typing import Any

from scope_tool.client import Phase


async def wait_for_phase(handle: Any, phase: Phase, within: float = 20) -> Any:
    """Poll ``status`` until the call reaches ``phase`` (fail after ``within`` seconds)."""
    deadline = asyncio.get_running_loop().time() + within
    while True:
        status = await handle.status()
        if status.phase is phase:
            return status
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"call {handle.call_id} stayed {status.phase}, expected {phase}")
        await asyncio.sleep(0.05)


async def wait_until(predicate: Any, within: float = 20) -> None:
    """Poll ``predicate()`` until true (fail after ``within`` seconds)."""
    deadline = asyncio.get_running_loop().time() + within
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition never became true")
        await asyncio.sleep(0.05)


async def wait_until_async(predicate: Any, within: float = 20) -> None:
    """Poll the coroutine function ``predicate`` until it returns true."""
    deadline = asyncio.get_running_loop().time() + within
    while not await predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition never became true")
        await asyncio.sleep(0.1)
