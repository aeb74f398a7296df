"""``scope-tool dev``: a dev server, a worker with the example tools and the inbox, one Ctrl-C.

The supervisor starts the Temporal dev server child, waits until it answers a real client
connection, starts ``python -m scope_tool.workers`` with the example registry as a second child, serves the
inbox in-process when it is installed, prints where everything is, then waits for Ctrl-C,
SIGTERM, or a child dying. Shutdown runs in reverse order (inbox, worker, server) and removes the
lock, so nothing outlives the command.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import os
import signal
import subprocess
import time
import urllib.parse
from collections.abc import Sequence
from pathlib import Path

from scope_tool.cli._mcp import gateway_tools, start_dev_mcp
from scope_tool.client import ToolCalls
from scope_tool.config.settings import Settings
from scope_tool.serving._connection import settings_from_args
from scope_tool.serving._dev_server import (
    DevLock,
    DevServerSettings,
    log_tail,
    port_is_free,
    spawn_supervised,
    start_dev_server,
    stop_process,
)
from scope_tool.serving._errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE, CommandError
from scope_tool.serving.codec_server import dev_codec_server

__all__ = ["EXAMPLE_TOOLS", "READY_LINE", "dev_ports", "run_dev", "waiting_calls_url"]

EXAMPLE_TOOLS = "examples.tools:registry"
"""The registry ``dev`` serves unless ``--tools`` names another."""

READY_LINE = "scope-tool dev is ready"
"""Printed once everything answers; scripts and tests wait for it."""

_STARTUP_SECONDS = 60.0
_WORKER_READY = "worker ready"
_MAX_WORKER_RESTARTS = 3
_RESTART_WINDOW_SECONDS = 60.0
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""Ctrl-C, a supervisor's stop, a closed terminal: each stops the whole tree in order."""


def waiting_calls_url(ui_base: str, namespace: str = "default") -> str:
    """The Web UI's workflow list filtered to calls waiting for a person."""
    query = urllib.parse.quote('ScopeToolPhase="AWAITING_INPUT"', safe="")
    return f"{ui_base}/namespaces/{namespace}/workflows?query={query}"


_UI_OFFSET = 1000
"""Temporal's own layout: frontend 7233, Web UI 8233."""


def dev_ports(args: argparse.Namespace) -> tuple[int, int, int, int]:
    """Temporal, Web UI, inbox and codec server ports: each not given follows the one before.

    The Web UI is ``--port`` + 1000, the inbox the Web UI's + 1 and the codec server its + 2, so
    ``--port 7244`` moves them all (8244, 8245, 8246) and ``--ui-port 8244`` the last two.
    """
    ui_port = args.ui_port if args.ui_port is not None else args.port + _UI_OFFSET
    inbox_port = args.inbox_port if args.inbox_port is not None else ui_port + 1
    codec_port = args.codec_port if args.codec_port is not None else ui_port + 2
    return args.port, ui_port, inbox_port, codec_port


def _check_ports(args: argparse.Namespace, *, ip: str) -> None:
    """Refuse a port that is not one, or that something listens on, before anything starts."""
    wanted = [("--port", args.port), ("--ui-port", args.ui_port)]
    if not args.no_inbox:
        wanted.append(("--inbox-port (or --no-inbox)", args.inbox_port))
    if getattr(args, "mcp_port", None):
        wanted.append(("--mcp-port", args.mcp_port))
    for flag, port in wanted:
        if not 0 < port < 65536:
            raise CommandError(f"{flag} must be a TCP port, got {port}", exit_code=EXIT_USAGE)
    for flag, port in wanted:
        if not port_is_free(ip, port):
            raise CommandError(
                f"port {port} on {ip} is already in use (another `scope-tool dev`?); "
                f"choose another with {flag}, or move every port with --port",
                exit_code=EXIT_FAILED,
            )


def _print(text: str = "") -> None:
    print(text, flush=True)


async def _wait_until_serving(
    server: subprocess.Popen[bytes], settings: DevServerSettings, task_queue: str
) -> ToolCalls:
    """Connect a real client (retrying) until the frontend answers; fail fast if the child died."""
    address = f"{settings.ip}:{settings.port}"
    deadline = time.monotonic() + _STARTUP_SECONDS
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise CommandError(
                f"the Temporal dev server exited with code {server.returncode} while starting; "
                f"its log ({settings.log_file}) ends with:\n{log_tail(settings.log_file)}"
            )
        try:
            return await ToolCalls.from_settings(Settings(address=address, task_queue=task_queue))
        except Exception as error:
            last_error = error
            await asyncio.sleep(0.2)
    raise CommandError(
        f"the Temporal dev server did not answer on {address} within {_STARTUP_SECONDS:g}s "
        f"({last_error}); see {settings.log_file}"
    )


