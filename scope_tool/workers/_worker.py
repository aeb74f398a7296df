"""Build and run a worker that executes tool calls: the workflows plus the two activities.

``build_worker`` is what ``python -m scope_tool.workers``, the CLI's ``dev`` command and the tests share.
It returns a :class:`ToolWorker`: one Temporal worker on the main task queue (workflows,
notifications, and every tool's rounds offered there first), one per tool queue and per
contract queue (see ``scope_tool.workers._routes``), and one on this process's own queue for the
rounds a tool pinned to it (``RoundContext.pin_next_round``).
"""

from __future__ import annotations

import asyncio
import importlib
import os
import sys
from collections.abc import Callable, Collection, Sequence
from datetime import timedelta
from typing import Final

from temporalio.client import Client
from temporalio.worker import PollerBehaviorAutoscaling, UnsandboxedWorkflowRunner, Worker

from scope_tool import Registry
from scope_tool.config._converter import for_workflow_worker, with_scope_tool_converter
from scope_tool.config.channels import EmailSettings, SlackSettings, ledger_from_env
from scope_tool.config.settings import DEFAULT_TASK_QUEUE
from scope_tool.wire import process_queue
from scope_tool.wire.identity import (
    identity_secret_from_environment,
    install_identity_secret,
    install_worker_identity,
    installed_identity_secret,
)
from scope_tool.workers._activities import Releases, ToolActivities
from scope_tool.workers._channels import Announcer
from scope_tool.workers._check_answer import check_answer
from scope_tool.workers._notify import Notifier
from scope_tool.workers._routes import (
    PinnedRounds,
    RoundsHere,
    ToolWorker,
    new_worker_id,
    route_plan,
)
from scope_tool.workflows._announce import AnnounceWorkflow
from scope_tool.workflows._catalog import CatalogWorkflow
from scope_tool.workflows._notify_workflow import NotifyWorkflow
from scope_tool.workflows._workflow import ToolCallWorkflow

__all__ = ["build_worker", "load_registry", "run_worker", "workflow_runner"]

_TOOL_POLLERS = PollerBehaviorAutoscaling(minimum=1, initial=1, maximum=20)
"""One poll per tool queue while idle (a registry of 20 tools opens ~40 queues), scaled up by
the server's feedback when rounds arrive faster than one poller takes them."""


def workflow_runner() -> UnsandboxedWorkflowRunner:
    """The runner the workflow runs in (also used by replay tests): no sandbox.

    ``ToolCallWorkflow`` is the only workflow a scope-tool worker runs, and it is ours, not the
    user's: user code runs in activities. The sandbox exists to catch non-deterministic workflow
    code as it is written; ours is checked by replaying recorded histories in the test suite.
    Re-importing the workflow module into a fresh sandbox for every call cost ~5 ms of worker CPU
    per call and made a completing call ~25% slower than bare Temporal; without it, faster.
    """
    return UnsandboxedWorkflowRunner()


