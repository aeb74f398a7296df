"""Microbenchmark of the protocol's JSON layer: the I-JSON gate and schema validation.

Run: ``python tests/benchmarks/bench_json_layer.py``. Each figure is the best of several
rounds (the least noisy estimate on a shared machine), in microseconds per call, for the
seed's ``{"a":2,"b":3}`` against an ``add``-style object schema. Baselines in the same run:
``json.loads`` and pydantic's ``TypeAdapter.validate_json``. The "exact engine" rows force the
python-jsonschema path (a long decimal in the value), the one used whenever the Rust engine
could round a number.
"""

from __future__ import annotations

import json
import timeit
from collections.abc import Callable

from pydantic import BaseModel, TypeAdapter

from scope_tool._ijson import canonical_json, check_ijson, parse_ijson, small_object
from scope_tool._schema import CompiledSchema

CALLS = 20_000
ROUNDS = 7
ARGUMENTS = b'{"a":2,"b":3}'
DECIMAL_ARGUMENTS = b'{"a":2,"b":3,"c":0.12345678901234567890}'
SCHEMA = json.dumps(
    {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {}},
        "required": ["a", "b"],
        "additionalProperties": False,
    }
).encode()


class AddInput(BaseModel):
    a: int
    b: int


def main() -> None:
    adapter = TypeAdapter(AddInput)
    schema = CompiledSchema.parse(SCHEMA)
    value = parse_ijson(ARGUMENTS)
    rows: list[tuple[str, Callable[[], object]]] = [
        ("pydantic TypeAdapter.validate_json (baseline)", lambda: adapter.validate_json(ARGUMENTS)),
        ("json.loads", lambda: json.loads(ARGUMENTS)),
        ("check_ijson", lambda: check_ijson(ARGUMENTS)),
        ("parse_ijson", lambda: parse_ijson(ARGUMENTS)),
        ("small_object (prepare's hot path)", lambda: small_object(ARGUMENTS)),
        ("canonical_json", lambda: canonical_json(ARGUMENTS)),
        ("CompiledSchema.validate (Rust engine)", lambda: schema.validate(ARGUMENTS)),
        ("CompiledSchema.validate_value (Rust engine)", lambda: schema.validate_value(value)),
        ("CompiledSchema.validate (exact engine)", lambda: schema.validate(DECIMAL_ARGUMENTS)),
        ("CompiledSchema.parse (compile once)", lambda: CompiledSchema.parse(SCHEMA)),
    ]
    baseline = None
    for name, function in rows:
        calls = CALLS if "parse (" not in name else CALLS // 100
        seconds = min(timeit.repeat(function, number=calls, repeat=ROUNDS)) / calls * 1e6
        baseline = baseline or seconds
        print(f"{name:48s} {seconds:9.2f} us  {seconds / baseline:6.1f}x")


if __name__ == "__main__":
    main()
