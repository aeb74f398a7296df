"""Tools the runtime tests drive: one per outcome, a multi-round approval, slow tools to crash.

Every tool that has a side effect appends one line to a ledger file named in its arguments, so a
test can count exactly how often each step ran (also across worker processes).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from scope_tool import (
    CallError,
    Definition,
    Failure,
    FailureKind,
    Func,
    Guard,
    InputRequest,
    Invocation,
    Output,
    Registry,
    Result,
)


def _append(ledger: str, line: str) -> None:
    with Path(ledger).open("a", encoding="utf-8") as file:
        file.write(line + "\n")


def ledger_lines(ledger: Path) -> list[str]:
    """The lines a test's tools appended (empty if none ran)."""
    return ledger.read_text(encoding="utf-8").splitlines() if ledger.exists() else []


class EchoInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str


async def echo(value: EchoInput) -> str:
    return f"echo: {value.text}"


class LedgerInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ledger: str
    seconds: float = 0.0


async def fail(value: LedgerInput) -> str:
    raise Failure(
        kind=FailureKind.FAILED,
        output=Output.text_output("error: the disk is full"),
        cause=RuntimeError("ENOSPC on /var"),
    )


async def boom(value: LedgerInput) -> str:
    _append(value.ledger, "boom")
    raise CallError(
        cause=RuntimeError("database connection lost after the insert"),
        evidence=Output.text_output("inserted 3 rows before the connection dropped"),
    )


async def plain_boom(value: LedgerInput) -> str:
    raise ValueError("plain programming error")


async def slow(value: LedgerInput) -> str:
    _append(value.ledger, "start")
    await asyncio.sleep(value.seconds)
    _append(value.ledger, "end")
    return "slow done"


_APPROVAL_SCHEMA = {
    "type": "object",
    "properties": {"approve": {"type": "boolean"}, "note": {"type": "string"}},
    "required": ["approve"],
    "additionalProperties": False,
}
_CONFIRM_SCHEMA = {"type": "string", "enum": ["confirm", "abort"]}


class DeployPlan:
    """Two questions before one write: approve the plan, then confirm the exact write.

    Round 1 computes the plan (ledger ``plan``) and asks for approval; round 2 (approved)
    asks to confirm the exact write (ledger ``prepare``); round 3 performs it (ledger ``write``).
    """

    def __init__(self, *, description: str = "plan, approve and write a deployment file") -> None:
        self._description = description

    def definition(self) -> Definition:
        return Definition(
            name="deploy_plan",
            description=self._description,
            input_schema={
                "type": "object",
                "properties": {"ledger": {"type": "string"}, "service": {"type": "string"}},
                "required": ["ledger", "service"],
                "additionalProperties": False,
            },
        )

    async def call(self, invocation: Invocation) -> Result:
        arguments = json.loads(invocation.arguments)
        ledger, service = arguments["ledger"], arguments["service"]
        continuation = invocation.continuation
        if continuation is None:
            _append(ledger, "plan")
            plan = {"service": service, "replicas": 3}
            return Result(
                input_request=InputRequest(
                    prompt=json.dumps({"question": "approve this plan?", "plan": plan}),
                    response_schema=_APPROVAL_SCHEMA,
                    state=json.dumps({"step": "approve", "plan": plan}),
                )
            )
        state = json.loads(continuation.state)
        response = json.loads(continuation.response)
        if state["step"] == "approve":
            if not response["approve"]:
                return Result(
                    output=Output.text_output("the plan was not approved; nothing written")
                )
            _append(ledger, "prepare")
            write = {"path": f"/etc/{service}.yaml", "content": "replicas: 3"}
            return Result(
                input_request=InputRequest(
                    prompt=json.dumps({"question": "confirm this exact write", "write": write}),
                    response_schema=_CONFIRM_SCHEMA,
                    state=json.dumps({"step": "confirm", "write": write}),
                )
            )
        if response != "confirm":
            return Result(output=Output.text_output("the write was aborted; nothing written"))
        _append(ledger, "write")
        return Result(output=Output.text_output(f"wrote {state['write']['path']}"))


def _refuse(authorization: object) -> bool:
    return False


def build_registry(*, plan_description: str | None = None) -> Registry:
    """The test registry; a different ``plan_description`` changes deploy_plan's contract."""
    plan = DeployPlan() if plan_description is None else DeployPlan(description=plan_description)
    return Registry(
        Func(echo, name="echo", description="echo the text back"),
        Func(fail, name="fail", description="always fails definitely"),
        Func(boom, name="boom", description="fails with evidence of a partial effect"),
        Func(plain_boom, name="plain_boom", description="raises an ordinary exception"),
        Func(slow, name="slow", description="sleeps; not safe to retry"),
        Func(slow, name="slow_safe", description="sleeps; safe to retry"),
        Guard(Func(echo, name="guarded_echo", description="echo, never authorized"), _refuse),
        plan,
    )


REGISTRY = build_registry()
CHANGED_REGISTRY = build_registry(plan_description="a changed contract")
