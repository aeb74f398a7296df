"""Depth limits and bounded checks: verdicts fixed by counted limits, never by the call stack.

The update validator, the update handler and the activity check the same answer at different
Python stack depths. Each test here checks the same documents from a deeply recursive helper
at several stack depths and asserts identical verdicts at the limit and one past it.
"""

from __future__ import annotations

import json
import sys
import threading

import pytest

from scope_tool import InputRequest
from scope_tool._schema import CompiledSchema, SchemaError
from scope_tool._schema_check import CheckOutcome
from scope_tool._schema_limits import MAX_EVALUATION_DEPTH, MAX_NESTING
from scope_tool.errors import InvalidInputRequestError

# Frames of the default 1000 left to the check: None is the test's own depth; the others are
# counted from wherever the test runs (a pytest-xdist worker starts deeper than pytest alone),
# 27 being what the deepest call left when run by plain pytest.
FRAMES_LEFT = (None, 700, 300, 27)


def _frames_in_use() -> int:
    frame, count = sys._getframe(1), 0
    while frame is not None:
        count, frame = count + 1, frame.f_back
    return count


def at_stack_depth(extra_frames: int, work):
    """``work()`` called from ``extra_frames`` nested Python frames below this one."""

    def descend(remaining: int):
        if remaining <= 0:
            return work()
        return descend(remaining - 1)

    return descend(extra_frames)


def verdict(schema: CompiledSchema, document: bytes) -> tuple[str, str]:
    result = schema.check(document)
    return result.outcome.value, result.detail


def nested_list(levels: int) -> bytes:
    return b"[" * levels + b"]" * levels


def verdicts_at_every_depth(work) -> set:
    assert sys.getrecursionlimit() == 1000  # the figures below assume the default
    here = _frames_in_use()
    depths = [0 if left is None else 1000 - here - left for left in FRAMES_LEFT]
    assert all(depth >= 0 for depth in depths), (here, depths)
    seen = {at_stack_depth(depth, work) for depth in depths}
    assert sys.getrecursionlimit() == 1000  # and the check never changed it
    return seen


def test_limits_are_documented_constants():
    assert MAX_NESTING == 64
    assert MAX_EVALUATION_DEPTH == 192


@pytest.mark.parametrize(
    ("levels", "accepted"), [(MAX_NESTING, True), (MAX_NESTING + 1, False), (5000, False)]
)
def test_recursive_schema_nesting_limit_ignores_the_stack(levels, accepted):
    schema = CompiledSchema.parse(b'{"items":{"$ref":"#"}}')
    document = nested_list(levels)
    seen = verdicts_at_every_depth(lambda: verdict(schema, document))
    assert len(seen) == 1, seen
    ((outcome, detail),) = seen
    assert (outcome == "accepted") == accepted, detail
    if not accepted:
        assert detail == (
            "jsonschema: validate value: (root): value nests deeper than 64 levels,"
            " the limit for a recursive schema"
        )


def test_evaluation_depth_limit_ignores_the_stack():
    # anyOf -> allOf -> items -> $ref: four keyword levels per level of the value, so the
    # evaluation limit (not the nesting limit) decides first; find where, then check both
    # sides of it.
    schema = CompiledSchema.parse(
        b'{"anyOf":[{"type":"integer"},{"allOf":[{"type":"array","items":{"$ref":"#"}}]}]}'
    )
    outcomes = {levels: verdict(schema, nested_list(levels))[0] for levels in range(1, 65)}
    boundary = min(levels for levels, outcome in outcomes.items() if outcome != "accepted")
    assert 40 < boundary < MAX_NESTING
    assert all(outcomes[levels] == "accepted" for levels in range(1, boundary))
    for levels, expected in ((boundary - 1, "accepted"), (boundary, "refused")):
        document = nested_list(levels)
        seen = verdicts_at_every_depth(lambda document=document: verdict(schema, document))
        assert len(seen) == 1, seen
        ((outcome, detail),) = seen
        assert outcome == expected, detail
        if expected == "refused":
            assert f"validation descends more than {MAX_EVALUATION_DEPTH} levels" in detail


def test_a_deep_value_against_a_non_recursive_schema_gets_one_verdict():
    # Nothing recursive in the schema, so any I-JSON depth is checked; the equality behind
    # uniqueItems recurses with the value, and still the verdict is the same at every depth.
    schema = CompiledSchema.parse(b'{"uniqueItems":true}')
    for levels in (10, 300, 600, 5000):
        pair = b"[" + nested_list(levels) + b"," + nested_list(levels) + b"]"
        seen = verdicts_at_every_depth(lambda pair=pair: verdict(schema, pair))
        assert len(seen) == 1, (levels, seen)
    plain = CompiledSchema.parse(b'{"type":"array"}')
    seen = verdicts_at_every_depth(lambda: verdict(plain, nested_list(10_000)))
    assert seen == {("accepted", "")}