def build_worker(
    client: Client,
    registry: Registry | Sequence[Registry],
    *,
    task_queue: str = DEFAULT_TASK_QUEUE,
    retry_safe: Collection[str] = (),
    max_concurrent_activities: int | None = None,
    graceful_shutdown: timedelta = timedelta(seconds=30),
    cancel_check_interval: timedelta = timedelta(seconds=1),
    notify_secret: str | None = None,
    notify_allowed: str | None = None,
    announcer: Announcer | None = None,
    pinned_wait: timedelta = timedelta(seconds=60),
) -> ToolWorker:
    """A worker for ``task_queue``: the workflows there, each tool on its own queues.

    Args:
        client: a connected client; a copy with the scope-tool data converter is used if needed.
        registry: the tools this worker runs, or several versions of them, newest first. The
            first registry holding a tool serves that tool's queue (new calls); every version
            serves its own contract's queue, so calls started on an older contract finish on it.
        task_queue: the queue :class:`scope_tool.client.ToolCalls` starts calls on.
        retry_safe: tool names that may run again if their worker is lost mid-round.
        max_concurrent_activities: cap on tools running at once per queue (Temporal's default
            if None).
        graceful_shutdown: how long a stopping worker lets the tools already running finish
            before cancelling them. Temporal's default is zero, which would turn every deploy
            into "outcome unknown" for the calls inside a tool that is not retry-safe.
        cancel_check_interval: longest gap between heartbeats of a running round; a cancelled
            call's tool learns of it within about this long (one heartbeat RPC per interval).
        notify_secret: signs webhook bodies (HMAC-SHA256, see ``scope_tool.config.webhook``).
        notify_allowed: comma-separated URL prefixes webhooks may be sent to (None: any).
        announcer: sends questions by email and Slack (``scope_tool.workers._channels``);
            None reads the channel settings from the environment (``scope_tool.config.channels``).
        pinned_wait: how long a round pinned to this process (``RoundContext.pin_next_round``:
            the gateway's upstream questions) may wait for it before its call ends "outcome
            unknown"; each process polls a queue of its own for them.

    ``SCOPE_TOOL_IDENTITY_SECRET``, when set, is installed as the secret this process's
    workflows verify identity tokens with (``scope_tool.wire.identity``); unset, an installed one
    is kept.

    Raises:
        IdentityError: ``SCOPE_TOOL_IDENTITY_SECRET`` is set but shorter than 16 bytes.
        SettingsError: a channel setting is malformed (the variable is named).
    """
    if not task_queue or "@" in task_queue:
        raise ValueError(
            f"task_queue must be a non-empty string without '@' (tool queues are named"
            f" task_queue@tool), got {task_queue!r}"
        )
    versions = (registry,) if isinstance(registry, Registry) else tuple(registry)
    if not versions or not all(isinstance(each, Registry) for each in versions):
        raise TypeError(
            "registry must be a scope_tool.Registry or a non-empty sequence of them, newest first"
        )
    unknown = sorted(
        name for name in retry_safe if all(each.resolve(name) is None for each in versions)
    )
    if unknown:
        raise ValueError(f"retry_safe names tools the registry does not hold: {', '.join(unknown)}")
    secret = identity_secret_from_environment()
    if secret is not None:
        install_identity_secret(secret)
    install_worker_identity(client.identity)
    client = with_scope_tool_converter(client)
    plan = route_plan(versions, task_queue=task_queue)

    def tool_worker(queue: str, activities: ToolActivities) -> Worker:
        return Worker(
            client,
            task_queue=queue,
            activities=[activities.call_tool],
            max_concurrent_activities=max_concurrent_activities,
            activity_task_poller_behavior=_TOOL_POLLERS,
            graceful_shutdown_timeout=graceful_shutdown,
            # A cancellation only reaches a running tool in a heartbeat's reply: flush them.
            max_heartbeat_throttle_interval=cancel_check_interval,
        )

    worker_id = new_worker_id()
    pinned_queue = process_queue(task_queue, worker_id)
    releases = Releases()
    by_version = [
        ToolActivities(
            each,
            retry_safe=retry_safe,
            cancel_check_interval=cancel_check_interval,
            pinned_queue=pinned_queue,
            pinned_wait=pinned_wait,
            releases=releases,
        )
        for each in versions
    ]
    here = RoundsHere(versions, by_version)
    notifier = Notifier(secret=notify_secret, allowed=notify_allowed)
    if announcer is None:
        announcer = Announcer(
            email=EmailSettings.from_env(),
            slack=SlackSettings.from_env(),
            identity_secret=secret if secret is not None else installed_identity_secret(),
            ledger=ledger_from_env(),
        )
    main = Worker(
        # A signal sealed with other keys is dropped and recorded, not a failed task for good.
        for_workflow_worker(client),
        task_queue=task_queue,
        workflows=[ToolCallWorkflow, NotifyWorkflow, CatalogWorkflow, AnnounceWorkflow],
        # Routed rounds are offered here first (eager dispatch to this very worker when it has a
        # free slot); rounds of calls started before routing still run here as they did.
        activities=[
            here.call_tool_here,
            by_version[0].call_tool,
            notifier.notify,
            check_answer,
            announcer.send_email,
            announcer.post_slack,
        ],
        workflow_runner=workflow_runner(),
        max_concurrent_activities=max_concurrent_activities,
        graceful_shutdown_timeout=graceful_shutdown,
        max_heartbeat_throttle_interval=cancel_check_interval,
    )
    workers = [main]
    workers += [tool_worker(route.queue, by_version[route.version]) for route in plan]
    pinned = PinnedRounds(here, releases)
    workers.append(
        Worker(
            client,
            task_queue=pinned_queue,
            activities=[pinned.call_tool, pinned.release],
            max_concurrent_activities=max_concurrent_activities,
            activity_task_poller_behavior=_TOOL_POLLERS,
            graceful_shutdown_timeout=graceful_shutdown,
            max_heartbeat_throttle_interval=cancel_check_interval,
        )
    )
    return ToolWorker(
        client,
        workers,
        task_queue=task_queue,
        catalog=tuple(route.tool for route in plan if route.tool is not None),
        worker_id=worker_id,
    )


