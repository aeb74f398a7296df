"""``scope-tool worker --metrics HOST:PORT`` hands the flag to ``python -m scope_tool.workers``."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from e2e._cli import cli_command, free_port

TESTS = Path(__file__).resolve().parents[1]


def _scrape(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as response:
        return str(response.read().decode())


def test_scope_tool_worker_serves_metrics(temporal_address: str, task_queue: str) -> None:
    metrics = f"127.0.0.1:{free_port()}"
    environment = {**os.environ, "PYTHONPATH": str(TESTS)}
    worker = subprocess.Popen(
        cli_command(
            "worker",
            "--tools",
            "runtime.example_tools:REGISTRY",
            "--metrics",
            metrics,
            "--address",
            temporal_address,
            "--task-queue",
            task_queue,
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=environment,
    )
    try:
        deadline = time.monotonic() + 60
        scraped = ""
        while time.monotonic() < deadline and worker.poll() is None:
            try:
                scraped = _scrape(f"http://{metrics}/metrics")
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.2)
                continue
            if f'task_queue="{task_queue}' in scraped:
                break
            time.sleep(0.2)
        alive = worker.poll() is None
    finally:
        worker.send_signal(signal.SIGTERM)
        try:
            _, stderr = worker.communicate(timeout=30)
        finally:
            if worker.poll() is None:
                worker.kill()
                _, stderr = worker.communicate()
    assert alive, stderr
    assert "temporal_" in scraped
    assert f'task_queue="{task_queue}' in scraped
    assert worker.returncode == 0, stderr
