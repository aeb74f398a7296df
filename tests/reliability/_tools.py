"""The tools the reliability scenarios run, loaded by worker processes as ``module:registry``.

``approve_write`` is the load-bearing one: it asks for approval (one or more rounds), then
performs its effect by appending one row to the side-effect ledger. It is *not* safe to retry,
which is exactly why it is interesting under faults: the engine must never run its effect
twice, and a call caught inside it when a worker dies must end ERRORED ("outcome unknown")
rather than be re-run. The answer it receives names the call it was meant for, and the tool
records both keys, so an answer routed to the wrong call shows up in the ledger.

``REGISTRY`` is built lazily from the environment (ledger path, hold time), because worker
processes import this module by name and cannot be given constructor arguments.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from scope_tool import (
    Definition,
    Func,
    Guard,
    InputRequest,
    Invocation,
    Output,
    Registry,
    Result,
)

from ._ledger import SideEffectLedger

__all__ = [
    "BROKEN_POLICY_SECRET",
    "HOLD_ENV",
    "build_registry",
]

HOLD_ENV = "SCOPE_RELIABILITY_HOLD_SECONDS"
"""Seconds ``approve_write`` spends inside its final round (half before, half after the effect),
so that faults land while tool code is running."""

BROKEN_POLICY_SECRET = "policy-db-password=hunter2 at 10.0.0.7"
"""What the broken authorizer raises; it must never reach a model, a status or a memo."""

_APPROVE_SCHEMA = {
    "type": "object",
    "properties": {
        "key": {"type": "string", "minLength": 1, "maxLength": 200},
        "rounds": {"type": "integer", "minimum": 1, "maximum": 5},
    },
    "required": ["key"],
    "additionalProperties": False,
}

_ANSWER_SCHEMA = {
    "type": "object",
    "properties": {
        "approve": {"type": "boolean"},
        "key": {"type": "string", "minLength": 1, "maxLength": 200},
    },
    "required": ["approve", "key"],
    "additionalProperties": False,
}


class ApproveWrite:
    """Asks ``rounds`` times for approval, then appends one ledger row (not retry-safe)."""

    def __init__(self, *, ledger: SideEffectLedger, hold_seconds: float) -> None:
        self._ledger = ledger
        self._hold_seconds = hold_seconds

    def definition(self) -> Definition:
        return Definition(
            name="approve_write",
            description="Write a record once a person approves it.",
            input_schema=json.dumps(_APPROVE_SCHEMA).encode(),
        )

    async def call(self, invocation: Invocation) -> Result:
        arguments: dict[str, Any] = json.loads(invocation.arguments)
        key = str(arguments["key"])
        rounds = int(arguments.get("rounds", 1))
        continuation = invocation.continuation
        if continuation is None:
            return _ask(key=key, asked=1)
        state = json.loads(continuation.state)
        answer = json.loads(continuation.response)
        asked = int(state["asked"])
        if not answer["approve"]:
            return Result(output=Output.text_output(f"not written: {key} was declined"))
        if asked < rounds:
            return _ask(key=str(state["key"]), asked=asked + 1)
        call_key = str(state["key"])
        # SQLite calls go to a thread so a busy ledger never stalls the worker's event loop
        # (which also sends the activity heartbeats).
        await asyncio.to_thread(self._ledger.enter, call_key=call_key)
        await asyncio.sleep(self._hold_seconds / 2)
        await asyncio.to_thread(
            self._ledger.record,
            call_key=call_key,
            answered_key=str(answer["key"]),
            tool="approve_write",
        )
        await asyncio.sleep(self._hold_seconds / 2)
        await asyncio.to_thread(self._ledger.leave, call_key=call_key)
        return Result(output=Output.text_output(f"wrote {state['key']}"))


class IdempotentWrite:
    """Writes one ledger row per run, asks nothing; served as *retry-safe* (``--retry-safe``).

    It is the counterpart of ``approve_write``: when its worker is lost mid-run the engine may,
    and should, run it again elsewhere, so the call still COMPLETES. Its in-flight marks show
    which processes ran it.
    """

    def __init__(self, *, ledger: SideEffectLedger, hold_seconds: float) -> None:
        self._ledger = ledger
        self._hold_seconds = hold_seconds

    def definition(self) -> Definition:
        return Definition(
            name="idempotent_write",
            description="Write a record; running it twice is harmless.",
            input_schema=json.dumps(_APPROVE_SCHEMA).encode(),
        )

    async def call(self, invocation: Invocation) -> Result:
        key = str(json.loads(invocation.arguments)["key"])
        await asyncio.to_thread(self._ledger.enter, call_key=key)
        await asyncio.sleep(self._hold_seconds)
        await asyncio.to_thread(
            self._ledger.record, call_key=key, answered_key=key, tool="idempotent_write"
        )
        await asyncio.to_thread(self._ledger.leave, call_key=key)
        return Result(output=Output.text_output(f"wrote {key}"))


class FreeAnswer:
    """Asks one question whose response schema accepts any JSON; reports the answer's size.

    It checks the other side of admission: an answer the protocol accepts (any I-JSON document,
    nested up to 10 000 deep) must reach the tool, not only hostile ones be refused.
    """

    def definition(self) -> Definition:
        return Definition(
            name="free_answer",
            description="Ask for any JSON value and report how long it was.",
            input_schema=b'{"type":"object","additionalProperties":false}',
        )

    async def call(self, invocation: Invocation) -> Result:
        continuation = invocation.continuation
        if continuation is None:
            return Result(
                input_request=InputRequest(
                    prompt=b'"Say anything (as JSON)."', response_schema=b"{}", state=b"null"
                )
            )
        return Result(output=Output.text_output(f"got {len(continuation.response)} bytes"))


def _ask(*, key: str, asked: int) -> Result:
    return Result(
        input_request=InputRequest(
            prompt=json.dumps(
                {"question": f"Approve the write of {key}?", "round": asked}
            ).encode(),
            response_schema=json.dumps(_ANSWER_SCHEMA).encode(),
            state=json.dumps({"key": key, "asked": asked}).encode(),
        )
    )


class EchoInput(BaseModel):
    """Typed input for ``echo``: strict decoding refuses wrong types and unknown fields."""

    model_config = ConfigDict(extra="forbid")

    text: str
    times: int = Field(default=1, ge=1, le=3)


def echo(value: EchoInput) -> str:
    """An effect-free typed tool (1 to 3 repeats): the target of most hostile arguments."""
    return value.text * value.times


class _NoInput(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _secret_operation(value: _NoInput) -> str:
    return "the guarded operation ran"


async def _refuse(authorization: object) -> bool:
    return False


async def _broken_policy(authorization: object) -> bool:
    raise RuntimeError(BROKEN_POLICY_SECRET)


def build_registry(*, ledger: SideEffectLedger, hold_seconds: float = 0.0) -> Registry:
    """Every scenario tool, bound to one ledger."""
    return Registry(
        ApproveWrite(ledger=ledger, hold_seconds=hold_seconds),
        IdempotentWrite(ledger=ledger, hold_seconds=hold_seconds),
        FreeAnswer(),
        Func(echo, name="echo", description="Repeat a text up to three times."),
        Guard(Func(_secret_operation, name="guarded_refused"), _refuse),
        Guard(Func(_secret_operation, name="guarded_broken"), _broken_policy),
    )


def __getattr__(name: str) -> Registry:
    # ``python -m scope_tool.workers --tools reliability._tools:REGISTRY`` reads the attribute; build it on
    # first access so importing the module in the test process needs no environment.
    if name == "REGISTRY":
        registry = build_registry(
            ledger=SideEffectLedger.from_environment(),
            hold_seconds=float(os.environ.get(HOLD_ENV, "0")),
        )
        globals()["REGISTRY"] = registry
        return registry
    raise AttributeError(name)
