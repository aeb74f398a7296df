"""One home for test helpers: private Temporal servers, worker processes, waiting for phases.

``servers.DedicatedDevServer`` is a dev server a test owns (it may SIGKILL and restart it);
``scope_tool.workers.WorkerProcess`` is ``python -m scope_tool.workers`` as a real child process, started with the
same command line builder the CLI uses (``Settings.worker_command``); ``waiting`` polls a
call's status until a phase or condition holds, failing loudly after a bound.
"""
