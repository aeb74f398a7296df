"""Fixtures of the end-to-end tests: one real ``scope-tool dev`` shared by the session.

``dev_session`` starts ``python -m scope_tool.cli dev`` on random free ports with a temporary data
folder and waits for its ready line; if it does not come the tests FAIL with the command's
output (they never skip). On teardown it sends SIGINT and checks the server process is gone.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest

from ._cli import DevProcess, start_dev, wait_until_gone


@pytest.fixture(scope="session")
def dev_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevProcess]:
    """One ``scope-tool dev`` shared by the flow and browser tests."""
    dev = start_dev(tmp_path_factory.mktemp("scope-tool-dev"))
    try:
        yield dev
    finally:
        server_pid = int(str(dev.lock_facts().get("server_pid", 0)))
        dev.stop(signal.SIGINT)
        assert wait_until_gone(server_pid), "the dev server outlived scope-tool dev"
