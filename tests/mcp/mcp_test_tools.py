"""Tools the MCP tests serve, loaded by workers as ``mcp_test_tools:REGISTRY``.

``tests/mcp`` goes on ``PYTHONPATH``; the folder is deliberately no package, so ``import mcp``
keeps meaning the SDK.

``approve_write`` asks a yes/no question, then appends one row to the side-effect ledger
(``SCOPE_MCP_LEDGER``) keyed by its ``key`` argument: the ledger, not the engine, proves the
tool ran exactly once. ``pick`` asks for one of two strategies (a bare enum), ``gate`` asks an
approval-gate decision, ``nested`` asks for a shape no form can hold, ``add`` always completes.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from scope_tool import Definition, Func, InputRequest, Invocation, Output, Registry, Result

LEDGER_ENV = "SCOPE_MCP_LEDGER"


def _json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def _ask(question: str, schema: Any, state: Any = None) -> Result:
    return Result(
        input_request=InputRequest(
            prompt=_json({"question": question}), response_schema=_json(schema), state=_json(state)
        )
    )


def _definition(name: str, properties: dict[str, Any]) -> Definition:
    return Definition(
        name=name,
        description=f"test tool {name}",
        input_schema={
            "type": "object",
            "properties": properties,
            "required": sorted(properties),
            "additionalProperties": False,
        },
    )


def _record(ledger: Path, key: str) -> None:
    with ledger.open("a", encoding="utf-8") as file:
        file.write(f"{key}\n")


class ApproveWrite:
    def definition(self) -> Definition:
        return _definition("approve_write", {"key": {"type": "string", "minLength": 1}})

    async def call(self, invocation: Invocation) -> Result:
        key = json.loads(invocation.arguments)["key"]
        if invocation.continuation is None:
            return _ask(f"Write the record {key}?", {"type": "boolean"})
        if json.loads(invocation.continuation.response) is not True:
            return Result(output=Output.text_output(f"not written: {key} was declined"))
        await asyncio.to_thread(_record, Path(os.environ[LEDGER_ENV]), key)
        return Result(output=Output.json_output(_json({"written": key})))


class Pick:
    def definition(self) -> Definition:
        return _definition("pick", {"service": {"type": "string"}})

    async def call(self, invocation: Invocation) -> Result:
        if invocation.continuation is None:
            return _ask(
                "Which rollout strategy?", {"type": "string", "enum": ["canary", "blue-green"]}
            )
        return Result(
            output=Output.text_output(f"picked {json.loads(invocation.continuation.response)}")
        )


class Gate:
    def definition(self) -> Definition:
        return _definition("gate", {"action": {"type": "string"}})

    async def call(self, invocation: Invocation) -> Result:
        if invocation.continuation is None:
            return _ask(
                "Allow this action?",
                {
                    "type": "object",
                    "properties": {
                        "decision": {"type": "string", "enum": ["approve", "deny", "edit"]},
                        "reason": {"type": "string"},
                        "arguments": {"type": "object"},
                    },
                    "required": ["decision"],
                    "additionalProperties": False,
                },
            )
        return Result(output=Output.json_output(invocation.continuation.response))


class Nested:
    def definition(self) -> Definition:
        return _definition("nested", {"name": {"type": "string"}})

    async def call(self, invocation: Invocation) -> Result:
        if invocation.continuation is None:
            return _ask(
                "Which hosts?",
                {
                    "type": "object",
                    "properties": {"hosts": {"type": "array", "items": {"type": "string"}}},
                    "required": ["hosts"],
                },
            )
        return Result(output=Output.json_output(invocation.continuation.response))


class AddInput(BaseModel):
    a: int
    b: int


async def add(value: AddInput) -> int:
    return value.a + value.b


REGISTRY = Registry(
    ApproveWrite(), Pick(), Gate(), Nested(), Func(add, name="add", description="add two integers")
)
