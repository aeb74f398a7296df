"""Example tools served by ``scope-tool dev``: ``registry`` holds ``write_file``, ``deploy_plan``, ``add``.

They show the three shapes a tool takes:

* ``add`` is the seed's typed function (:class:`~scope_tool.Func`): it always completes.
* ``write_file`` is resumable: round 1 checks the path and asks a person to approve the EXACT
  content (shown in the prompt, pinned in the checkpoint state); round 2 writes only that content,
  and only if the answer was ``true``. Files go under a sandbox folder (``SCOPE_TOOL_FILES_DIR``,
  default ``.scope-tool/files``); a path that escapes it is refused before anyone is asked.
* ``deploy_plan`` takes three rounds: approve a plan, pick a rollout strategy, confirm. Its
  checkpoint state records the stage, so every re-entry knows where it is without re-running
  earlier steps. The deployment itself is simulated.

A resumable tool implements :class:`~scope_tool.Tool` directly and returns
``Result(input_request=InputRequest(...))``; the runtime re-enters it with
``invocation.continuation`` carrying the state and the validated answer.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from scope_tool import (
    Definition,
    Failure,
    FailureKind,
    Func,
    InputRequest,
    Invocation,
    Output,
    Registry,
    Result,
)

__all__ = ["FILES_DIR_ENV", "DeployPlan", "WriteFile", "add", "registry"]

FILES_DIR_ENV = "SCOPE_TOOL_FILES_DIR"
"""Environment variable naming the folder ``write_file`` may write into."""

_DEFAULT_FILES_DIR = ".scope-tool/files"

_APPROVAL_SCHEMA = b'{"type":"boolean"}'


def _json(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _rejected(text: str) -> Failure:
    return Failure(kind=FailureKind.REJECTED, output=Output.text_output(text))


# --- add: the seed's example ---------------------------------------------------------------


class AddInput(BaseModel):
    """Two integers to add."""

    a: int
    b: int


async def add(value: AddInput) -> int:
    """Add two integers (a tool that always completes)."""
    return value.a + value.b


# --- write_file: one approval ---------------------------------------------------------------


class WriteFile:
    """Write a UTF-8 text file under a sandbox folder once a person approves the exact content.

    Args:
        files_dir: The sandbox; default from ``SCOPE_TOOL_FILES_DIR`` read at call time, so a
            worker started by ``scope-tool dev`` writes under the project data folder.
    """

    def __init__(self, *, files_dir: Path | None = None) -> None:
        self._files_dir = files_dir

    def definition(self) -> Definition:
        """The contract the model sees."""
        return Definition(
            name="write_file",
            description=(
                "Write a text file in the sandbox folder. A person approves the exact content "
                "before anything is written."
            ),
            input_schema={
                "type": "object",
                "properties": {
                    "path": {"type": "string", "minLength": 1, "maxLength": 255},
                    "content": {"type": "string"},
                },
                "required": ["path", "content"],
                "additionalProperties": False,
            },
        )

    def _root(self) -> Path:
        folder = self._files_dir or Path(os.environ.get(FILES_DIR_ENV) or _DEFAULT_FILES_DIR)
        return folder.resolve()

    def _target(self, relative: str) -> Path:
        """The file to write, or a REJECTED failure when the path leaves the sandbox."""
        root = self._root()
        if Path(relative).is_absolute():
            raise _rejected(f"error: path {relative!r} must be relative to the sandbox folder")
        target = (root / relative).resolve()
        if target == root or not target.is_relative_to(root):
            raise _rejected(f"error: path {relative!r} escapes the sandbox folder")
        return target

    async def call(self, invocation: Invocation) -> Result:
        """Round 1 asks; round 2 writes the approved content (or reports the refusal)."""
        arguments = json.loads(invocation.arguments)
        path, content = str(arguments["path"]), str(arguments["content"])
        target = self._target(path)
        continuation = invocation.continuation
        if continuation is None:
            digest = hashlib.sha256(content.encode("utf-8")).hexdigest()
            return Result(
                input_request=InputRequest(
                    prompt=_json(
                        {
                            "question": f"Write this exact content to {path}?",
                            "path": path,
                            "content": content,
                            "sha256": digest,
                        }
                    ),
                    response_schema=_APPROVAL_SCHEMA,
                    state=_json({"path": path, "sha256": digest}),
                )
            )
        state = json.loads(continuation.state)
        approved = json.loads(continuation.response)
        if state.get("path") != path or state.get("sha256") != _sha256(content):
            raise _rejected("error: the content changed after it was approved; nothing written")
        if approved is not True:
            return Result(
                output=Output.text_output(f"not written: the write to {path} was declined")
            )
        size = await asyncio.to_thread(_write, target, content)
        return Result(output=Output.text_output(f"wrote {size} bytes to {path}"))


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _write(target: Path, content: str) -> int:
    target.parent.mkdir(parents=True, exist_ok=True)
    encoded = content.encode("utf-8")
    target.write_bytes(encoded)
    return len(encoded)


# --- deploy_plan: three rounds --------------------------------------------------------------

_STRATEGIES = ("canary", "blue-green", "all-at-once")


class DeployPlan:
    """Plan a (simulated) deployment: approve the plan, pick a strategy, confirm."""

    def definition(self) -> Definition:
        """The contract the model sees."""
        return Definition(
            name="deploy_plan",
            description=(
                "Deploy a service version. A person approves the plan, picks the rollout "
                "strategy and confirms before anything happens (the deployment is simulated)."
            ),
            input_schema={
                "type": "object",
                "properties": {
                    "service": {"type": "string", "pattern": "^[a-z][a-z0-9-]{0,62}$"},
                    "version": {"type": "string", "minLength": 1, "maxLength": 64},
                },
                "required": ["service", "version"],
                "additionalProperties": False,
            },
        )

    async def call(self, invocation: Invocation) -> Result:
        """Dispatch on the checkpoint's stage; each stage asks the next question."""
        arguments = json.loads(invocation.arguments)
        service, version = str(arguments["service"]), str(arguments["version"])
        continuation = invocation.continuation
        if continuation is None:
            plan = [
                f"build {service}:{version}",
                f"run the {service} migrations",
                f"roll {service} out to production",
            ]
            return _ask(
                {"question": f"Approve this plan to deploy {service} {version}?", "plan": plan},
                _APPROVAL_SCHEMA,
                {"stage": "plan"},
            )
        state = json.loads(continuation.state)
        answer = json.loads(continuation.response)
        stage = state.get("stage")
        if stage == "plan":
            if answer is not True:
                raise _rejected(f"deployment of {service} {version} declined at the plan")
            schema = _json({"type": "string", "enum": list(_STRATEGIES)})
            return _ask(
                {"question": "Which rollout strategy?", "options": list(_STRATEGIES)},
                schema,
                {"stage": "strategy"},
            )
        if stage == "strategy":
            strategy = str(answer)
            return _ask(
                {"question": f"Deploy {service} {version} to production now, {strategy}?"},
                _APPROVAL_SCHEMA,
                {"stage": "confirm", "strategy": strategy},
            )
        if stage == "confirm":
            if answer is not True:
                raise _rejected(f"deployment of {service} {version} declined at confirmation")
            report = {
                "service": service,
                "version": version,
                "strategy": state.get("strategy"),
                "status": "deployed (simulated)",
            }
            return Result(output=Output.json_output(_json(report)))
        raise ValueError(f"deploy_plan: unknown checkpoint stage {stage!r}")


def _ask(prompt: dict[str, Any], schema: bytes, state: dict[str, Any]) -> Result:
    return Result(
        input_request=InputRequest(prompt=_json(prompt), response_schema=schema, state=_json(state))
    )


registry = Registry(
    WriteFile(),
    DeployPlan(),
    Func(add, name="add", description="add two integers"),
)
"""The example registry: ``python -m scope_tool.workers --tools examples.tools:registry``."""
