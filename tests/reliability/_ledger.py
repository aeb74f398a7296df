"""The side-effect ledger: the ground truth of what tools actually did.

Workflow histories say what the engine *believes* happened. A lost or duplicated effect is only
visible from outside, so every effectful test tool appends one row to this SQLite file at the
moment of its effect, keyed by the call id it was given. The table deliberately has no unique
constraint: a tool run twice for one call must leave two rows, which the audit then counts as a
duplicate, instead of the database silently hiding it.

Several worker processes write at once; WAL mode and a long busy timeout make that safe.
"""

from __future__ import annotations

import itertools
import os
import sqlite3
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["LEDGER_ENV", "LedgerAudit", "SideEffectLedger"]

LEDGER_ENV = "SCOPE_RELIABILITY_LEDGER"
"""Environment variable naming the ledger file for tools loaded inside a worker process."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS effects (
    call_key     TEXT NOT NULL,
    answered_key TEXT NOT NULL,
    tool         TEXT NOT NULL,
    pid          INTEGER NOT NULL,
    at           REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS inflight (
    call_key TEXT NOT NULL,
    pid      INTEGER NOT NULL,
    at       REAL NOT NULL
)
"""


@dataclass(frozen=True, slots=True, kw_only=True)
class LedgerAudit:
    """What the ledger proves about a set of calls.

    Attributes:
        effects: Total effect rows for the audited calls.
        lost: Calls that reported COMPLETED but left no effect row.
        duplicated: Calls with more than one effect row.
        misrouted: Rows whose answer named a different call than the one that acted on it.
        strangers: Rows for call keys that were not part of the audited set.
    """

    effects: int
    lost: tuple[str, ...]
    duplicated: tuple[str, ...]
    misrouted: tuple[str, ...]
    strangers: tuple[str, ...]


class SideEffectLedger:
    """Append-only record of tool effects in one SQLite file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        with self._connect() as connection:
            connection.execute("PRAGMA journal_mode=wal")
            connection.executescript(_SCHEMA)

    @classmethod
    def from_environment(cls) -> SideEffectLedger:
        """The ledger a worker process was told to write to via :data:`LEDGER_ENV`."""
        value = os.environ.get(LEDGER_ENV)
        if not value:
            raise RuntimeError(f"{LEDGER_ENV} is not set; the test tools need a ledger file")
        return cls(Path(value))

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=60.0, isolation_level=None)

    def record(self, *, call_key: str, answered_key: str, tool: str) -> None:
        """Append one effect row, committed before returning (the effect is now real)."""
        connection = self._connect()
        try:
            connection.execute(
                "INSERT INTO effects (call_key, answered_key, tool, pid, at) VALUES (?, ?, ?, ?, ?)",
                (call_key, answered_key, tool, os.getpid(), time.time()),
            )
        finally:
            connection.close()

    def enter(self, *, call_key: str) -> None:
        """Mark that this process is now inside the tool's effect round for ``call_key``.

        A fault scenario reads these marks after a SIGKILL: exactly those calls were caught
        inside the tool, and each must end ERRORED "outcome unknown", never re-run.
        """
        connection = self._connect()
        try:
            connection.execute(
                "INSERT INTO inflight (call_key, pid, at) VALUES (?, ?, ?)",
                (call_key, os.getpid(), time.time()),
            )
        finally:
            connection.close()

    def leave(self, *, call_key: str) -> None:
        """The tool returned for ``call_key`` in this process; drop its in-flight mark."""
        connection = self._connect()
        try:
            connection.execute(
                "DELETE FROM inflight WHERE call_key = ? AND pid = ?", (call_key, os.getpid())
            )
        finally:
            connection.close()

    def entered_by(self, *, call_key: str) -> tuple[int, ...]:
        """Processes that entered the tool for ``call_key`` and never left (killed inside it)."""
        connection = self._connect()
        try:
            cursor = connection.execute("SELECT pid FROM inflight WHERE call_key = ?", (call_key,))
            return tuple(sorted(int(row[0]) for row in cursor.fetchall()))
        finally:
            connection.close()

    def inflight(self, *, pid: int) -> tuple[str, ...]:
        """Calls whose effect round is running (or was, when killed) in process ``pid``."""
        connection = self._connect()
        try:
            cursor = connection.execute("SELECT call_key FROM inflight WHERE pid = ?", (pid,))
            return tuple(sorted(str(row[0]) for row in cursor.fetchall()))
        finally:
            connection.close()

    def effect_total(self) -> int:
        """How many effect rows exist (cheap progress probe for fault timing)."""
        connection = self._connect()
        try:
            (count,) = connection.execute("SELECT COUNT(*) FROM effects").fetchone()
            return int(count)
        finally:
            connection.close()

    def longest_pause(self) -> float:
        """The longest gap, in seconds, between two consecutive effects (an outage's cost)."""
        connection = self._connect()
        try:
            times = [
                float(row[0]) for row in connection.execute("SELECT at FROM effects ORDER BY at")
            ]
        finally:
            connection.close()
        return max((later - earlier for earlier, later in itertools.pairwise(times)), default=0.0)

    def rows(self) -> tuple[tuple[str, str, str], ...]:
        """Every row as ``(call_key, answered_key, tool)``."""
        connection = self._connect()
        try:
            cursor = connection.execute("SELECT call_key, answered_key, tool FROM effects")
            return tuple((str(a), str(b), str(c)) for a, b, c in cursor.fetchall())
        finally:
            connection.close()

    def effect_counts(self) -> Counter[str]:
        """Effect rows per call key."""
        return Counter(call_key for call_key, _, _ in self.rows())

    def audit(self, *, call_keys: Iterable[str], completed: Iterable[str]) -> LedgerAudit:
        """Check the ledger against what the engine reported.

        Args:
            call_keys: Every call the scenario started.
            completed: The calls whose outcome was COMPLETED; each must have exactly one row.
        """
        expected = set(call_keys)
        rows = self.rows()
        counts = Counter(call_key for call_key, _, _ in rows)
        return LedgerAudit(
            effects=sum(counts[key] for key in expected),
            lost=tuple(sorted(key for key in completed if counts[key] == 0)),
            duplicated=tuple(sorted(key for key in expected if counts[key] > 1)),
            misrouted=tuple(sorted({key for key, answered, _ in rows if key != answered})),
            strangers=tuple(sorted(set(counts) - expected)),
        )
