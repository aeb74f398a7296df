"""Every schema engine agrees with the exact reference, on generated schemas and values.

The schema layer answers with whichever engine takes a schema and a value
(docs/schemas.md#engines): the Rust engine (``jsonschema_rs``) where every number is exact
for it, the fast exact engine (``_schema_fast``) for the common keywords, and python-jsonschema
with exact numbers (``_schema_exact``), which is the reference here. ``Contract.prepare``'s
hot path (``_ijson.small_object`` then the Rust engine) is a fourth road to a verdict. This
test generates schemas (types, numeric bounds with big integers and long decimals,
``multipleOf``, string length/pattern/format, enum/const, arrays and objects with
required/additionalProperties, combinators, ``$ref``) and JSON texts, and checks each engine
that takes the pair reaches the reference's verdict.

``make test`` runs a bounded, derandomized number of examples (no example database).
A bigger run: ``SCOPE_TOOL_SCHEMA_DIFF_EXAMPLES=20000 pytest tests/protocol/test_schema_differential.py``.
"""

from __future__ import annotations

import json
import os
from decimal import Decimal, localcontext
from typing import Any

import jsonschema_rs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scope_tool._ijson import IJSONError, parse_ijson, small_object
from scope_tool._schema import CompiledSchema, SchemaError, SchemaValidationError
from scope_tool._schema_exact import compile_exact, first_error
from scope_tool._schema_limits import Meter

EXAMPLES = int(os.environ.get("SCOPE_TOOL_SCHEMA_DIFF_EXAMPLES", "300"))
# A bigger run needs more than the suite's 120 s per test on the loaded machine.
pytestmark = pytest.mark.timeout(max(120, EXAMPLES // 2))
DIFFERENTIAL = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# --- JSON text strategies (text, so lexemes such as 1.0, 2.0e0 and 1e-400 survive) ------------

_BOUNDARY_NUMBERS = [
    "0", "-0", "1", "-1", "2", "3", "7", "10", "0.5", "0.25", "0.1", "0.01", "1.0", "2.0e0",
    "1e2", "1E+2", "1.5e-3", "1e-400", "1e400", "1e-30", "0.0100000000000000001",
    "1.00000000000000000001", "0.99999999999999999999", "3.0000000000000000000000000001",
    "9007199254740991", "9007199254740992", "9007199254740993", "-9007199254740993",
    "18446744073709551615", "18446744073709551616", "18446744073709551617",
    "123456789012345678901234567890", "123456789012345678901234567890.5",
    "1267650600228229401496703205376",
]  # fmt: skip

_numbers = st.one_of(
    st.sampled_from(_BOUNDARY_NUMBERS),
    st.integers(-1000, 1000).map(str),
    st.integers(-(2**130), 2**130).map(str),
    st.builds(
        lambda whole, fraction: f"{whole}.{fraction}",
        st.integers(-1000, 1000),
        st.text("0123456789", min_size=1, max_size=24),
    ),
    st.builds(
        lambda mantissa, exponent: f"{mantissa}e{exponent}",
        st.integers(-(10**20), 10**20),
        st.integers(-30, 30),
    ),
)
_positive_numbers = st.one_of(
    st.sampled_from(["1", "2", "3", "0.5", "0.25", "0.1", "0.01", "1e-3", "2.0", "1.0", "1e1"]),
    st.sampled_from(["9007199254740993", "18446744073709551616", "0.0100000000000000001"]),
    st.integers(1, 2**70).map(str),
    st.builds(lambda digits: f"0.{digits}1", st.text("0123456789", max_size=20)),
)
_STRINGS = [
    "", "a", "ab", "abc", "A1", "x-y", "1", "é", "日本", "a:b", "2024-02-29", "2023-02-29",
    "12:30:00Z", "2024-02-29T12:30:00Z", "2024-13-01T00:00:00Z", "user@example.com",
    "not an email", "192.168.0.1", "256.1.1.1", "::1", "example.com", "-bad-.com",
    "https://example.com/x?y=1", "/relative", "urn:uuid:6e8bc430-9c3a-11d9-9669-0800200c9a66",
    "6e8bc430-9c3a-11d9-9669-0800200c9a66", "P1D", "P1Y2M", "/a/b~0", "0/a", "^[a-z]+$",
    "(unclosed",
]  # fmt: skip
_strings = st.one_of(
    st.sampled_from(_STRINGS),
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=6),
).map(lambda text: json.dumps(text, ensure_ascii=False))
_KEYS = ["a", "b", "c", "ab", "b1", "é"]


def _unique_object_text(members: list[tuple[str, str]]) -> str:
    unique = dict(members)  # a duplicate key would make the text not I-JSON
    return (
        "{"
        + ",".join(f"{json.dumps(key, ensure_ascii=False)}:{v}" for key, v in unique.items())
        + "}"
    )


_values: st.SearchStrategy[str] = st.recursive(
    st.one_of(_numbers, _strings, st.sampled_from(["true", "false", "null"])),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4).map(lambda items: "[" + ",".join(items) + "]"),
        st.lists(st.tuples(st.sampled_from(_KEYS), inner), max_size=4).map(_unique_object_text),
    ),
    max_leaves=10,
)