async def run_worker(
    client: Client,
    registry: Registry | Sequence[Registry],
    *,
    task_queue: str = DEFAULT_TASK_QUEUE,
    retry_safe: Collection[str] = (),
    stop: asyncio.Event | None = None,
    on_ready: Callable[[ToolWorker], None] | None = None,
    notify_secret: str | None = None,
    notify_allowed: str | None = None,
) -> None:
    """Run a worker until ``stop`` is set (forever if None); in-flight work drains on the way out."""
    worker = build_worker(
        client,
        registry,
        task_queue=task_queue,
        retry_safe=retry_safe,
        notify_secret=notify_secret,
        notify_allowed=notify_allowed,
    )
    async with worker:
        if on_ready is not None:
            on_ready(worker)
        await (stop.wait() if stop is not None else asyncio.Event().wait())


def load_registry(spec: str) -> Registry:
    """Import ``module:attribute`` and return it; it must be a ``scope_tool.Registry``.

    The module is looked up the way ``python -m`` would: the current folder comes first, so
    ``--tools my_tools:registry`` finds ``./my_tools.py`` from the ``scope-tool`` command too.

    Raises:
        ValueError: the spec is malformed, the module or attribute is missing, or the attribute
            is not a Registry (the message names which, and the new path of a moved module).
    """
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise ValueError(f"--tools must look like module:attribute, got {spec!r}")
    here = os.getcwd()
    if here not in sys.path and "" not in sys.path:
        sys.path.insert(0, here)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        moved = moved_module(module_name)
        if moved is not None:
            raise ValueError(
                f"module {module_name!r} moved: scope-tool installs one package, scope_tool;"
                f" use --tools {moved}:{attribute}"
            ) from exc
        raise ValueError(f"cannot import module {module_name!r} for --tools: {exc}") from exc
    value: object = module
    for part in attribute.split("."):
        if not hasattr(value, part):
            raise ValueError(f"module {module_name!r} has no attribute {attribute!r}")
        value = getattr(value, part)
    if not isinstance(value, Registry):
        raise ValueError(f"{spec} is a {type(value).__name__}, not a scope_tool.Registry")
    return value


_MOVED: Final = {
    "workers.examples": "examples.tools",
    "workers": "scope_tool.workers",
    "workflows": "scope_tool.workflows",
    "scope_tool_cli": "scope_tool.cli",
    "scope_tool_inbox": "scope_tool.inbox",
    "scope_tool_mcp": "scope_tool.mcp",
    "scope_tool_agents": "scope_tool.agents",
}
"""Top-level modules of earlier releases and where they live now."""


def moved_module(module_name: str) -> str | None:
    """The current path of a module an earlier release installed at the top level, else None."""
    for old in sorted(_MOVED, key=len, reverse=True):
        if module_name == old or module_name.startswith(old + "."):
            return _MOVED[old] + module_name[len(old) :]
    return None
