"""Build and run a worker that executes tool calls: the workflow plus the two activities.

``build_worker`` is what ``python -m workers``, the CLI's ``dev`` command and the tests share.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Collection
from datetime import timedelta

from temporalio.client import Client
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from scope_tool import Registry
from workers._activities import ToolActivities
from workers._notify import Notifier
from workflows import ToolCallWorkflow, with_scope_tool_converter
from workflows._notify_workflow import NotifyWorkflow
from workflows.identity import identity_secret_from_environment, install_identity_secret
from workflows.settings import DEFAULT_TASK_QUEUE

__all__ = ["build_worker", "load_registry", "run_worker", "workflow_runner"]


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
    registry: Registry,
    *,
    task_queue: str = DEFAULT_TASK_QUEUE,
    retry_safe: Collection[str] = (),
    max_concurrent_activities: int | None = None,
    graceful_shutdown: timedelta = timedelta(seconds=30),
    cancel_check_interval: timedelta = timedelta(seconds=1),
    notify_secret: str | None = None,
    notify_allowed: str | None = None,
) -> Worker:
    """A worker for ``task_queue`` running ``ToolCallWorkflow`` and the tools of ``registry``.

    Args:
        client: a connected client; a copy with the scope-tool data converter is used if needed.
        registry: the tools this worker runs.
        task_queue: the queue :class:`workflows.ToolCalls` starts calls on.
        retry_safe: tool names that may run again if their worker is lost mid-round.
        max_concurrent_activities: cap on tools running at once (Temporal's default if None).
        graceful_shutdown: how long a stopping worker lets the tools already running finish
            before cancelling them. Temporal's default is zero, which would turn every deploy
            into "outcome unknown" for the calls inside a tool that is not retry-safe.
        cancel_check_interval: longest gap between heartbeats of a running round; a cancelled
            call's tool learns of it within about this long (one heartbeat RPC per interval).
        notify_secret: signs webhook bodies (HMAC-SHA256, see ``workflows.webhook``).
        notify_allowed: comma-separated URL prefixes webhooks may be sent to (None: any).

    ``SCOPE_TOOL_IDENTITY_SECRET``, when set, is installed as the secret this process's
    workflows verify identity tokens with (``workflows.identity``); unset, an installed one
    is kept.

    Raises:
        IdentityError: ``SCOPE_TOOL_IDENTITY_SECRET`` is set but shorter than 16 bytes.
    """
    if not task_queue:
        raise ValueError("task_queue must be a non-empty string")
    unknown = sorted(name for name in retry_safe if registry.resolve(name) is None)
    if unknown:
        raise ValueError(f"retry_safe names tools the registry does not hold: {', '.join(unknown)}")
    secret = identity_secret_from_environment()
    if secret is not None:
        install_identity_secret(secret)
    activities = ToolActivities(
        registry, retry_safe=retry_safe, cancel_check_interval=cancel_check_interval
    )
    notifier = Notifier(secret=notify_secret, allowed=notify_allowed)
    return Worker(
        with_scope_tool_converter(client),
        task_queue=task_queue,
        workflows=[ToolCallWorkflow, NotifyWorkflow],
        activities=[activities.call_tool, notifier.notify],
        workflow_runner=workflow_runner(),
        max_concurrent_activities=max_concurrent_activities,
        graceful_shutdown_timeout=graceful_shutdown,
        # The SDK holds heartbeats back for up to 80% of the heartbeat timeout; a cancellation
        # only reaches a running tool in a heartbeat's reply, so flush them as often as sent.
        max_heartbeat_throttle_interval=cancel_check_interval,
    )


async def run_worker(
    client: Client,
    registry: Registry,
    *,
    task_queue: str = DEFAULT_TASK_QUEUE,
    retry_safe: Collection[str] = (),
    stop: asyncio.Event | None = None,
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
        await (stop.wait() if stop is not None else asyncio.Event().wait())


def load_registry(spec: str) -> Registry:
    """Import ``module:attribute`` and return it; it must be a ``scope_tool.Registry``.

    Raises:
        ValueError: the spec is malformed, the module or attribute is missing, or the attribute
            is not a Registry (the message names which).
    """
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise ValueError(f"--tools must look like module:attribute, got {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import module {module_name!r} for --tools: {exc}") from exc
    value: object = module
    for part in attribute.split("."):
        if not hasattr(value, part):
            raise ValueError(f"module {module_name!r} has no attribute {attribute!r}")
        value = getattr(value, part)
    if not isinstance(value, Registry):
        raise ValueError(f"{spec} is a {type(value).__name__}, not a scope_tool.Registry")
    return value
