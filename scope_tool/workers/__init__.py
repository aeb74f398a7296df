"""Workers for scope-tool: the tool activity, the notify activity and the worker process.

``build_worker(client, registry, task_queue=...)`` returns a :class:`ToolWorker` running the
``scope_tool.ToolCall`` workflow on the task queue and each tool on its own queues;
``python -m scope_tool.workers --tools module:attr`` runs one as a process.
"""

from scope_tool.workers._activities import ToolActivities
from scope_tool.workers._notify import Notifier, notify
from scope_tool.workers._routes import ToolWorker
from scope_tool.workers._worker import build_worker, load_registry, run_worker, workflow_runner

__all__ = [
    "Notifier",
    "ToolActivities",
    "ToolWorker",
    "build_worker",
    "load_registry",
    "notify",
    "run_worker",
    "workflow_runner",
]
