"""Fixtures of the production tests (encryption, tracing and metrics, audit trail)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def server_directory(_server_directory: Path) -> Path:
    """The folder of the session's dev server: its SQLite database files are in it."""
    return _server_directory
