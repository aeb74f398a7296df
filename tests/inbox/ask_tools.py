"""Tools for the inbox tests: ``ask`` asks whatever its arguments describe; ``write_note`` is
a plain function behind ``scope_tool.require_approval``.

``ask`` takes ``{"prompt": <any JSON>, "schema": <a JSON Schema>}``; round 1 asks a person with
that prompt and response schema, round 2 completes with the validated answer as JSON details, so
a test reads back exactly what the inbox sent.
"""

from __future__ import annotations

import json
from typing import Any

from helpers.waiting import wait_for_phase
from pydantic import BaseModel

from scope_tool import (
    Definition,
    Func,
    InputRequest,
    Invocation,
    Output,
    Registry,
    Request,
    Result,
    require_approval,
)
from scope_tool.client import Phase, ToolCalls


class Ask:
    """Ask one question given in the arguments; complete with the answer."""

    def definition(self) -> Definition:
        return Definition(
            name="ask",
            description="Ask a person the question in the arguments and return the answer.",
            input_schema={
                "type": "object",
                "properties": {"prompt": {}, "schema": {"type": "object"}},
                "required": ["prompt", "schema"],
            },
        )

    async def call(self, invocation: Invocation) -> Result:
        continuation = invocation.continuation
        if continuation is None:
            arguments = json.loads(invocation.arguments)
            return Result(
                input_request=InputRequest(
                    prompt=json.dumps(arguments["prompt"]).encode(),
                    response_schema=json.dumps(arguments["schema"]).encode(),
                    state=b"{}",
                )
            )
        return Result(output=Output.json_output(continuation.response))


class NoteInput(BaseModel):
    path: str
    content: str


WRITTEN: list[NoteInput] = []
"""What ``write_note`` ran with, in order (the in-process worker shares this process)."""


async def write_note(value: NoteInput) -> str:
    """Write a note (recorded in WRITTEN; nothing touches the disk)."""
    WRITTEN.append(value)
    return f"wrote {len(value.content)} characters to {value.path}"


WRITE_NOTE = require_approval(
    Func(write_note, name="write_note", description="Write a note to a file.")
)
"""The approval gate around a plain function: the inbox renders its three decisions."""

REGISTRY = Registry(Ask(), WRITE_NOTE)


def ask_arguments(prompt: object, schema: object) -> str:
    """The ``arguments`` text of an ``ask`` request."""
    return json.dumps({"prompt": prompt, "schema": schema})


async def start_waiting(
    calls: ToolCalls, call_id: str, prompt: object, schema: object, **options: Any
) -> Any:
    """Start an ``ask`` call and return its status once it waits for an answer."""
    handle = await calls.start(
        Request(name="ask", arguments=ask_arguments(prompt, schema)), call_id=call_id, **options
    )
    return await wait_for_phase(handle, Phase.AWAITING_INPUT)