async def _wait_for_port(ip: str, port: int, what: str) -> None:
    deadline = time.monotonic() + _STARTUP_SECONDS
    while time.monotonic() < deadline:
        if not port_is_free(ip, port):
            return
        await asyncio.sleep(0.1)
    raise CommandError(f"the {what} did not start listening on {ip}:{port}")


async def _wait_for_task_port(task: asyncio.Task[None], ip: str, port: int) -> None:
    """Until the server ``task`` runs listens on ``port``, or has ended (supervision reports
    why), or the start-up time is over."""
    deadline = time.monotonic() + _STARTUP_SECONDS
    while time.monotonic() < deadline and not task.done():
        if not port_is_free(ip, port):
            return
        await asyncio.sleep(0.05)


def _start_worker(
    *,
    settings: DevServerSettings,
    tools: Sequence[str],
    task_queue: str,
    metrics: str | None = None,
    gateway: str | None = None,
) -> subprocess.Popen[bytes]:
    command, variables = Settings(
        address=f"{settings.ip}:{settings.port}", task_queue=task_queue
    ).worker_command(tools, metrics=metrics, gateway=gateway)
    environment = {**os.environ, **variables}
    environment.setdefault("SCOPE_TOOL_FILES_DIR", str(settings.data_dir / "files"))
    environment.setdefault("SCOPE_TOOL_CHANNEL_LEDGER", str(settings.data_dir / "channel-sent"))
    for name in ("SCOPE_TOOL_NAMESPACE", "SCOPE_TOOL_TLS", "SCOPE_TOOL_API_KEY"):
        environment.pop(name, None)  # the embedded dev server: default namespace, plain text
    return spawn_supervised(
        tuple(command),
        log_file=settings.data_dir / "worker.log",
        env=environment,
        death_signal=signal.SIGKILL,
    )


async def _wait_for_worker(worker: subprocess.Popen[bytes], log_file: Path) -> None:
    """Wait for the worker's "worker ready" line, so the first call runs at once."""
    deadline = time.monotonic() + _STARTUP_SECONDS
    while time.monotonic() < deadline:
        if worker.poll() is not None:
            raise CommandError(
                f"the worker exited with code {worker.returncode} while starting; "
                f"its log ({log_file}) ends with:\n{log_tail(log_file)}"
            )
        if _WORKER_READY in log_tail(log_file, lines=50):
            return
        await asyncio.sleep(0.1)
    raise CommandError(
        f"the worker did not report ready within {_STARTUP_SECONDS:g}s; see {log_file}"
    )


def _start_inbox(
    calls: ToolCalls, *, ip: str, port: int, web_ui_url: str
) -> asyncio.Task[None] | str:
    """The inbox as a task, or the reason it is not available (the dev loop goes on without it)."""
    try:
        from scope_tool.inbox import InboxOptions, serve_inbox
    except ImportError as error:
        from scope_tool.cli._serve import inbox_missing

        return inbox_missing(error)
    if not port_is_free(ip, port):
        return f"not started: port {port} is in use (choose another with --inbox-port)"
    return asyncio.create_task(
        serve_inbox(
            calls, InboxOptions(host=ip, port=port, dev_loopback=True, web_ui_url=web_ui_url)
        )
    )


def _settings(args: argparse.Namespace) -> DevServerSettings:
    return DevServerSettings(
        data_dir=Path(args.data_dir).resolve(), port=args.port, ui_port=args.ui_port
    )


