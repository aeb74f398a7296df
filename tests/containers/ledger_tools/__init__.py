"""A tool for the worker-image deployment test, mounted into the worker containers read-only.

The containers run the project's image unchanged: ``python -m scope_tool.workers --tools
ledger_tools:registry`` finds this package because it is mounted at ``/app/ledger_tools`` and
``python -m`` puts the working folder ``/app`` on ``sys.path``. It imports only ``scope_tool``
and the standard library, since that is all the image holds.

``approve_write`` asks a person once, then performs its effect: it creates one new file under
``$SCOPE_TOOL_FILES_DIR/effects/`` (a folder the host mounts, so the effect is recorded outside
every container and survives ``docker kill``). Each effect is a new file with a unique name, so a
tool run twice for one call leaves two files and a duplicate cannot hide. Around the effect it
keeps a mark in ``inflight/`` naming the call and the container: a mark left behind after a kill
names exactly the calls that were inside the tool when the container died.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import time
import uuid
from pathlib import Path
from typing import Any

from scope_tool import Definition, InputRequest, Invocation, Output, Registry, Result

__all__ = ["registry"]

_INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "key": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,100}$"},
        "hold_ms": {"type": "integer", "minimum": 0, "maximum": 10000},
    },
    "required": ["key"],
    "additionalProperties": False,
}

_ANSWER_SCHEMA = {
    "type": "object",
    "properties": {"approve": {"type": "boolean"}, "key": {"type": "string"}},
    "required": ["approve", "key"],
    "additionalProperties": False,
}


def _ledger() -> Path:
    return Path(os.environ["SCOPE_TOOL_FILES_DIR"])


def _write_new(path: Path, payload: dict[str, Any]) -> None:
    """Create ``path`` (never overwrite) with ``payload`` and flush it to the file system."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(descriptor, json.dumps(payload).encode())
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


class ApproveWrite:
    """Ask once; on approval create one effect file (not retry-safe)."""

    def definition(self) -> Definition:
        return Definition(
            name="approve_write",
            description="Record a write once a person approves it.",
            input_schema=json.dumps(_INPUT_SCHEMA).encode(),
        )

    async def call(self, invocation: Invocation) -> Result:
        arguments = json.loads(invocation.arguments)
        key = str(arguments["key"])
        hold = int(arguments.get("hold_ms", 0)) / 1000
        continuation = invocation.continuation
        if continuation is None:
            return Result(
                input_request=InputRequest(
                    prompt=json.dumps({"question": f"write {key}?"}).encode(),
                    response_schema=json.dumps(_ANSWER_SCHEMA).encode(),
                    state=json.dumps({"key": key}).encode(),
                )
            )
        answer = json.loads(continuation.response)
        if not answer["approve"]:
            return Result(output=Output.text_output(f"not written: {key} was declined"))
        host = socket.gethostname()
        mark = _ledger() / "inflight" / f"{key}@{host}"
        await asyncio.to_thread(_write_new, mark, {"key": key, "host": host})
        await asyncio.sleep(hold / 2)
        effect = {
            "key": key,
            "answered_key": str(answer["key"]),
            "host": host,
            "uid": os.getuid(),
            "pid": os.getpid(),
            "at": time.time(),
        }
        await asyncio.to_thread(
            _write_new, _ledger() / "effects" / f"{key}.{uuid.uuid4().hex}", effect
        )
        await asyncio.sleep(hold / 2)
        await asyncio.to_thread(mark.unlink)
        return Result(output=Output.text_output(f"wrote {key}"))


registry = Registry(ApproveWrite())
"""``python -m scope_tool.workers --tools ledger_tools:registry``."""
