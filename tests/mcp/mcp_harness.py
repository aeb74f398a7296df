"""Real processes for the MCP tests: workers, ``scope-tool mcp`` over stdio and over HTTP.

Every process is a real subprocess that a test can SIGKILL (a crash, not a shutdown). The stdio
server is started by the SDK's own client through a tiny shell that records the server's pid
and then ``exec``s it, so the pid is the server's own.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp import StdioServerParameters
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from pydantic import ConfigDict

HERE = Path(__file__).resolve().parent
REPOSITORY = HERE.parent.parent
TOOLS = "mcp_test_tools:REGISTRY"
TASKS = "io.modelcontextprotocol/tasks"


def environment(**extra: str) -> dict[str, str]:
    """A child Python's environment: the test tools importable, output unbuffered."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH", "")]))
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass(slots=True, kw_only=True)
class Process:
    """One child process with its output in a log file."""

    command: list[str]
    log: Path
    env: dict[str, str]
    ready_text: str
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> Process:
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                self.command,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self.env,
                cwd=self.env.get("SCOPE_MCP_CWD", str(REPOSITORY)),
                start_new_session=True,
            )
        return self

    async def ready(self, within: float = 60.0) -> Process:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            if self.ready_text in self.text():
                return self
            assert self.process is not None
            if self.process.poll() is not None:
                raise AssertionError(f"{self.command[:4]} exited early:\n{self.text()}")
            await asyncio.sleep(0.05)
        raise AssertionError(f"{self.command[:4]} not ready after {within} s:\n{self.text()}")

    def text(self) -> str:
        return self.log.read_text("utf-8", "replace") if self.log.exists() else ""

    def kill(self) -> None:
        """SIGKILL the whole process group: a crash."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()


def worker(address: str, task_queue: str, tmp: Path, ledger: Path, name: str = "worker") -> Process:
    return Process(
        command=[
            sys.executable,
            "-m",
            "scope_tool.workers",
            "--tools",
            TOOLS,
            "--address",
            address,
            "--task-queue",
            task_queue,
        ],
        log=tmp / f"{name}.log",
        env=environment(SCOPE_MCP_LEDGER=str(ledger)),
        ready_text="worker ready",
    )


def mcp_command(address: str, task_queue: str, tmp: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "scope_tool.cli",
        "mcp",
        "--tools",
        TOOLS,
        "--address",
        address,
        "--task-queue",
        task_queue,
        "--state-key-file",
        str(tmp / "mcp-state.key"),
        "--wait",
        "3",
        *extra,
    ]


def http_server(
    address: str,
    task_queue: str,
    tmp: Path,
    port: int,
    *extra: str,
    name: str = "mcp",
    host: str = "127.0.0.1",
    env: dict[str, str] | None = None,
) -> Process:
    return Process(
        command=mcp_command(address, task_queue, tmp, "--http", f"{host}:{port}", *extra),
        log=tmp / f"{name}.log",
        env=environment(**(env or {})),
        ready_text="listening on",
    )


def stdio_parameters(
    address: str, task_queue: str, tmp: Path, pid_file: Path, *extra: str
) -> StdioServerParameters:
    """Launch ``scope-tool mcp`` over stdio through ``sh`` that records the pid, then execs."""
    command = " ".join(_quote(part) for part in mcp_command(address, task_queue, tmp, *extra))
    return StdioServerParameters(
        command="/bin/sh",
        args=[
            "-c",
            f"echo $$ > {_quote(str(pid_file))}; exec {command} 2>>{_quote(str(tmp / 'stdio.log'))}",
        ],
        env=environment(),
        cwd=str(REPOSITORY),
    )


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def kill_pid_file(pid_file: Path) -> None:
    pid = int(pid_file.read_text().strip())
    os.kill(pid, signal.SIGKILL)
    for _ in range(200):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)


# --- the tasks extension, as a client speaks it (the SDK has no task runtime) ----------------


class CreatedTask(types.Result):
    """``resultType: "task"``: the task handle a ``tools/call`` returned."""

    model_config = ConfigDict(extra="allow")
    result_type: Any = "task"
    task_id: str
    status: str


class TaskSnapshot(types.Result):
    """A ``tasks/get`` result (a DetailedTask)."""

    model_config = ConfigDict(extra="allow")
    task_id: str
    status: str
    input_requests: dict[str, Any] | None = None
    result: dict[str, Any] | None = None


class TaskIdParams(types.RequestParams):
    task_id: str


class UpdateParams(TaskIdParams):
    input_responses: dict[str, Any]


class GetTask(types.Request[TaskIdParams, str]):
    method: str = "tasks/get"
    params: TaskIdParams


class UpdateTask(types.Request[UpdateParams, str]):
    method: str = "tasks/update"
    params: UpdateParams


class CancelTask(types.Request[TaskIdParams, str]):
    method: str = "tasks/cancel"
    params: TaskIdParams


async def _unresolved(result: Any, ctx: ClaimContext) -> types.CallToolResult:
    raise AssertionError("tests read task handles with allow_claimed=True")


@dataclass
class TasksExtension(ClientExtension):
    """Declares the tasks extension and claims ``resultType: "task"`` results."""

    identifier: str = TASKS
    _claims: list[Any] = field(default_factory=list)

    def claims(self) -> Any:
        from typing import Literal

        class Claimed(CreatedTask):
            result_type: Literal["task"] = "task"

        return [ResultClaim(result_type="task", model=Claimed, resolve=_unresolved)]


async def get_task(session: Any, task_id: str) -> TaskSnapshot:
    result: TaskSnapshot = await session.send_request(
        GetTask(params=TaskIdParams(task_id=task_id)), TaskSnapshot
    )
    return result


async def update_task(session: Any, task_id: str, responses: dict[str, Any]) -> None:
    await session.send_request(
        UpdateTask(params=UpdateParams(task_id=task_id, input_responses=responses)),
        types.EmptyResult,
    )


async def wait_task(
    session: Any, task_id: str, *, until: set[str], within: float = 60.0
) -> TaskSnapshot:
    deadline = time.monotonic() + within
    while True:
        snapshot = await get_task(session, task_id)
        if snapshot.status in until:
            return snapshot
        if time.monotonic() > deadline:
            raise AssertionError(f"task {task_id} still {snapshot.status} after {within} s")
        await asyncio.sleep(0.2)
