"""The example agent's tools: two typed functions, one of them behind a person's approval.

``write_file`` is an ordinary typed function. The one line that makes every call of it wait
for a person to approve, deny or edit it is the ``require_approval(...)`` around its ``Func``
in ``registry`` below; the function itself does not change.

Files live under ``SCOPE_TOOL_FILES_DIR``, read at call time. ``scope-tool dev`` sets it to the
``files`` folder of its data folder, so under ``scope-tool dev --tools examples.agent.tools:registry``
``notes.txt`` is written to ``.scope-tool/files/notes.txt``; a worker started without the variable
uses ``.scope-tool/agent-files``. ``write_file`` never overwrites: it creates a new file or fails, so a second run of the
same call could never go unnoticed.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, Field

from scope_tool import Failure, FailureKind, Func, Output, Registry, require_approval

__all__ = ["FILES_DIR_ENV", "ReadFile", "WriteFile", "read_file", "registry", "write_file"]

FILES_DIR_ENV = "SCOPE_TOOL_FILES_DIR"
_DEFAULT_FILES_DIR = ".scope-tool/agent-files"


class WriteFile(BaseModel):
    """A new text file to write."""

    path: str = Field(description="file name, relative to the sandbox folder")
    content: str = Field(description="the whole text of the file")


class ReadFile(BaseModel):
    """A file to read."""

    path: str = Field(description="file name, relative to the sandbox folder")


def _refused(text: str) -> Failure:
    return Failure(kind=FailureKind.REJECTED, output=Output.text_output(text))


def _target(relative: str) -> Path:
    root = Path(os.environ.get(FILES_DIR_ENV) or _DEFAULT_FILES_DIR).resolve()
    target = (root / relative).resolve()
    if Path(relative).is_absolute() or target == root or not target.is_relative_to(root):
        raise _refused(f"error: path {relative!r} is outside the sandbox folder")
    return target


def write_file(value: WriteFile) -> str:
    """Create a new text file in the sandbox folder (never overwrites)."""
    target = _target(value.path)
    target.parent.mkdir(parents=True, exist_ok=True)
    data = value.content.encode("utf-8")
    try:
        with target.open("xb") as file:
            file.write(data)
    except FileExistsError:
        raise Failure(
            kind=FailureKind.FAILED,
            output=Output.text_output(f"error: {value.path} already exists; nothing written"),
            cause=FileExistsError(str(target)),
        ) from None
    return f"wrote {len(data)} bytes to {value.path}"


def read_file(value: ReadFile) -> str:
    """Read a text file from the sandbox folder."""
    target = _target(value.path)
    if not target.is_file():
        raise _refused(f"error: {value.path} does not exist")
    return target.read_text(encoding="utf-8")


registry = Registry(
    require_approval(Func(write_file, name="write_file", description="Write a new text file.")),
    Func(read_file, name="read_file", description="Read a text file."),
)
"""Serve it with ``python -m scope_tool.workers --tools examples.agent.tools:registry``."""