# --- schema strategies ------------------------------------------------------------------------

_TYPES = ["null", "boolean", "integer", "number", "string", "array", "object"]
_PATTERNS = ["^a", "b$", "[0-9]", "^$", "^\\\\p{Letter}+$", "\\\\d", "^\\\\w+$", "a|b", "^.{2}$"]
_FORMATS = [
    "date", "date-time", "time", "duration", "email", "hostname", "ipv4", "ipv6", "uri",
    "uri-reference", "uuid", "json-pointer", "relative-json-pointer", "regex", "unknown-x",
]  # fmt: skip


def _keyword(name: str, value: str) -> str:
    return f'"{name}":{value}'


def _schema_list(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.lists(children, min_size=1, max_size=3).map(lambda items: "[" + ",".join(items) + "]")


def _schema_map(children: st.SearchStrategy[str], names: list[str]) -> st.SearchStrategy[str]:
    return st.lists(st.tuples(st.sampled_from(names), children), min_size=1, max_size=3).map(
        lambda members: (
            "{" + ",".join(f'"{key}":{value}' for key, value in dict(members).items()) + "}"
        )
    )


def _keywords(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """One keyword and its value, as JSON member text."""
    names_json = st.lists(st.sampled_from(_KEYS), max_size=3).map(
        lambda names: json.dumps(list(dict.fromkeys(names)))
    )
    small_count = st.sampled_from(["0", "1", "2", "3", "2.0"])
    choices: list[st.SearchStrategy[str]] = [
        st.one_of(
            st.sampled_from(_TYPES).map(json.dumps),
            st.lists(st.sampled_from(_TYPES), min_size=1, max_size=3).map(
                lambda types: json.dumps(list(dict.fromkeys(types)))
            ),
        ).map(lambda v: _keyword("type", v)),
        *(
            _numbers.map(lambda v, word=word: _keyword(word, v))
            for word in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
        ),
        _positive_numbers.map(lambda v: _keyword("multipleOf", v)),
        *(
            small_count.map(lambda v, word=word: _keyword(word, v))
            for word in (
                "minLength",
                "maxLength",
                "minItems",
                "maxItems",
                "minProperties",
                "maxProperties",
            )
        ),
        st.sampled_from(_PATTERNS).map(lambda v: _keyword("pattern", f'"{v}"')),
        st.sampled_from(_FORMATS).map(lambda v: _keyword("format", f'"{v}"')),
        st.lists(_values, min_size=1, max_size=3).map(
            lambda items: _keyword("enum", "[" + ",".join(items) + "]")
        ),
        _values.map(lambda v: _keyword("const", v)),
        st.sampled_from(["true", "false"]).map(lambda v: _keyword("uniqueItems", v)),
        names_json.map(lambda v: _keyword("required", v)),
        st.sampled_from(_KEYS).map(
            lambda key: _keyword("dependentRequired", json.dumps({key: ["a"]}))
        ),
        _schema_map(children, _KEYS).map(lambda v: _keyword("properties", v)),
        _schema_map(children, ["^a", "b$", "^\\\\p{Letter}$", "[0-9]"]).map(
            lambda v: _keyword("patternProperties", v)
        ),
        _schema_list(children).map(lambda v: _keyword("prefixItems", v)),
        *(
            children.map(lambda v, word=word: _keyword(word, v))
            for word in (
                "items",
                "additionalProperties",
                "propertyNames",
                "not",
                "if",
                "then",
                "else",
                "contains",
                "unevaluatedProperties",
                "unevaluatedItems",
            )
        ),
        *(
            _schema_list(children).map(lambda v, word=word: _keyword(word, v))
            for word in ("allOf", "anyOf", "oneOf")
        ),
        _schema_map(children, _KEYS).map(lambda v: _keyword("dependentSchemas", v)),
    ]
    return st.one_of(choices)


_schemas: st.SearchStrategy[str] = st.recursive(
    st.sampled_from(["true", "false", "{}"]),
    lambda children: st.lists(_keywords(children), min_size=1, max_size=4).map(
        lambda members: "{" + ",".join(dict.fromkeys(members)) + "}"
    ),
    max_leaves=6,
)


@st.composite
def _schema_documents(draw: st.DrawFn) -> str:
    """A schema, sometimes behind a ``$ref`` into ``$defs`` (acyclic)."""
    schema = draw(_schemas)
    if schema.startswith("{") and draw(st.booleans()) and draw(st.booleans()):
        return '{"$defs":{"s":' + schema + '},"$ref":"#/$defs/s"}'
    return schema


# --- the engines ------------------------------------------------------------------------------


def _reference(schema: Any, value: Any) -> bool:
    """python-jsonschema with exact numbers, on a JSONDecimal-parsed value."""
    return first_error(compile_exact(schema), value) is None


def _only_integers(value: Any) -> bool:
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
        elif isinstance(item, Decimal):
            return False
    return True


def _verdicts(compiled: CompiledSchema, document: bytes) -> dict[str, bool]:
    """Each engine's verdict where it takes the value, and the dispatcher's."""
    value = parse_ijson(document)
    plain = parse_ijson(document, plain_decimals=True)
    verdicts = {"check": compiled.check(document).accepted}
    try:
        compiled.validate(document)
        verdicts["validate"] = True
    except SchemaValidationError:
        verdicts["validate"] = False
    if compiled._fast is not None:
        verdicts["fast"] = compiled._fast.valid(plain, Meter())
    if compiled._rust is not None and _only_integers(value):
        # Wider than the dispatcher's own gate (integers of at most 15 digits in a large text):
        # the Rust engine compares integers of any size exactly.
        verdicts["rust"] = compiled._rust.is_valid(value)
    small = small_object(document)
    if small is not None:
        assert small == value
        if compiled._rust is not None:
            verdicts["hot path"] = compiled._rust.is_valid(small)
    return verdicts


def _compile(schema_text: str) -> CompiledSchema | None:
    try:
        return CompiledSchema.parse(schema_text.encode())
    except SchemaError:
        return None


@DIFFERENTIAL
@given(schema_text=_schema_documents(), documents=st.lists(_values, min_size=1, max_size=4))
def test_every_engine_reaches_the_exact_verdict(schema_text, documents):
    compiled = _compile(schema_text)
    if compiled is None:
        return
    schema = parse_ijson(compiled.canonical)
    for text in documents:
        document = text.encode()
        expected = _reference(schema, parse_ijson(document))
        verdicts = _verdicts(compiled, document)
        disagreeing = {
            engine: verdict for engine, verdict in verdicts.items() if verdict != expected
        }
        assert not disagreeing, (schema_text, text, expected, disagreeing)


def _near(lexeme: str, offset: str) -> str:
    """A number ``offset`` away from ``lexeme``, written exactly (no exponent)."""
    with localcontext() as context:
        context.prec = 2000
        return format(Decimal(lexeme) + Decimal(offset), "f")


_OFFSETS = ["0", "1", "-1", "1e-20", "-1e-20", "1e-30", "-1e-30", "0.5"]


@st.composite
def _bound_and_value(draw: st.DrawFn) -> tuple[str, str]:
    schema_number = draw(_numbers)
    value = draw(
        st.one_of(
            st.sampled_from(_OFFSETS).map(lambda offset: _near(schema_number, offset)),
            _numbers,
            st.integers(-(2**200), 2**200).map(str),
        )
    )
    return schema_number, value


@DIFFERENTIAL
@given(
    bound=st.sampled_from(["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "const"]),
    pair=_bound_and_value(),
)
def test_numbers_at_the_bounds(bound, pair):
    """Values at, and a hair either side of, the bound (the Rust engine alone gets 1.0
    against 1.00000000000000000001 wrong)."""
    schema_number, value = pair
    compiled = _compile(f'{{"{bound}":{schema_number}}}')
    assert compiled is not None
    document = f'{{"a":{value}}}'.encode()
    property_schema = f'{{"properties":{{"a":{{"{bound}":{schema_number}}}}}}}'
    in_object = _compile(property_schema)
    assert in_object is not None
    expected = _reference(parse_ijson(compiled.canonical), parse_ijson(value.encode()))
    for engine, verdict in _verdicts(compiled, value.encode()).items():
        assert verdict == expected, (bound, schema_number, value, engine)
    for engine, verdict in _verdicts(in_object, document).items():
        assert verdict == expected, (bound, schema_number, value, engine)


@st.composite
def _divisor_and_value(draw: st.DrawFn) -> tuple[str, str]:
    divisor = draw(_positive_numbers)
    multiple = draw(st.integers(-(2**70), 2**70))
    with localcontext() as context:
        context.prec = 2000
        exact = format(Decimal(divisor) * multiple, "f")
    value = draw(
        st.one_of(
            st.sampled_from(_OFFSETS).map(lambda offset: _near(exact, offset)),
            _numbers,
            st.integers(-(2**200), 2**200).map(str),
        )
    )
    return divisor, value


@DIFFERENTIAL
@given(pair=_divisor_and_value())
def test_multiple_of(pair):
    """Multiples of the divisor, and numbers a hair away from one."""
    divisor, value = pair
    compiled = _compile(f'{{"properties":{{"a":{{"multipleOf":{divisor}}}}}}}')
    assert compiled is not None
    document = f'{{"a":{value}}}'.encode()
    expected = _reference(parse_ijson(compiled.canonical), parse_ijson(document))
    for engine, verdict in _verdicts(compiled, document).items():
        assert verdict == expected, (divisor, value, engine)


# --- the hot path's I-JSON proof --------------------------------------------------------------

_RAW_VALUES = [
    '"\\ud800"', '"\\udc00"', '"\\ud800\\u0041"', '"\\ud83d\\ude00"', '"\\n"', '"\\x"',
    '"\\u12"', '"\x01"', '"\x7f"', '"a:b"', "NaN", "Infinity", "-Infinity", "1.", ".5", "01",
    "-", "+1", "-0", "[1,]", "[]", "{}", "true", "tru", "nul", "1e5", "1E+2", '"\ud800"', '"\xff"',
]  # fmt: skip
_raw_members = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "a:b", "\\u0061", "\\ud800", 'x\\"y', "\\n", "\x01"]),
        st.one_of(_numbers, _strings, st.sampled_from(_RAW_VALUES), _values),
    ),
    max_size=4,
)


