"""A tool that asks with the response schema its arguments name (#17 items 1, 2 and 8).

``ask_with`` round 1 asks ``"answer"`` with ``arguments.schema`` as the response schema (its
``description`` padded with ``arguments.pad`` bytes, to make a huge schema from small
arguments); round 2 completes with ``took <n> bytes`` so a test sees the accepted answer reach
the tool.
"""

from __future__ import annotations

import json
from typing import Any, Final

from scope_tool import Definition, InputRequest, Invocation, Output, Registry, Result

ANY_OF_DECIMALS: Final[dict[str, Any]] = {
    "type": "array",
    "items": {
        "anyOf": [
            {"type": "integer"},
            {"type": "number", "multipleOf": 0.01},
            {"type": "string"},
        ]
    },
}
"""The issue's costly schema: ~1 000 000 steps for a 1 MiB array of decimals."""

MULTIPLE_OF: Final[dict[str, Any]] = {
    "type": "array",
    "items": {"type": "number", "multipleOf": 0.01},
}

RECURSIVE: Final[dict[str, Any]] = {
    "$defs": {"n": {"type": "array", "items": {"$ref": "#/$defs/n"}}},
    "$ref": "#/$defs/n",
}
"""A schema that can recurse, so the schema layer's fixed nesting limit applies."""


class AskWith:
    """Asks once with the schema from its arguments, then reports the answer's size."""

    def definition(self) -> Definition:
        return Definition(
            name="ask_with",
            description="ask with the given response schema",
            input_schema={
                "type": "object",
                "properties": {"schema": {"type": "object"}, "pad": {"type": "integer"}},
                "required": ["schema"],
            },
        )

    async def call(self, invocation: Invocation) -> Result:
        if invocation.continuation is not None:
            size = len(invocation.continuation.response)
            return Result(output=Output.text_output(f"took {size} bytes"))
        arguments = json.loads(invocation.arguments)
        schema = dict(arguments["schema"])
        pad = int(arguments.get("pad", 0))
        if pad:
            schema["description"] = "x" * pad
        return Result(
            input_request=InputRequest(
                prompt=b'"answer"', response_schema=json.dumps(schema), state=b"null"
            )
        )


class Carry:
    """Returns an output of ``output`` bytes, or asks with ``prompt``/``state`` bytes of text.

    The sizes of #17 item 4 (the arguments themselves may be padded with ``pad``).
    """

    def definition(self) -> Definition:
        return Definition(
            name="carry",
            description="produce payloads of the given sizes",
            input_schema={"type": "object"},
        )

    async def call(self, invocation: Invocation) -> Result:
        arguments = json.loads(invocation.arguments)
        if "output" in arguments:
            return Result(output=Output.text_output("o" * int(arguments["output"])))
        if invocation.continuation is not None:
            return Result(output=Output.text_output("answered"))
        return Result(
            input_request=InputRequest(
                prompt=json.dumps("p" * int(arguments["prompt"])),
                response_schema={},
                state=json.dumps("s" * int(arguments["state"])),
            )
        )


class AskTimes:
    """Asks ``times`` questions that take any JSON, then reports each answer's size."""

    def definition(self) -> Definition:
        return Definition(
            name="ask_times",
            description="ask the given number of times",
            input_schema={
                "type": "object",
                "properties": {"times": {"type": "integer", "minimum": 1}},
                "required": ["times"],
            },
        )

    async def call(self, invocation: Invocation) -> Result:
        times = int(json.loads(invocation.arguments)["times"])
        continuation = invocation.continuation
        sizes = [] if continuation is None else json.loads(continuation.state)
        if continuation is not None:
            sizes.append(len(continuation.response))
        if len(sizes) == times:
            return Result(output=Output.text_output(f"took {sizes} bytes"))
        return Result(
            input_request=InputRequest(
                prompt=b'"another answer"', response_schema={}, state=json.dumps(sizes)
            )
        )


REGISTRY = Registry(AskWith(), Carry(), AskTimes())
