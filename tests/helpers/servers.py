"""A Temporal dev server that a test owns outright: it can SIGKILL it and bring it back.

The shared ``temporal_address`` fixture is a server every test leans on, so no test may kill
it. Fault scenarios need their own; the one implementation is the testing kit's
:class:`scope_tool.testing.DevServerProcess`, under the name these suites have always used.
"""

from __future__ import annotations

from scope_tool.testing import DevServerProcess as DedicatedDevServer
from scope_tool.testing import free_port

__all__ = ["DedicatedDevServer", "free_port"]