class _Children:
    """The processes ``dev`` owns; a crashed worker is replaced, within limits."""

    def __init__(self, *, settings: DevServerSettings, args: argparse.Namespace) -> None:
        self.settings = settings
        self.args = args
        self.server: subprocess.Popen[bytes] | None = None
        self.worker: subprocess.Popen[bytes] | None = None
        self.inbox: asyncio.Task[None] | str = "not started"
        self.mcp: asyncio.Task[None] | str | None = None  # only with --mcp-port
        self.worker_crashes: list[float] = []

    @property
    def worker_log(self) -> Path:
        return self.settings.data_dir / "worker.log"

    def start_worker(self) -> subprocess.Popen[bytes]:
        self.worker = _start_worker(
            settings=self.settings,
            tools=self.args.tools or [EXAMPLE_TOOLS],
            task_queue=self.args.task_queue,
            metrics=self.args.metrics,
            gateway=_gateway_path(self.args),
        )
        return self.worker

    def facts(self) -> dict[str, object]:
        """What the lock file says, for a second ``dev`` and for tests."""
        return {
            "pid": os.getpid(),
            "port": self.args.port,
            "ui_port": self.args.ui_port,
            "server_pid": self.server.pid if self.server else None,
            "worker_pid": self.worker.pid if self.worker else None,
            "inbox_port": self.args.inbox_port if isinstance(self.inbox, asyncio.Task) else None,
        }

    async def stop_all(self) -> None:
        """MCP and inbox, then worker, then server: nothing is left polling a stopped server."""
        if isinstance(self.mcp, asyncio.Task):
            self.mcp.cancel()
            with contextlib.suppress(BaseException):
                await self.mcp
        if isinstance(self.inbox, asyncio.Task):
            self.inbox.cancel()
            with contextlib.suppress(BaseException):
                await self.inbox
        if self.worker is not None:
            await asyncio.to_thread(stop_process, self.worker)
        if self.server is not None:
            await asyncio.to_thread(stop_process, self.server)


async def run_dev(args: argparse.Namespace) -> int:
    """Run everything until Ctrl-C / SIGTERM / SIGHUP; return 0 after a clean stop."""
    _, args.ui_port, args.inbox_port, args.codec_port = dev_ports(args)
    # The task queue: --task-queue, else SCOPE_TOOL_TASK_QUEUE, else the default.
    args.task_queue = settings_from_args(args).task_queue
    settings = _settings(args)
    lock = DevLock(settings.data_dir)
    lock.acquire()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in _STOP_SIGNALS:
        loop.add_signal_handler(signum, stop.set)
    children = _Children(settings=settings, args=args)
    codec_server = None
    try:
        _check_ports(args, ip=settings.ip)  # after the lock: "already running" says more
        codec_server = dev_codec_server(ip=settings.ip, port=args.codec_port, ui_port=args.ui_port)
        if codec_server is not None:  # encryption on: the Web UI decrypts through it
            settings = dataclasses.replace(settings, ui_codec_endpoint=codec_server.url)
            children.settings = settings
        children.server = server = start_dev_server(settings)
        lock.record(**children.facts())
        calls = await _wait_until_serving(server, settings, args.task_queue)
        await _wait_for_port(settings.ip, settings.ui_port, "Web UI")
        await _wait_for_worker(children.start_worker(), children.worker_log)
        if not args.no_inbox:
            children.inbox = _start_inbox(
                calls,
                ip=settings.ip,
                port=args.inbox_port,
                web_ui_url=f"http://localhost:{settings.ui_port}",
            )
        if getattr(args, "mcp_port", None):
            inbox_url = f"http://localhost:{args.inbox_port}" if not args.no_inbox else None
            children.mcp = start_dev_mcp(
                calls,
                tools=(args.tools or [EXAMPLE_TOOLS])[0],  # the newest version's contracts
                gateway=await gateway_tools(gateway) if (gateway := _gateway_path(args)) else None,
                ip=settings.ip,
                port=args.mcp_port,
                data_dir=settings.data_dir,
                inbox_url=inbox_url,
            )
        # The banner names their addresses: it is printed once they accept connections.
        if isinstance(children.inbox, asyncio.Task):
            await _wait_for_task_port(children.inbox, settings.ip, args.inbox_port)
        if isinstance(children.mcp, asyncio.Task):
            await _wait_for_task_port(children.mcp, settings.ip, args.mcp_port)
        lock.record(**children.facts())
        _announce(settings, args, children.inbox, mcp=children.mcp)
        return await _supervise(stop, children=children, lock=lock)
    finally:
        for signum in _STOP_SIGNALS:
            loop.remove_signal_handler(signum)
        await children.stop_all()
        if codec_server is not None:
            codec_server.stop()
        lock.release()


async def _supervise(stop: asyncio.Event, *, children: _Children, lock: DevLock) -> int:
    """Wait for a stop signal; restart a crashed worker, stop if the server dies."""
    inbox_reported = False
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=0.5)
        if stop.is_set():
            break
        server, worker, inbox = children.server, children.worker, children.inbox
        if server is not None and server.poll() is not None:
            _print(f"the Temporal dev server stopped (code {server.returncode}); stopping.")
            _print(log_tail(children.settings.log_file))
            return EXIT_FAILED
        if worker is not None and worker.poll() is not None:
            if not _may_restart(children):
                _print(
                    f"the worker keeps stopping (code {worker.returncode}, "
                    f"{_MAX_WORKER_RESTARTS} times within {_RESTART_WINDOW_SECONDS:g}s); "
                    f"stopping. {children.worker_log} ends with:"
                )
                _print(log_tail(children.worker_log))
                return EXIT_FAILED
            _print(
                f"the worker stopped (code {worker.returncode}); restarting it "
                "(calls wait in Temporal meanwhile, nothing is lost)"
            )
            children.start_worker()
            lock.record(**children.facts())
        if isinstance(inbox, asyncio.Task) and inbox.done() and not inbox_reported:
            inbox_reported = True
            problem = inbox.exception() if not inbox.cancelled() else None
            _print(f"the inbox stopped ({problem or 'finished'}); the rest keeps running")
    _print("stopping: worker, then the Temporal dev server ...")
    return EXIT_OK


