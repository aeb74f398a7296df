"""``make run`` passes options on to ``scope-tool dev``: ``PORT=...`` and ``ARGS="..."``."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _dry_run(*assignments: str, env: dict[str, str] | None = None) -> str:
    """The command ``make run`` would run (``make -n``: nothing starts)."""
    make = shutil.which("make")
    assert make is not None, "make is not installed"
    shown = subprocess.run(
        [make, "-n", "-s", "run", *assignments],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, **(env or {})},
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    return " ".join(shown.stdout.strip().splitlines()[-1].split())


@pytest.mark.parametrize(
    ("assignments", "expected"),
    [
        ((), "scope-tool dev"),
        (("PORT=7244",), "scope-tool dev --port 7244"),
        (("ARGS=--ui-port 8244 --no-inbox",), "scope-tool dev --ui-port 8244 --no-inbox"),
        (("PORT=7244", "ARGS=--no-inbox"), "scope-tool dev --port 7244 --no-inbox"),
    ],
)
def test_make_run_passes_options(assignments: tuple[str, ...], expected: str) -> None:
    assert _dry_run(*assignments).endswith(expected)


def test_a_port_variable_from_the_environment_is_not_taken() -> None:
    """PORT is often set for other programs (PaaS shells); only the make command line counts."""
    assert _dry_run(env={"PORT": "5000"}).endswith("scope-tool dev")
