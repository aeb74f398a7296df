"""Running ``scope-tool`` as a user does: a subprocess, its exit code and its output."""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass
from pathlib import Path

from ._hostile_inputs import deep_nesting
from ._processes import python_environment

__all__ = ["CLI_ANSWERS", "CLI_REQUESTS", "CliRun", "run_cli"]


CLI_REQUESTS: tuple[tuple[str | bytes, str | bytes], ...] = (
    ("echo", deep_nesting(60_000)),
    ("echo", '{"text":"a","text":"b"}'),
    ("echo", '{"text":"\\ud800"}'),
    ("echo", '{"text":"a","times":' + "9" * 10_000 + "}"),
    ("echo", '{"text":1}'),
    ("echo", b"\xff\xfe\x80{"),
    ("no_such_tool", '{"text":"a"}'),
    ("echo;rm -rf /", '{"text":"a"}'),
)
"""Hostile ``scope-tool call NAME ARGS`` cases. One argument holds at most 128 KiB (a kernel
limit), so the deepest nesting here is 60 000 levels and 1 MiB payloads go through the facade."""

CLI_ANSWERS: tuple[str | bytes, ...] = (
    deep_nesting(60_000),
    '{"approve":true,"approve":false,"key":"k"}',
    '{"approve":true,"key":"\\udc00"}',
    '{"approve":1e999999,"key":"k"}',
    "true",
    b"\xc3\x28",
    "not json",
)
"""Hostile ``scope-tool answer ID JSON`` cases, each sent to a call of ``approve_write``."""


def _command() -> list[str]:
    script = Path(sys.executable).parent / "scope-tool"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "scope_tool.cli"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CliRun:
    """One finished ``scope-tool`` invocation."""

    exit_code: int
    stdout: str
    stderr: str

    def looks_clean(self) -> bool:
        """A refusal a person can act on: something said, no traceback, no "unexpected" defect."""
        text = self.stdout + self.stderr
        return "Traceback" not in text and "unexpected " not in text and bool(text.strip())


async def run_cli(
    *arguments: str | bytes, address: str, task_queue: str, limit_seconds: float = 60.0
) -> CliRun:
    """Run ``scope-tool ARGUMENTS --address A --task-queue Q`` and collect what it printed."""
    process = await asyncio.create_subprocess_exec(
        *_command(),
        *arguments,
        "--address",
        address,
        "--task-queue",
        task_queue,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=python_environment(),
    )
    try:
        stdout, stderr = await asyncio.wait_for(process.communicate(), limit_seconds)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise
    assert process.returncode is not None
    return CliRun(
        exit_code=process.returncode,
        stdout=stdout.decode(errors="replace"),
        stderr=stderr.decode(errors="replace"),
    )
