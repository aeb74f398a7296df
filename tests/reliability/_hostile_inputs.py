"""Hostile input: what the reliability scenarios throw at the engine.

One explicit example of every kind the brief names (random bytes, 100 000-level nesting,
duplicate keys, lone surrogates, huge numbers, payloads just over ``MAX_INPUT_BYTES``, wrong
types, unknown tools, odd names and call ids), and hypothesis strategies that generate more of
each. Nothing here may run a tool or be accepted as an answer; ``_refusals`` checks that.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from scope_tool import MAX_INPUT_BYTES

__all__ = [
    "EXPLICIT_REQUESTS",
    "HOSTILE_CALL_IDS",
    "HOSTILE_NAMES",
    "costly_answers",
    "deep_nesting",
    "explicit_answers",
    "hostile_answers",
    "hostile_requests",
]


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
    ("echo", '{"text":"a","times":1e1000000000000000000}'),  # no exact Decimal holds it
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


def costly_answers(call_id: str) -> tuple[tuple[Any, str | None], ...]:
    """#17 item 1: answers just under MAX_INPUT_BYTES that are slow to parse and check.

    Workflow code must not check them (parsing ~1 MiB of decimals alone takes ~0.8 s); the
    ``check_answer`` activity refuses them, and no workflow task may fail meanwhile.
    """
    count = (MAX_INPUT_BYTES - 2) // 5
    decimals = b"[" + b",".join([b"1.23"] * count) + b"]"
    prefix = b'{"approve":true,"key":' + json.dumps(call_id).encode() + b',"x":'
    padded = prefix + decimals[: MAX_INPUT_BYTES - len(prefix) - 8].rsplit(b",", 1)[0] + b"]}"
    return (
        (decimals, None),
        (decimals, f"{call_id}/r1"),
        (padded, None),
        (decimals[:-1], None),  # not JSON: the activity says invalid_json
    )


def explicit_answers(call_id: str) -> tuple[tuple[Any, str | None], ...]:
    """Answers that must be refused by a call of ``approve_write`` waiting on round 1."""
    valid = {"approve": True, "key": call_id}
    valid_text = json.dumps(valid)
    padding = MAX_INPUT_BYTES + 1 - len(valid_text)
    deep: Any = []
    for _ in range(100_000):
        deep = [deep]
    return (
        *costly_answers(call_id),
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
        (b'{"approve":true,"key":"k","n":1e1000000000000000000}', None),
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