@pytest.mark.parametrize(("levels", "accepted"), [(MAX_NESTING, True), (MAX_NESTING + 1, False)])
def test_schema_nesting_limit_ignores_the_stack(levels, accepted):
    # {"not":{"not":...}} nests one level per keyword; _parse bypasses the compile cache.
    document = b'{"not":' * (levels - 1) + b"{}" + b"}" * (levels - 1)

    def compile_once() -> str:
        try:
            CompiledSchema._parse(document)
        except SchemaError as exc:
            return str(exc)
        return "compiled"

    seen = verdicts_at_every_depth(compile_once)
    if accepted:
        assert seen == {"compiled"}
    else:
        assert seen == {"jsonschema: invalid schema: document nests deeper than 64 levels"}


def test_answer_checks_agree_at_validator_handler_and_activity_depths():
    # The issue's probe: 228 vs 248 levels flipped with the stack. Now both sides are fixed.
    request = InputRequest(
        prompt=b'"nest"', response_schema=b'{"items":{"$ref":"#"}}', state=b"null"
    )

    def answer(levels: int) -> str:
        try:
            request.continuation(nested_list(levels))
        except InvalidInputRequestError as exc:
            return str(exc)
        return "accepted"

    for levels in (MAX_NESTING, MAX_NESTING + 1, 228, 248):
        seen = verdicts_at_every_depth(lambda levels=levels: answer(levels))
        assert len(seen) == 1, (levels, seen)


def test_checks_from_many_threads_keep_their_own_meters():
    schema = CompiledSchema.parse(b'{"items":{"$ref":"#"}}')
    results: list[tuple[str, str]] = []

    def work(levels: int) -> None:
        for _ in range(20):
            results.append((str(levels), verdict(schema, nested_list(levels))[0]))

    threads = [threading.Thread(target=work, args=(levels,)) for levels in (3, 64, 65, 3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert set(results) == {("3", "accepted"), ("64", "accepted"), ("65", "refused")}


# --- bounded checks --------------------------------------------------------------------------

DECIMALS_ANYOF = (
    b'{"type":"array","items":{"anyOf":[{"type":"integer"},'
    b'{"type":"number","multipleOf":0.01},{"type":"string"}]}}'
)


def test_check_reports_accepted_refused_and_over_budget_distinctly():
    schema = CompiledSchema.parse(DECIMALS_ANYOF)
    good = json.dumps([1.25, 3, "x"]).encode()
    bad = b"[1.25,3,1.255]"
    accepted = schema.check(good)
    assert accepted.outcome is CheckOutcome.ACCEPTED
    assert accepted.accepted
    assert accepted.detail == ""
    assert accepted.steps > 0
    refused = schema.check(bad)
    assert refused.outcome is CheckOutcome.REFUSED
    assert refused.detail == (
        "jsonschema: validate value: /2: 1.255 is not valid under any of the given schemas"
    )
    over = schema.check(good, max_steps=accepted.steps - 1)
    assert over.outcome is CheckOutcome.OVER_BUDGET
    assert "more than" in over.detail
    assert schema.check(good, max_steps=accepted.steps) == accepted
    assert schema.check(b"[1,").outcome is CheckOutcome.REFUSED


def test_steps_are_the_same_on_every_run_and_stack():
    for raw, document in (
        (DECIMALS_ANYOF, b"[1.25,3,4.5]"),
        # unevaluatedItems is left to the (metered) exact engine
        (b'{"prefixItems":[{"type":"number"}],"unevaluatedItems":false}', b"[1.5]"),
    ):
        schema = CompiledSchema.parse(raw)
        seen = verdicts_at_every_depth(
            lambda schema=schema, document=document: schema.check(document, max_steps=10_000)
        )
        assert len(seen) == 1, seen
        (result,) = seen
        assert result.outcome is CheckOutcome.ACCEPTED
        assert result.steps > 0


def test_the_exact_engine_is_bounded_too():
    schema = CompiledSchema.parse(b'{"items":{"$ref":"#"},"unevaluatedItems":false}')
    assert schema._fast is None  # recursive: the metered exact engine answers
    full = schema.check(nested_list(30))
    assert full.outcome is CheckOutcome.ACCEPTED
    assert schema.check(nested_list(30), max_steps=full.steps - 1).outcome is (
        CheckOutcome.OVER_BUDGET
    )


def test_a_budget_stops_a_one_mebibyte_answer_before_the_work():
    schema = CompiledSchema.parse(DECIMALS_ANYOF)
    answer = b"[" + b",".join([b"1.23"] * 200_000) + b"]"
    over = schema.check(answer, max_steps=50_000)
    assert over.outcome is CheckOutcome.OVER_BUDGET
    # The whole array is charged before it is walked: the budget is spent at once.
    assert over.steps > 50_000
    full = schema.check(answer)
    assert full.outcome is CheckOutcome.ACCEPTED
    # Work is linear in the answer: at most 6 steps per number for this schema.
    assert full.steps <= 6 * 200_000 + 10


def test_negative_budget_is_refused():
    schema = CompiledSchema.parse(b"{}")
    with pytest.raises(ValueError, match="max_steps must be >= 0, not -1"):
        schema.check(b"1", max_steps=-1)
