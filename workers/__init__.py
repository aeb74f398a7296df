"""Workers for scope-tool: the tool activity, the notify activity and the worker process.

``build_worker(client, registry, task_queue=...)`` returns a :class:`ToolWorker` running the
``scope_tool.ToolCall`` workflow on the task queue and each tool on its own queues;
``python -m workers --tools module:attr`` runs one as a process.
"""

from workers._activities import ToolActivities
from workers._notify import Notifier, notify
from workers._routes import ToolWorker
from workers._worker import build_worker, load_registry, run_worker, workflow_runner

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
