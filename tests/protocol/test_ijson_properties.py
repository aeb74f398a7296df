"""Property tests for the I-JSON gate, the canonical form and the Go whitespace set."""

from __future__ import annotations

import contextlib
import json
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from scope_tool._ijson import (
    IJSONError,
    canonical_json,
    check_ijson,
    is_blank,
    parse_ijson,
    raw_object_members,
)

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Text without surrogates: JSON strings as Python would produce them.
keys = st.text(st.characters(exclude_categories=["Cs"]), max_size=8)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(exclude_categories=["Cs"]), max_size=12)
)
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=4),
    max_leaves=20,
)


def exact(value: Any) -> Any:
    """Python's json.loads result with floats read exactly, for comparison with parse_ijson."""
    return json.loads(json.dumps(value), parse_float=Decimal)


def utf16_sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            key: utf16_sorted(value[key])
            for key in sorted(value, key=lambda k: k.encode("utf-16-be"))
        }
    if isinstance(value, list):
        return [utf16_sorted(item) for item in value]
    return value


def refuses(data: bytes) -> bool:
    try:
        check_ijson(data)
    except IJSONError:
        return True
    return False


@SETTINGS
@given(st.text(max_size=40))
def test_any_text_json_rejects_is_refused(text):
    try:
        json.loads(text)
    except ValueError:
        assert refuses(text.encode("utf-8", "surrogatepass"))


@SETTINGS
@given(json_values, st.data())
def test_mutated_documents_json_rejects_are_refused(value, data):
    text = json.dumps(value)
    position = data.draw(st.integers(min_value=0, max_value=len(text)))
    insert = data.draw(st.sampled_from([*list(",:[]{}\"'\\ x0-.eE"), "tru", "nul", "NaN", "//"]))
    mutated = text[:position] + insert + text[position:]
    try:
        json.loads(mutated)
    except ValueError:
        assert refuses(mutated.encode())


@SETTINGS
@given(json_values, st.sampled_from(["", " ", "\n", "\t\r\n "]))
def test_valid_documents_pass_and_parse_exactly(value, padding):
    document = (padding + json.dumps(value, ensure_ascii=False) + padding).encode()
    check_ijson(document)
    assert parse_ijson(document) == exact(value)


@SETTINGS
@given(json_values)
def test_ascii_escaped_documents_parse_the_same(value):
    assert parse_ijson(json.dumps(value).encode()) == exact(value)


@SETTINGS
@given(json_values, st.booleans())
def test_canonical_form_matches_a_reference_and_is_idempotent(value, indent):
    document = json.dumps(value, ensure_ascii=not indent, indent=2 if indent else None).encode()
    canonical = canonical_json(document)
    reference = json.dumps(utf16_sorted(value), ensure_ascii=False, separators=(",", ":"))
    assert canonical == reference.encode()
    assert canonical_json(canonical) == canonical
    assert parse_ijson(canonical) == parse_ijson(document)


@SETTINGS
@given(st.dictionaries(keys, json_values, min_size=1, max_size=4), st.data())
def test_a_duplicate_key_at_any_depth_is_refused(members, data):
    key = data.draw(st.sampled_from(sorted(members)))
    pairs = [f"{json.dumps(k)}:{json.dumps(v)}" for k, v in members.items()]
    pairs.insert(data.draw(st.integers(0, len(pairs))), f"{json.dumps(key)}:null")
    document = "{" + ",".join(pairs) + "}"
    depth = data.draw(st.integers(0, 3))
    document = '{"wrap":[' * depth + document + "]}" * depth
    with pytest.raises(IJSONError, match="duplicate object key"):
        check_ijson(document.encode())


@SETTINGS
@given(
    st.integers(min_value=0xD800, max_value=0xDFFF),
    st.text(st.characters(exclude_categories=["Cs"]), max_size=5),
    st.booleans(),
)
def test_a_lone_surrogate_escape_is_refused(code, text, as_key):
    escape = f"\\u{code:04x}"
    # A high surrogate followed by a low one would be a valid pair: break any pairing.
    literal = '"' + json.dumps(text)[1:-1] + escape + 'x"'
    document = "{" + literal + ":1}" if as_key else "[" + literal + "]"
    with pytest.raises(IJSONError, match="lone surrogate"):
        check_ijson(document.encode())


@SETTINGS
@given(st.characters(min_codepoint=0x10000, max_codepoint=0x10FFFF))
def test_escaped_surrogate_pairs_pass(char):
    document = json.dumps(char).encode()  # ensure_ascii: "\ud83d\ude00" style
    assert parse_ijson(document) == char


GO_SPACE = frozenset(
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000"
)
near_space = st.sampled_from([*sorted(GO_SPACE), "\x1c", "\x1d", "\x1e", "\x1f", "\u200b", "a"])


@SETTINGS
@given(st.text(near_space, max_size=8) | st.text(max_size=8))
def test_blank_means_only_go_spaces(text):
    expected = all(char in GO_SPACE for char in text)
    assert is_blank(text) is expected
    try:
        encoded = text.encode()
    except UnicodeEncodeError:
        return
    assert is_blank(encoded) is expected


@SETTINGS
@given(st.dictionaries(keys, json_values, max_size=5), st.sampled_from(["", " ", "\n  "]))
def test_raw_members_round_trip_exact_bytes(members, space):
    raws = {key: json.dumps(value).encode() for key, value in members.items()}
    body = b",".join(
        json.dumps(key).encode() + space.encode() + b":" + space.encode() + raw + space.encode()
        for key, raw in raws.items()
    )
    split = raw_object_members(b"{" + body + b"}")
    assert split == {key: space.encode() + raw + space.encode() for key, raw in raws.items()}


@SETTINGS
@given(st.binary(max_size=30))
def test_arbitrary_bytes_never_crash(data):
    assume(data)
    with contextlib.suppress(IJSONError):
        parse_ijson(data)