def _may_restart(children: _Children) -> bool:
    now = time.monotonic()
    recent = [at for at in children.worker_crashes if now - at < _RESTART_WINDOW_SECONDS]
    recent.append(now)
    children.worker_crashes = recent
    return len(recent) < _MAX_WORKER_RESTARTS


def _gateway_path(args: argparse.Namespace) -> str | None:
    """``--gateway``, absolute: the worker may run from another folder than the config's."""
    gateway: str | None = getattr(args, "gateway", None)
    return str(Path(gateway).resolve()) if gateway else None


def _first_call(tools: Sequence[str] | None, connection: str) -> list[str]:
    """What to try from a second terminal: a call of a tool this dev's registry has.

    The example registry's ``write_file`` asks a yes/no question, answered ``true``. Another
    registry's first tool is called with ``--wait``, which prints the exact command that answers
    whatever it asks (an approval gate's decision included), from the question's own schema.
    """
    if not tools or tools[0] == EXAMPLE_TOOLS:
        return [
            "From a second terminal, make a first call and approve it:",
            f'  scope-tool call write_file \'{{"path": "hello.txt", "content": "hi"}}\''
            f" --id first-call --wait{connection}",
            f"  scope-tool pending{connection}",
            f"  scope-tool answer first-call true{connection}",
        ]
    from scope_tool.cli._render import example_json
    from scope_tool.workers import load_registry

    try:
        definitions = load_registry(tools[0]).definitions()
    except Exception:  # the worker reported ready with it; a banner is no place to fail
        definitions = []
    if not definitions:
        return [f"From a second terminal, list the tools served: scope-tool tools{connection}"]
    first = definitions[0]
    return [
        "From a second terminal, make a first call (--wait prints the command that answers"
        " any question it asks):",
        f"  scope-tool call {first.name} '{example_json(first.input_schema)}'"
        f" --id first-call --wait{connection}",
        f"  scope-tool tools{connection}   (every tool served, with its input schema: --json)",
    ]


def _announce(
    settings: DevServerSettings,
    args: argparse.Namespace,
    inbox: asyncio.Task[None] | str,
    *,
    mcp: asyncio.Task[None] | str | None = None,
) -> None:
    ui = f"http://localhost:{settings.ui_port}"
    address = f"localhost:{settings.port}"
    connection = "" if settings.port == 7233 else f" --address {address}"
    _print(f"Temporal dev server  {address}   (data: {settings.db_file})")
    _print(f"Temporal Web UI      {ui}")
    _print(f"Waiting for input    {waiting_calls_url(ui)}")
    if isinstance(inbox, asyncio.Task):
        _print(f"Inbox                http://localhost:{args.inbox_port}")
    else:
        _print(f"Inbox                {inbox}")
    if isinstance(mcp, asyncio.Task):
        _print(f"MCP (HTTP)           http://localhost:{args.mcp_port}/mcp")
    elif mcp is not None:
        _print(f"MCP (HTTP)           {mcp}")
    gateway = _gateway_path(args)
    tools = f"of gateway {gateway}" if gateway else " + ".join(args.tools or [EXAMPLE_TOOLS])
    _print(f"Worker               tools {tools}, task queue {args.task_queue}")
    if settings.ui_codec_endpoint:
        _print(f"Codec server         {settings.ui_codec_endpoint} (payloads are encrypted)")
    if args.metrics:
        _print(f"Worker metrics       http://{args.metrics}/metrics")
    _print(f"Logs                 {settings.log_file}, {settings.data_dir / 'worker.log'}")
    _print()
    first = (
        [
            "From a second terminal, list the upstream tools served and call one:",
            f"  scope-tool tools{connection}",
        ]
        if gateway
        else _first_call(args.tools, connection)
    )
    for line in first:
        _print(line)
    _print()
    _print(f"{READY_LINE} (pid {os.getpid()}); Ctrl-C stops everything.")