@DIFFERENTIAL
@given(
    members=_raw_members,
    before=st.sampled_from(["", "", "", " ", "\t", "\ufeff", "\x0b", "\x00"]),
    after=st.sampled_from(["", "", "", " ", "\n", "x", ",", "}", "\x0c", "\x00"]),
    spaced=st.booleans(),
)
def test_small_object_proves_what_parse_ijson_proves(members, before, after, spaced):
    """Duplicate keys, escapes (lone surrogates too), bad numbers, trailing or leading bytes:
    small_object either gives parse_ijson's value or decides nothing."""
    colon = " : " if spaced else ":"
    text = before + "{" + ",".join(f'"{key}"{colon}{value}' for key, value in members) + "}" + after
    document = text.encode("utf-8", "surrogatepass")
    small = small_object(document)
    try:
        value = parse_ijson(document)
    except IJSONError:
        assert small is None, text
        return
    assert small is None or small == value, text


def test_small_object_decides_the_common_case_and_nothing_doubtful():
    assert small_object(b'{"a":2,"b":3}') == {"a": 2, "b": 3}
    assert small_object(b' {"a" : 1}\n') == {"a": 1}
    assert small_object(b'{"t":"line\\nbreak \\ud83d\\ude00"}') == {"t": "line\nbreak \U0001f600"}
    assert small_object(b'{"n":123456789012345678901234567890}') == {
        "n": 123456789012345678901234567890
    }
    for doubtful in (
        b'{"a":1,"a":2}',  # duplicate
        b'{"a":"\\ud800"}',  # a lone surrogate (refused by parse_ijson)
        b'{"a":"\xed\xa0\x80"}',  # the same, raw (not UTF-8)
        b'\xef\xbb\xbf{"a":1}',  # a byte order mark
        b'{"a":1.5}',  # a fraction: not exact for the Rust engine
        b'{"a":{}}',  # nested object: the colon count proves nothing
        b'{"a":"x:y"}',  # a colon in a string: undecided, not refused
        b'{"a":1}x',
        b'{"a":1,}',
        b'{"a":01}',
        b'{"a":Infinity}',
        b'{"a":"\x01"}',
        b"[1]",
        b'{"a":NaN}',
        b"{" + b'"a":1,' * 30 + b'"b":1}',  # over SMALL_OBJECT_BYTES
    ):
        assert small_object(doubtful) is None, doubtful


# --- why the gate exists ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "value", "exact"),
    [
        ({"maximum": 1.0}, "1.00000000000000000001", False),
        ({"exclusiveMinimum": 1.0}, "1.00000000000000000001", True),
        ({"multipleOf": 3}, "3.0000000000000000000000000001", False),
        ({"multipleOf": 1.0}, "1e-400", False),
    ],
)
def test_fractions_stay_away_from_the_rust_engine(schema, value, exact):
    """The Rust engine compares some fractions as doubles; the dispatcher never gives it one
    (the answer is the exact one), whatever jsonschema_rs answers when asked directly."""
    compiled = _compile(json.dumps(schema))
    assert compiled is not None
    assert compiled._rust is not None
    assert compiled.check(value.encode()).accepted is exact
    assert compiled.check(f"[{value}]".encode()).accepted is True  # not a number: no bound
    # If this fails, jsonschema_rs has become exact here and the gate could widen.
    direct = jsonschema_rs.validator_for(schema).is_valid(
        parse_ijson(value.encode(), plain_decimals=True)
    )
    assert direct is not exact
