"""Tools for the agents suite: a gated writer that counts its runs, quick and slow functions."""

from __future__ import annotations

import asyncio
from pathlib import Path

from pydantic import BaseModel, field_validator

from scope_tool import Failure, FailureKind, Func, Output, Registry


class NoteInput(BaseModel):
    ledger: str
    text: str

    @field_validator("text")
    @classmethod
    def no_shouting(cls, value: str) -> str:
        if value.isupper():
            raise ValueError("text must not be all upper case")
        return value


def write_note(value: NoteInput) -> str:
    """Append one line to the ledger file: the test counts lines to count runs."""
    with Path(value.ledger).open("a", encoding="utf-8") as ledger:
        ledger.write(value.text + "\n")
    return f"noted {value.text!r}"


class SleepInput(BaseModel):
    seconds: float
    label: str


async def sleep(value: SleepInput) -> str:
    await asyncio.sleep(value.seconds)
    return f"slept {value.label}"


class FailInput(BaseModel):
    why: str


async def fail(value: FailInput) -> str:
    raise Failure(
        kind=FailureKind.FAILED, output=Output.text_output(value.why), cause=RuntimeError("x")
    )


class BoomInput(BaseModel):
    secret: str


async def boom(value: BoomInput) -> str:
    raise RuntimeError(f"internal detail {value.secret}")


PLAIN = Registry(
    Func(write_note, name="write_note", description="Append a note to a ledger file."),
    Func(sleep, name="sleep", description="Sleep, then say so."),
    Func(fail, name="fail", description="Always fails."),
    Func(boom, name="boom", description="Always errors."),
)

REGISTRY = PLAIN.with_approval(names={"write_note"})
"""``write_note`` asks first (a one-line change: the functions are untouched)."""


def ledger_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []
