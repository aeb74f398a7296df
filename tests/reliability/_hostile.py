"""Hostile input: generators and the checks that every piece of it is refused cleanly.

What counts as refused cleanly:

* a request (tool name + arguments) either fails at ``ToolCalls.start`` with a protocol or
  value error that says what was wrong (nothing started), or the call ends INVALID with a
  message and an ``error: ...`` model-visible output. Never COMPLETED, never ERRORED (which
  would mean the runtime choked instead of refusing);
* an answer raises :class:`AnswerRejectedError` with a known reason and a message, and the call
  it was sent to is unchanged afterwards (same phase, round, pending request, no answers);
* no workflow history holds a WorkflowTaskFailed event, and the worker process stays alive.

Hypothesis drives the generation. Its runner is synchronous, so it runs in a thread and hands
each example to the test's event loop (where the Temporal client lives) with
``run_coroutine_threadsafe``; a failure reports the falsifying example as usual.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, TypeVar

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from scope_tool import MAX_INPUT_BYTES, Request
from scope_tool.errors import ToolError
from workflows import AnswerRejectedError, CallStatus, ToolCallHandle, ToolCalls
from workflows import Phase as CallPhase
from workflows.errors import ANSWER_REJECTION_REASONS

__all__ = [
    "EXPLICIT_REQUESTS",
    "HOSTILE_CALL_IDS",
    "HostileTally",
    "check_answer_refused",
    "check_call_id",
    "check_request_refused",
    "deep_nesting",
    "explicit_answers",
    "hostile_answers",
    "hostile_requests",
    "run_property",
    "workflow_task_failures",
]

T = TypeVar("T")

_RESULT_TIMEOUT = 60.0


def deep_nesting(levels: int) -> str:
    """``[[[...]]]`` nested ``levels`` deep (10 000 is the protocol's limit)."""
    return "[" * levels + "]" * levels


def _over_limit_object(field: str) -> str:
    """A well-formed object whose one string field pushes it just past MAX_INPUT_BYTES."""
    shell = json.dumps({field: ""})
    return json.dumps({field: "a" * (MAX_INPUT_BYTES + 1 - len(shell) + 1)})


HOSTILE_NAMES: tuple[str, ...] = (
    "",
    " ",
    "echo ",
    " echo",
    "ECHO",
    "Echo",
    "echo\x00",
    "echo\n",
    "ech\u043e",  # Cyrillic o
    "\u00e9cho",
    "../echo",
    "echo;rm -rf /",
    "e" * 65,
    "x" * 10_000,
    "\ud800",
    "\U0001f4a5",
    "unknown_tool",
    "approve_write\t",
)

EXPLICIT_REQUESTS: tuple[tuple[str, str], ...] = (
    ("echo", deep_nesting(100_000)),
    ("echo", '{"text":' + deep_nesting(9_999) + "}"),
    ("echo", '{"text":"a","text":"b"}'),
    ("echo", '{"text":"a","times":1,"times":2}'),
    ("echo", '{"text":"\\ud800"}'),
    ("echo", '{"text":"\\udfff\\ud800"}'),
    ("echo", '{"text":"\ud800"}'),
    ("echo", '{"text":"a","times":1e999999}'),
    ("echo", '{"text":"a","times":' + "9" * 10_000 + "}"),
    ("echo", '{"text":"a","times":-' + "9" * 5_000 + "}"),
    ("echo", '{"text":"a","times":1.0}'),
    ("echo", '{"text":"a","times":NaN}'),
    ("echo", _over_limit_object("text")),
    ("echo", " " * (MAX_INPUT_BYTES + 1) + '{"text":"a"}'),
    ("echo", '{"text":"' + "a" * 3_000_000 + '"}'),  # past Temporal's 2 MB payload limit too
    ("echo", '{"text":1}'),
    ("echo", '{"text":"a","times":"1"}'),
    ("echo", '{"text":"a","extra":true}'),
    ("echo", "[]"),
    ("echo", "null"),
    ("echo", '"text"'),
    ("echo", "{"),
    ("echo", '{"text":"a"} {"text":"b"}'),
    ("echo", "\ufeff" + '{"text":"a"}'),
    ("approve_write", '{"key":""}'),
    ("approve_write", '{"key":"k","rounds":0}'),
    ("guarded_refused", '{"unexpected":1}'),
    *((name, '{"text":"a"}') for name in HOSTILE_NAMES),
)
"""Always tried, before the generated ones: one of each hostile kind the brief names."""

_JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
)
_JSON_VALUES = st.recursive(
    _JSON_SCALARS,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


def _wrong_typed_echo_arguments() -> st.SearchStrategy[str]:
    """Objects that look like echo's input but break its schema or strict decoding."""
    good_text = st.text(max_size=10)
    return st.one_of(
        st.fixed_dictionaries(
            {"text": st.one_of(st.integers(), st.none(), st.booleans(), st.lists(good_text))}
        ),
        st.fixed_dictionaries(
            {
                "text": good_text,
                "times": st.one_of(
                    st.text(),
                    st.floats(allow_nan=False, allow_infinity=False),
                    st.integers(min_value=4),
                    st.integers(max_value=0),
                ),
            }
        ),
        st.fixed_dictionaries({"text": good_text, "surplus": _JSON_VALUES}),
        st.dictionaries(
            st.text(max_size=8).filter(lambda key: key not in ("text", "times")),
            _JSON_VALUES,
            max_size=3,
        ),
    ).map(json.dumps)


def hostile_requests() -> st.SearchStrategy[tuple[str, str]]:
    """(tool name, arguments) pairs, none of which may run a tool."""
    random_text_arguments = st.one_of(
        st.binary(max_size=200).map(lambda raw: raw.decode("latin-1")),
        st.binary(max_size=200).map(lambda raw: raw.decode("utf-8", "surrogateescape")),
        st.text(max_size=200),
        _JSON_VALUES.filter(lambda value: not isinstance(value, dict)).map(json.dumps),
    ).filter(lambda text: not text.strip(" \t\r\n").startswith("{") or "text" not in text)
    odd_names = st.one_of(
        st.sampled_from(HOSTILE_NAMES),
        st.text(max_size=80).filter(lambda name: name not in _REAL_TOOLS),
    )
    return st.one_of(
        st.tuples(st.just("echo"), random_text_arguments),
        st.tuples(st.just("echo"), _wrong_typed_echo_arguments()),
        st.tuples(odd_names, st.just('{"text":"a"}')),
        st.tuples(odd_names, random_text_arguments),
    )


_REAL_TOOLS = frozenset({"echo", "approve_write", "guarded_refused", "guarded_broken"})


def explicit_answers(call_id: str) -> tuple[tuple[Any, str | None], ...]:
    """Answers that must be refused by a call of ``approve_write`` waiting on round 1."""
    valid = {"approve": True, "key": call_id}
    valid_text = json.dumps(valid)
    padding = MAX_INPUT_BYTES + 1 - len(valid_text)
    deep: Any = []
    for _ in range(100_000):
        deep = [deep]
    return (
        (deep_nesting(100_000).encode(), None),
        (deep_nesting(100_000), None),
        (deep, None),
        (
            (
                '{"approve":true,"key":' + json.dumps(call_id) + ',"x":' + deep_nesting(9_999) + "}"
            ).encode(),
            None,
        ),
        (
            (
                '{"approve":true,"key":'
                + json.dumps(call_id)
                + ',"key":'
                + json.dumps(call_id)
                + "}"
            ).encode(),
            None,
        ),
        (b'{"approve":true,"approve":true,"key":"k"}', None),
        (b'{"approve":true,"key":"\\ud800"}', None),
        ('{"approve":true,"key":"\ud800"}', None),
        (b'{"approve":true,"key":"\xed\xa0\x80"}', None),
        (b'{"approve":1e999999,"key":"k"}', None),
        (
            (
                '{"approve":true,"key":' + json.dumps(call_id) + ',"n":' + "9" * 10_000 + "}"
            ).encode(),
            None,
        ),
        (10**5000, None),
        (valid_text.encode() + b" " * padding, None),
        ({"approve": True, "key": "k" * (MAX_INPUT_BYTES + 1)}, None),
        (float("nan"), None),
        (float("inf"), None),
        ({1, 2}, None),
        (object(), None),
        (True, None),
        (None, None),
        ([], None),
        ({"approve": "yes", "key": call_id}, None),
        ({"approve": True}, None),
        ({"approve": True, "key": call_id, "extra": 1}, None),
        ({"approve": True, "key": ""}, None),
        (b"", None),
        (b"   ", None),
        (b"\xff\xfe", None),
        (b"\xef\xbb\xbf" + valid_text.encode(), None),
        (valid_text + " " + valid_text, None),
        (valid, f"{call_id}/r2"),
        (valid, f"{call_id}/r0"),
        (valid, "another-call/r1"),
        (valid, ""),
        (valid, "\ud800"),
        (valid, f"{call_id}/r1\x00"),
    )


def hostile_answers(call_id: str) -> st.SearchStrategy[tuple[Any, str | None]]:
    """(answer, request_id) pairs that a call of ``approve_write`` must refuse."""
    not_the_answer = st.one_of(
        st.binary(max_size=300),
        st.text(max_size=300),
        _JSON_VALUES,
        st.fixed_dictionaries(
            {
                "approve": _JSON_VALUES.filter(lambda v: not isinstance(v, bool)),
                "key": st.just(call_id),
            }
        ),
        st.fixed_dictionaries(
            {"approve": st.booleans(), "key": _JSON_VALUES.filter(lambda v: not isinstance(v, str))}
        ),
        st.fixed_dictionaries(
            {"approve": st.booleans(), "key": st.just(call_id), "more": _JSON_VALUES}
        ),
    ).filter(lambda value: not _is_valid_answer(value, call_id))
    wrong_request = st.one_of(
        st.text(max_size=40).filter(lambda text: text != f"{call_id}/r1"),
        st.integers(min_value=2, max_value=10**6).map(lambda n: f"{call_id}/r{n}"),
    )
    valid = st.just({"approve": True, "key": call_id})
    return st.one_of(
        st.tuples(not_the_answer, st.none()),
        st.tuples(not_the_answer, st.just(f"{call_id}/r1")),
        st.tuples(valid, wrong_request),
    )


def _is_valid_answer(value: Any, call_id: str) -> bool:
    """True for anything the response schema would accept (so it is not hostile)."""
    try:
        if isinstance(value, bytes):
            parsed = json.loads(value.decode("utf-8"))
        elif isinstance(value, str):
            parsed = json.loads(value)
        else:
            parsed = value
    except (ValueError, RecursionError):
        return False
    return (
        isinstance(parsed, dict)
        and set(parsed) == {"approve", "key"}
        and isinstance(parsed["approve"], bool)
        and isinstance(parsed["key"], str)
        and 1 <= len(parsed["key"]) <= 200
    )


class HostileTally:
    """Counts what was tried and how it was refused, for the report and the README."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.call_ids: list[str] = []
        self.violations: list[str] = []

    def add(self, what: str) -> None:
        self.counts[what] += 1

    async def checking(self, label: str, check: Awaitable[None]) -> None:
        """Run one check; a broken expectation is recorded (with the input) instead of raised.

        Collecting every violation of a run, rather than stopping at the first, makes one run
        report every kind of input that is mishandled.
        """
        try:
            await check
        except Exception as error:  # AssertionError or an unexpected exception type
            self.counts["_violations"] += 1
            self.violations.append(f"{label}: {type(error).__name__}: {str(error)[:400]}")

    def report(self, limit: int = 15) -> str:
        """The violations, one per line, for the assertion message."""
        return "\n".join(self.violations[:limit]) + (
            f"\n... and {len(self.violations) - limit} more" if len(self.violations) > limit else ""
        )

    @property
    def total(self) -> int:
        """How many inputs were tried."""
        return self.counts["_requests"] + self.counts["_answers"]


async def check_request_refused(
    calls: ToolCalls, name: str, arguments: str, *, tally: HostileTally
) -> None:
    """Start one hostile request; a mishandled one is recorded in ``tally.violations``."""
    tally.add("_requests")
    await tally.checking(
        f"request {_shorten(name, 60)} {_shorten(arguments, 100)}",
        _request_refused(calls, name, arguments, tally=tally),
    )


HOSTILE_CALL_IDS: tuple[str, ...] = (
    "",
    "   ",
    "x" * 2_000,
    "a\ud800",
    "a\x00b",
    "tab\tand\nnewline",
    "../../etc/passwd",
    "quote'\"; DROP TABLE",
    "\U0001f4a5",
)
"""Odd call ids: each must either work like any id or be refused with a clear error."""


async def check_call_id(calls: ToolCalls, call_id: str, *, tally: HostileTally) -> None:
    """Start a well-formed echo call under an odd id; a mishandled one goes to ``violations``."""
    tally.add("_requests")
    await tally.checking(
        f"call id {_shorten(call_id, 60)}", _call_id_handled(calls, call_id, tally=tally)
    )


async def _call_id_handled(calls: ToolCalls, call_id: str, *, tally: HostileTally) -> None:
    unique = f"{call_id}{uuid.uuid4().hex}" if call_id.strip() and len(call_id) < 1_000 else call_id
    refusal: Exception | None = None
    try:
        handle = await calls.start(Request(name="echo", arguments='{"text":"a"}'), call_id=unique)
    except (ToolError, ValueError, TypeError) as error:
        refusal = error
    if refusal is not None:
        assert str(refusal).strip()
        assert "codec can't encode" not in str(refusal), f"unclear refusal: {refusal}"
        tally.add(f"call id refused ({type(refusal).__name__})")
        return
    tally.call_ids.append(unique)
    outcome = await asyncio.wait_for(handle.result(), _RESULT_TIMEOUT)
    assert outcome.phase is CallPhase.COMPLETED, outcome
    tally.add("call id worked")


async def _request_refused(
    calls: ToolCalls, name: str, arguments: str, *, tally: HostileTally
) -> None:
    call_id = f"hostile-{uuid.uuid4().hex}"
    refusal: Exception | None = None
    try:
        handle = await calls.start(Request(name=name, arguments=arguments), call_id=call_id)
    except (ToolError, ValueError, TypeError) as error:
        refusal = error
    if refusal is not None:
        assert str(refusal).strip(), f"empty refusal for {name!r}"
        assert not await _exists(calls, call_id), f"{call_id} was started despite the refusal"
        tally.add(f"request refused at start ({type(refusal).__name__})")
        return
    tally.call_ids.append(call_id)
    outcome = await asyncio.wait_for(handle.result(), _RESULT_TIMEOUT)
    assert outcome.phase is CallPhase.INVALID, (
        f"hostile request {name[:60]!r} / {arguments[:120]!r} ended {outcome.phase}: "
        f"{outcome.message[:300]!r}"
    )
    assert outcome.message.strip(), "INVALID without a message"
    text = outcome.output.text()
    assert text is not None
    assert text.startswith("error: "), text[:200]
    tally.add("request ended INVALID")


async def _exists(calls: ToolCalls, call_id: str) -> bool:
    try:
        await calls.client.get_workflow_handle(call_id).describe()
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            return False
        raise
    return True


def _same_state(before: CallStatus, after: CallStatus) -> bool:
    return (
        after.phase is before.phase
        and after.round == before.round
        and after.answers == before.answers
        and (after.pending.request_id if after.pending else None)
        == (before.pending.request_id if before.pending else None)
        and after.outcome == before.outcome
    )


async def check_answer_refused(
    handle: ToolCallHandle,
    baseline: CallStatus,
    response: Any,
    request_id: str | None,
    *,
    tally: HostileTally,
) -> None:
    """Send one hostile answer; a mishandled one is recorded in ``tally.violations``."""
    tally.add("_answers")
    await tally.checking(
        f"answer {_shorten(response, 120)} request {_shorten(request_id, 60)}",
        _answer_refused(handle, baseline, response, request_id, tally=tally),
    )


async def _answer_refused(
    handle: ToolCallHandle,
    baseline: CallStatus,
    response: Any,
    request_id: str | None,
    *,
    tally: HostileTally,
) -> None:
    refusal: AnswerRejectedError | None = None
    receipt: object = None
    try:
        receipt = await handle.answer(response, request_id=request_id, answered_by="fuzzer")
    except AnswerRejectedError as error:
        refusal = error
    assert refusal is not None, f"hostile answer was accepted: {receipt}"
    assert refusal.reason in ANSWER_REJECTION_REASONS, refusal.reason
    assert str(refusal).strip()
    tally.add(f"answer rejected ({refusal.reason})")
    after = await handle.status()
    assert _same_state(baseline, after), f"the call changed: {baseline} -> {after}"


def _shorten(value: Any, width: int = 200) -> str:
    """A printable prefix of any value, even one too deep for ``repr``."""
    try:
        text = repr(value)
    except (RecursionError, ValueError):
        return f"<{type(value).__name__} too deep or too long to print>"
    return text if len(text) <= width else f"{text[:width]}...({len(text)} chars)"


def run_property(
    strategy: st.SearchStrategy[T],
    check: Callable[[T], Coroutine[Any, Any, None]],
    *,
    loop: asyncio.AbstractEventLoop,
    max_examples: int,
    explicit: Sequence[T] = (),
    per_example_timeout: float = 90.0,
) -> None:
    """Run ``check`` on ``explicit`` then on ``max_examples`` generated values (in a thread)."""

    # Explicit examples run directly: some (a list nested 100 000 deep) are too deep for
    # hypothesis's own reporting machinery to handle as @example values.
    for value in explicit:
        asyncio.run_coroutine_threadsafe(check(value), loop).result(timeout=per_example_timeout)

    @settings(
        max_examples=max_examples,
        deadline=None,
        database=None,
        phases=(Phase.generate,),
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )
    @given(strategy)
    def property_holds(value: T) -> None:
        asyncio.run_coroutine_threadsafe(check(value), loop).result(timeout=per_example_timeout)

    property_holds()


async def workflow_task_failures(client: Client, call_ids: Sequence[str]) -> tuple[str, ...]:
    """Every WorkflowTaskFailed event in these calls' histories (a crash of workflow code)."""
    failures: list[str] = []
    gate = asyncio.Semaphore(16)

    async def one(call_id: str) -> None:
        async with gate:
            history = await client.get_workflow_handle(call_id).fetch_history()
        for event in history.events:
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
                message = event.workflow_task_failed_event_attributes.failure.message
                failures.append(f"{call_id}: {message[:300]}")

    await asyncio.gather(*(one(call_id) for call_id in call_ids))
    return tuple(failures)
