"""The engine's side of the benchmark tools: ``registry`` holds ``echo``, ``approve`` and
``ask_decimals`` (the verdict benchmark's costly answer).

The engine worker loads it as ``python -m scope_tool.workers --tools bench_tools:registry``. Both tools call
the same plain functions as the baseline's activities (``bench_functions``), so engine and
baseline do identical work and the difference is what each adds around it.
"""

from __future__ import annotations

import json

from bench_functions import DECIMALS_SCHEMA, approval_outcome, approval_prompt, echo_text
from pydantic import BaseModel

from scope_tool import Definition, Func, InputRequest, Invocation, Output, Registry, Result

__all__ = ["Approve", "AskDecimals", "EchoInput", "echo", "registry"]

_APPROVAL_SCHEMA = b'{"type":"boolean"}'


class EchoInput(BaseModel):
    """The text to return."""

    text: str


async def echo(value: EchoInput) -> str:
    """A tool that completes at once: the floor of the engine's per-call cost."""
    return echo_text(value.text)


class Approve:
    """Ask a person to approve ``text`` (round 1), then report the decision (round 2)."""

    def definition(self) -> Definition:
        return Definition(
            name="approve",
            description="Ask a person to approve a text, then report the decision.",
            input_schema={
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
                "additionalProperties": False,
            },
        )

    async def call(self, invocation: Invocation) -> Result:
        text = str(json.loads(invocation.arguments)["text"])
        continuation = invocation.continuation
        if continuation is None:
            return Result(
                input_request=InputRequest(
                    prompt=json.dumps({"question": approval_prompt(text)}).encode(),
                    response_schema=_APPROVAL_SCHEMA,
                    state=json.dumps({"text": text}).encode(),
                )
            )
        approved = json.loads(continuation.response) is True
        return Result(output=Output.text_output(approval_outcome(text, approved=approved)))


class AskDecimals:
    """Ask for ~1 MiB of decimals against ``DECIMALS_SCHEMA`` (round 1), then report its size."""

    def definition(self) -> Definition:
        return Definition(
            name="ask_decimals",
            description="Ask for an array of decimals, then report how many bytes came.",
            input_schema={"type": "object"},
        )

    async def call(self, invocation: Invocation) -> Result:
        continuation = invocation.continuation
        if continuation is None:
            return Result(
                input_request=InputRequest(
                    prompt=b'"decimals, please"',
                    response_schema=json.dumps(DECIMALS_SCHEMA).encode(),
                    state=b"null",
                )
            )
        return Result(output=Output.text_output(f"took {len(continuation.response)} bytes"))


registry = Registry(
    Func(echo, name="echo", description="Return the text unchanged."), Approve(), AskDecimals()
)
