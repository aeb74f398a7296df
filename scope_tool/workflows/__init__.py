"""The workflow side: what runs inside Temporal's workflow tasks, deterministic and I/O free.

:class:`ToolCallWorkflow` runs one logical tool call (``scope_tool.ToolCall`` on the wire);
:class:`NotifyWorkflow` delivers a webhook notice; :class:`CatalogWorkflow` answers which tools
a task queue serves. Only a worker imports this package (:mod:`scope_tool.workers` registers
these workflows); clients import :mod:`scope_tool.client`, which never loads it.

The folder is ``workflows/`` at the repository's top level and installs as
``scope_tool.workflows``: nothing imports it as a bare ``workflows``.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scope_tool.workflows._catalog import CatalogWorkflow
    from scope_tool.workflows._notify_workflow import NotifyWorkflow
    from scope_tool.workflows._workflow import ToolCallWorkflow

__all__ = ["CatalogWorkflow", "NotifyWorkflow", "ToolCallWorkflow"]

_HOMES = {
    "CatalogWorkflow": "scope_tool.workflows._catalog",
    "NotifyWorkflow": "scope_tool.workflows._notify_workflow",
    "ToolCallWorkflow": "scope_tool.workflows._workflow",
}


def __getattr__(name: str) -> Any:
    # Loaded on first use: the client's history reader imports the answer check from this
    # package, and a client import must never load the workflow definitions.
    if name in _HOMES:
        return getattr(import_module(_HOMES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
