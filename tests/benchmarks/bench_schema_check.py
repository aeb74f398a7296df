"""Checking a ~1 MiB answer of decimals: the fast exact engine against python-jsonschema.

The issue's probe (#17 item 1): ``[1.23, ...]`` just under ``MAX_INPUT_BYTES`` against an
``items``/``anyOf``/``multipleOf`` schema took 3.6 s to accept and 5.7 s to refuse inside
workflow code, which must yield within 2 s. "before" is what ``validate`` did then for a
value with decimals (``parse_ijson`` + python-jsonschema with exact numbers, still available
as the exact engine); "after" is ``CompiledSchema.validate`` now. Each figure is the best of
``SCOPE_TOOL_BENCH_SCHEMA_RUNS`` runs (default 3), since the machine is shared.

Run alone: ``.venv/bin/python tests/benchmarks/bench_schema_check.py``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from scope_tool._ijson import MAX_INPUT_BYTES, parse_ijson
from scope_tool._schema import CompiledSchema, SchemaValidationError
from scope_tool._schema_exact import first_error

ANYOF = (
    b'{"type":"array","items":{"anyOf":[{"type":"integer"},'
    b'{"type":"number","multipleOf":0.01},{"type":"string"}]}}'
)
PLAIN = b'{"type":"array","items":{"type":"number","multipleOf":0.01}}'
GOAL_SECONDS = 0.5


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    name: str
    schema: bytes
    document: bytes
    valid: bool


def answer(item: bytes, last: bytes | None = None) -> bytes:
    """``[item, item, ...]`` as long as fits in MAX_INPUT_BYTES, the last one ``last``."""
    count = (MAX_INPUT_BYTES - 2 - (len(last or item) - len(item))) // (len(item) + 1)
    items = [item] * count
    if last is not None:
        items[-1] = last
    document = b"[" + b",".join(items) + b"]"
    assert len(document) <= MAX_INPUT_BYTES
    return document


CASES = (
    Case(name="anyOf, accept", schema=ANYOF, document=answer(b"1.23"), valid=True),
    Case(name="anyOf, refuse", schema=ANYOF, document=answer(b"1.23", b"1.234"), valid=False),
    Case(name="multipleOf, accept", schema=PLAIN, document=answer(b"1.23"), valid=True),
    Case(name="multipleOf, refuse", schema=PLAIN, document=answer(b"1.23", b"1.234"), valid=False),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Timing:
    case: Case
    after_s: float
    after_cpu_s: float
    before_s: float
    before_cpu_s: float
    steps: int


def best_of(runs: int, work: Callable[[], bool]) -> tuple[float, float]:
    """Best wall-clock and best CPU seconds over ``runs`` (CPU time shows the work itself
    when other processes share the cores)."""
    best_wall = best_cpu = float("inf")
    for _ in range(runs):
        wall, cpu = time.perf_counter(), time.process_time()
        work()
        best_wall = min(best_wall, time.perf_counter() - wall)
        best_cpu = min(best_cpu, time.process_time() - cpu)
    return best_wall, best_cpu


def measure(case: Case, *, runs: int) -> Timing:
    schema = CompiledSchema.parse(case.schema)

    def after() -> bool:
        try:
            schema.validate(case.document)
        except SchemaValidationError:
            return False
        return True

    def before() -> bool:
        return first_error(schema._exact, parse_ijson(case.document)) is None

    assert after() is case.valid
    assert before() is case.valid
    after_s, after_cpu_s = best_of(runs, after)
    before_s, before_cpu_s = best_of(max(1, runs - 1), before)
    return Timing(
        case=case,
        after_s=after_s,
        after_cpu_s=after_cpu_s,
        before_s=before_s,
        before_cpu_s=before_cpu_s,
        steps=schema.check(case.document).steps,
    )


def runs_from_environment() -> int:
    return int(os.environ.get("SCOPE_TOOL_BENCH_SCHEMA_RUNS", "3"))


def report(timings: list[Timing]) -> str:
    lines = [
        f"{'case':<20} {'bytes':>8} {'before s':>9} {'(cpu)':>7} {'after s':>8} {'(cpu)':>7}"
        f" {'speed-up':>8} {'steps':>8}"
    ]
    for timing in timings:
        lines.append(
            f"{timing.case.name:<20} {len(timing.case.document):>8} {timing.before_s:>9.3f}"
            f" {timing.before_cpu_s:>7.3f} {timing.after_s:>8.3f} {timing.after_cpu_s:>7.3f}"
            f" {timing.before_s / timing.after_s:>7.1f}x {timing.steps:>8}"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    print(report([measure(case, runs=runs_from_environment()) for case in CASES]))
