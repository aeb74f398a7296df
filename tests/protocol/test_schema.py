"""CompiledSchema: parse errors, canonical bytes, 2020-12 semantics, exact numbers, both engines."""

from __future__ import annotations

import json
import pickle
import random
import threading
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scope_tool._ijson import IJSONError, check_ijson, parse_ijson
from scope_tool._schema import (
    MAX_SCHEMA_BYTES,
    CompiledSchema,
    SchemaError,
    SchemaValidationError,
)
from scope_tool._schema_check import CheckOutcome
from scope_tool._schema_exact import compile_exact, first_error, is_multiple
from scope_tool._schema_limits import Meter


def compiled(schema: object) -> CompiledSchema:
    return CompiledSchema.parse(json.dumps(schema).encode())


def rejection(schema: CompiledSchema, instance: bytes) -> str:
    with pytest.raises(SchemaValidationError) as caught:
        schema.validate(instance)
    return str(caught.value)


def padded(size: int) -> bytes:
    head, tail = b'{"description":"', b'","type":"object"}'
    return head + b"x" * (size - len(head) - len(tail)) + tail


# --- parse -----------------------------------------------------------------------------------


def test_max_schema_bytes_is_one_mebibyte():
    assert MAX_SCHEMA_BYTES == 1 << 20


@pytest.mark.parametrize(
    ("document", "detail"),
    [
        (b"", "document is empty"),
        (b'{"a":1,"a":2}', "document is not valid RFC 7493 JSON: duplicate object key"),
        (b'{"type":"object"', "document is not valid RFC 7493 JSON"),
        (b"   ", "document is not valid RFC 7493 JSON"),
        (b'{"type":12}', "compile: /type: "),
        (b'{"minLength":-1}', "compile: /minLength: "),
        (b'{"pattern":"["}', "compile: /pattern: "),
        (b"[]", "compile: a schema must be an object or a boolean, not an array"),
        (b'"object"', "compile: a schema must be an object or a boolean"),
        (b'{"$ref":"https://example.com/s.json"}', "remote references are never loaded"),
        (b'{"$ref":"#/$defs/missing"}', 'compile: $ref "#/$defs/missing" cannot be resolved'),
        (b'{"$schema":"https://example.com/mine"}', 'compile: unknown $schema "https://'),
        (b'{"$schema":7}', "compile: $schema must be a string"),
    ],
)
def test_parse_refuses_with_go_prefix_and_detail(document, detail):
    with pytest.raises(SchemaError) as caught:
        CompiledSchema.parse(document)
    assert str(caught.value).startswith("jsonschema: invalid schema: ")
    assert detail in str(caught.value)
    assert caught.value.detail == str(caught.value).removeprefix("jsonschema: invalid schema: ")


def test_size_limit_at_the_boundary():
    exactly = padded(MAX_SCHEMA_BYTES)
    assert len(exactly) == MAX_SCHEMA_BYTES
    assert CompiledSchema.parse(exactly).canonical == exactly
    with pytest.raises(
        SchemaError, match=r"^jsonschema: invalid schema: document exceeds 1048576 bytes$"
    ):
        CompiledSchema.parse(padded(MAX_SCHEMA_BYTES + 1))


def test_parse_requires_bytes():
    with pytest.raises(TypeError, match="must be bytes"):
        CompiledSchema.parse('{"type":"object"}')  # type: ignore[arg-type]


def test_canonical_bytes_are_minified_and_sorted():
    schema = CompiledSchema.parse(b'{ "type":"object", "b":1, "a":2 }')
    assert schema.canonical == b'{"a":2,"b":1,"type":"object"}'
    assert CompiledSchema.parse(schema.canonical) == schema
    assert hash(CompiledSchema.parse(schema.canonical)) == hash(schema)


def test_compiled_schema_is_immutable_and_picklable():
    schema = compiled({"type": "integer"})
    with pytest.raises(AttributeError, match="immutable"):
        schema._canonical = b"{}"  # type: ignore[misc]
    copy = pickle.loads(pickle.dumps(schema))
    assert copy == schema
    with pytest.raises(SchemaValidationError):
        copy.validate(b'"x"')


def test_boolean_schemas():
    CompiledSchema.parse(b"true").validate(b'{"anything":1}')
    assert "False schema" in rejection(CompiledSchema.parse(b"false"), b"1")


def test_in_document_refs_and_anchors_resolve():
    schema = compiled(
        {
            "$defs": {"name": {"type": "string"}, "node": {"$anchor": "n", "type": "integer"}},
            "properties": {"a": {"$ref": "#/$defs/name"}, "b": {"$ref": "#n"}},
        }
    )
    schema.validate(b'{"a":"x","b":1}')
    assert rejection(schema, b'{"a":1}').startswith("jsonschema: validate value: /a: ")


def test_recursive_refs_validate():
    schema = compiled(
        {"type": "object", "properties": {"child": {"$ref": "#"}}, "additionalProperties": False}
    )
    schema.validate(b'{"child":{"child":{}}}')
    assert "/child/child" in rejection(schema, b'{"child":{"child":{"x":1}}}')


def test_embedded_ids_resolve_without_fetching():
    schema = compiled(
        {
            "$id": "https://example.com/root.json",
            "$defs": {"item": {"$id": "item.json", "type": "string"}},
            "items": {"$ref": "item.json"},
        }
    )
    schema.validate(b'["a"]')
    rejection(schema, b"[1]")


def test_other_drafts_are_selected_by_schema_keyword():
    draft7 = compiled(
        {"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"type": "string"}]}
    )
    draft7.validate(b'["x", 1]')  # draft-07 tuple items
    rejection(draft7, b"[1]")
    with pytest.raises(SchemaError):  # the same keyword is invalid in 2020-12
        compiled({"items": [{"type": "string"}]})


# --- validate ---------------------------------------------------------------------------------


def test_invalid_json_instances_give_the_go_message():
    schema = compiled({"type": "object"})
    for instance in (b"", b"{", b'{"a":1,"a":2}', b'"\\ud800"', b"NaN", b"{} {}"):
        assert rejection(schema, instance) == (
            "jsonschema: value must be one valid RFC 7493 JSON document"
        )


def test_check_json_says_why_an_instance_is_not_json_in_the_same_parse():
    """check_json refuses with check_ijson's own words; check keeps Go's fixed message."""
    schema = compiled({"type": "array", "items": {"type": "number", "multipleOf": 0.01}})
    for instance in (b"", b"[1,", b'{"a":1,"a":2}', b'["\\ud800"]', b"[NaN]", b"[] []"):
        with pytest.raises(IJSONError) as from_check:
            check_ijson(instance)
        with pytest.raises(IJSONError) as from_schema:
            schema.check_json(instance)
        assert str(from_schema.value) == str(from_check.value)
        assert schema.check(instance).detail == (
            "jsonschema: value must be one valid RFC 7493 JSON document"
        )
    assert schema.check_json(b"[1.25, 3]").outcome is CheckOutcome.ACCEPTED
    refused = schema.check_json(b"[1.25, 1.234]")
    assert refused.outcome is CheckOutcome.REFUSED
    assert refused.path == "/1"
    assert refused.violation == "1.234 is not a multiple of 0.01"  # str(), never Decimal('...')
    with pytest.raises(ValueError, match="max_steps"):
        schema.check_json(b"[]", max_steps=-1)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "array", "items": {"anyOf": [{"type": "integer"}, {"multipleOf": 0.01}]}},
        {"$defs": {"n": {"items": {"$ref": "#/$defs/n"}, "maximum": 2.5}}, "$ref": "#/$defs/n"},
    ],
    ids=["fast engine", "exact engine"],
)
def test_both_engines_show_decimals_as_json_text(schema):
    """The fast engine gets plain Decimals (faster to build), the exact one JSONDecimal."""
    verdict = compiled(schema).check(b"[1.5, 2, 7.125]")
    assert verdict.outcome is CheckOutcome.REFUSED
    assert "7.125" in (verdict.violation or "")
    assert "Decimal(" not in verdict.detail


def test_a_number_no_decimal_holds_is_refused_never_raised():
    """Valid I-JSON, but no exact Decimal holds it: a refusal (or SchemaError), not a crash."""
    huge = b"[1e1000000000000000000]"
    for schema in (compiled({"type": "array"}), compiled({"items": {"multipleOf": 0.5}})):
        assert schema.check(huge).outcome is CheckOutcome.REFUSED
        with pytest.raises(IJSONError, match="exponent is beyond"):
            schema.check_json(huge)
    with pytest.raises(SchemaError, match="exponent is beyond"):
        CompiledSchema.parse(b'{"maximum":1e1000000000000000000}')


def test_validation_message_has_pointer_and_reason():
    schema = compiled(
        {
            "type": "object",
            "properties": {"a/b": {"type": "object", "properties": {"c": {"type": "integer"}}}},
            "required": ["a/b"],
        }
    )
    assert rejection(schema, b'{"a/b":{"c":"x"}}').startswith(
        "jsonschema: validate value: /a~1b/c: "
    )
    assert "integer" in rejection(schema, b'{"a/b":{"c":"x"}}')
    assert rejection(schema, b"{}").startswith("jsonschema: validate value: (root): ")
    assert "a/b" in rejection(schema, b"{}")


def test_format_is_asserted():
    cases = {
        "email": ("a@example.com", "nope"),
        "date-time": ("2024-01-02T03:04:05Z", "yesterday"),
        "date": ("2024-02-29", "2023-02-29"),
        "ipv4": ("192.0.2.1", "192.0.2"),
        "uuid": ("123e4567-e89b-12d3-a456-426614174000", "123"),
        "uri": ("https://example.com/x", "not a uri"),
        "hostname": ("example.com", "-bad-.com"),
    }
    for name, (good, bad) in cases.items():
        schema = compiled({"type": "string", "format": name})
        schema.validate(json.dumps(good).encode())
        assert "jsonschema: validate value" in rejection(schema, json.dumps(bad).encode()), name
        # The exact engine means the same: a long decimal elsewhere sends the value there.
        both = compiled({"properties": {"s": {"format": name}}})
        with pytest.raises(SchemaValidationError):
            both.validate(b'{"n":0.12345678901234567890,"s":' + json.dumps(bad).encode() + b"}")
        both.validate(b'{"n":0.12345678901234567890,"s":' + json.dumps(good).encode() + b"}")


def test_unknown_formats_are_ignored():
    compiled({"format": "no-such-format"}).validate(b'"x"')


@pytest.mark.parametrize(
    ("schema", "valid", "invalid"),
    [
        (
            b'{"type":"integer"}',
            [b"1", b"1.0", b"-0", b"1e2", b"18446744073709551616", b"1e999"],
            [b"1.5", b"1e-1", b'"1"', b"true"],
        ),
        (b'{"type":"number"}', [b"1", b"0.1", b"1e999"], [b'"1"', b"null", b"false"]),
        (
            b'{"maximum":18446744073709551615}',
            [b"18446744073709551615", b"18446744073709551614.999999999999999"],
            [b"18446744073709551616", b"18446744073709551615.0000000000000000001"],
        ),
        (
            b'{"exclusiveMaximum":18446744073709551616}',
            [b"18446744073709551615.9999999999999999999"],
            [b"18446744073709551616"],
        ),
        (b'{"minimum":0.1}', [b"0.1", b"0.10000000000000000001"], [b"0.09999999999999999999"]),
        (b'{"multipleOf":0.1}', [b"0.3", b"1e50", b"-7.7"], [b"0.35", b"1e-50"]),
        (b'{"multipleOf":0.01}', [b"0.07", b"123456789012345678901234567890.01"], [b"0.075"]),
        (
            b'{"multipleOf":3}',
            [b"9", b"1000000000000000000000000000002"],
            [b"10", b"1000000000000000000000000000000"],
        ),
        (b'{"multipleOf":1e-30}', [b"1e-30", b"5"], [b"1e-31"]),
        (b'{"const":1}', [b"1", b"1.0", b"1e0"], [b"true", b"1.0000000000000000001"]),
        (b'{"enum":[1e400]}', [b"1e400", b"10e399"], [b"1e401"]),
        (b'{"uniqueItems":true}', [b"[1,2]"], [b"[1,1.0]"]),
    ],
)
def test_numbers_are_exact(schema, valid, invalid):
    compiled_schema = CompiledSchema.parse(schema)
    for instance in valid:
        compiled_schema.validate(instance)
        compiled_schema.validate_value(parse_ijson(instance))
    for instance in invalid:
        rejection(compiled_schema, instance)
        with pytest.raises(SchemaValidationError):
            compiled_schema.validate_value(parse_ijson(instance))


def test_exact_numbers_from_a_schema_written_as_text():
    schema = CompiledSchema.parse(b'{"maximum":0.1}')
    schema.validate(b"0.1")
    rejection(schema, b"0.10000000000000000001")


def test_deeply_nested_instances_get_a_fixed_verdict():
    # A recursive schema checks values up to MAX_NESTING deep; deeper ones are refused up
    # front (tests/protocol/test_schema_limits.py proves the verdict ignores the stack).
    recursive = compiled({"items": {"$ref": "#"}})
    deep = b"[" * 5000 + b"]" * 5000
    with pytest.raises(SchemaValidationError, match="value nests deeper than 64 levels"):
        recursive.validate(deep)
    recursive.validate(b"[" * 64 + b"]" * 64)
    # A schema that cannot recurse looks only so deep: any I-JSON depth is fine.
    compiled({"type": "array"}).validate(deep)
    compiled({"items": {"type": "array"}}).validate(deep)
    with pytest.raises(SchemaValidationError, match="is not of type 'object'"):
        compiled({"items": {"type": "object"}}).validate(deep)


def test_validation_is_safe_from_threads():
    schema = compiled({"type": "object", "properties": {"n": {"type": "integer"}}})
    failures: list[BaseException] = []

    def work(index: int) -> None:
        try:
            for _ in range(200):
                schema.validate(f'{{"n":{index}}}'.encode())
                with pytest.raises(SchemaValidationError):
                    schema.validate(b'{"n":"x"}')
        except BaseException as exc:  # pragma: no cover - reported below
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


# --- the two engines agree ---------------------------------------------------------------------

numbers = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.decimals(allow_nan=False, allow_infinity=False, places=None).filter(
        lambda d: abs(d.adjusted()) < 40
    ),
)


def lexeme(value: int | Decimal) -> str:
    return str(value)  # Decimal's str is always a valid JSON number lexeme


@settings(max_examples=400, deadline=None, database=None)
@given(
    st.sampled_from(
        ["maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum", "multipleOf", "const"]
    ),
    numbers,
    numbers,
)
def test_fast_and_exact_engines_agree_with_exact_arithmetic(keyword, bound, value):
    if keyword == "multipleOf" and bound <= 0:
        bound = -bound or 1
    schema_text = f'{{"{keyword}":{lexeme(bound)}}}'.encode()
    instance = lexeme(value).encode()
    schema = CompiledSchema.parse(schema_text)
    exact_bound = parse_ijson(lexeme(bound).encode())
    exact_value = parse_ijson(instance)
    expected = {
        "maximum": lambda: exact_value <= exact_bound,
        "minimum": lambda: exact_value >= exact_bound,
        "exclusiveMaximum": lambda: exact_value < exact_bound,
        "exclusiveMinimum": lambda: exact_value > exact_bound,
        "multipleOf": lambda: is_multiple(exact_value, exact_bound),
        "const": lambda: exact_value == exact_bound,
    }[keyword]()
    try:
        schema.validate(instance)
        verdict = True
    except SchemaValidationError:
        verdict = False
    assert verdict == expected
    reference = compile_exact(parse_ijson(schema_text))
    assert (first_error(reference, exact_value) is None) == expected
    assert schema._fast is not None
    assert schema._fast.valid(exact_value, Meter()) == expected
    for wrapped in ([exact_value], {"n": exact_value}):  # inside containers too
        nested = CompiledSchema.parse(
            b'{"items":' + schema_text + b',"properties":{"n":' + schema_text + b"}}"
        )
        assert nested._fast is not None
        assert nested._fast.valid(wrapped, Meter()) == expected


def test_is_multiple_against_fractions():
    from fractions import Fraction

    rng = random.Random(5)
    for _ in range(2000):
        value = Decimal(rng.randint(-(10**12), 10**12)).scaleb(-rng.randint(0, 12))
        divisor = Decimal(rng.randint(1, 10**4)).scaleb(-rng.randint(0, 6))
        expected = (Fraction(value) / Fraction(divisor)).denominator == 1
        assert is_multiple(value, divisor) == expected, (value, divisor)
    assert is_multiple(Decimal("1e999999999"), 7) is False  # no huge allocation
    assert is_multiple(Decimal("1e999999999"), 5) is True


def test_the_fast_engine_is_used_only_where_numbers_are_exact():
    assert compiled({"type": "object", "properties": {"a": {"maximum": 0.5}}})._rust is not None
    assert CompiledSchema.parse(b'{"maximum":0.1}')._rust is None  # 0.1 is not a double
    assert CompiledSchema.parse(b'{"maximum":18446744073709551616}')._rust is None


def test_parse_compiles_a_small_schema_once_and_never_caches_a_refusal():
    raw = b'{"type":"object","properties":{"approve":{"type":"boolean"}},"required":["approve"]}'
    first = CompiledSchema.parse(raw)
    assert CompiledSchema.parse(bytearray(raw)) is first  # the same immutable compiled value
    first.validate(b'{"approve":true}')
    with pytest.raises(SchemaValidationError):
        first.validate(b'{"approve":"yes"}')
    bad = b'{"type":"no-such-type"}'
    for _ in range(2):  # refused every time, not remembered as a success or a stale error
        with pytest.raises(SchemaError, match="compile"):
            CompiledSchema.parse(bad)


def test_parse_does_not_keep_large_schemas():
    # Past 64 KiB a schema is compiled afresh: the cache stays small whatever tools register.
    description = "x" * (65 * 1024)
    raw = json.dumps({"type": "string", "description": description}).encode()
    first = CompiledSchema.parse(raw)
    second = CompiledSchema.parse(raw)
    assert first == second
    assert first is not second


def test_a_subschema_declaring_schema_keeps_exact_numbers():
    # python-jsonschema's evolve picks the *stock* class for a subschema with "$schema" (here
    # the root, reached again through "$ref": "#"): numbers must stay exact there too.
    schema = compiled(
        {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "anyOf": [{"type": "integer"}, {"items": {"$ref": "#"}, "type": "array"}],
        }
    )
    schema.validate(b"[[1.0,[2.0]],0.12345678901234567890e20]")
    rejection(schema, b"[[1.5]]")
    multiple = compiled(
        {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "anyOf": [
                {"type": "number", "multipleOf": 0.01},
                {"type": "array", "items": {"$ref": "#"}},
            ],
        }
    )
    multiple.validate(b"[[123456789012345678901234567890.01]]")
    rejection(multiple, b"[[123456789012345678901234567890.001]]")


def test_integer_keywords_written_as_decimals_compile():
    schema = CompiledSchema.parse(b'{"maxItems":2.0,"items":{"minLength":1.0}}')
    schema.validate(b'["a","b"]')
    rejection(schema, b'["a","b","c"]')
    rejection(schema, b'[""]')
    with pytest.raises(SchemaError, match="maxItems"):
        CompiledSchema.parse(b'{"maxItems":2.5}')


def test_urn_base_and_embedded_ids_resolve():
    schema = compiled(
        {
            "$id": "urn:uuid:deadbeef-1234-ffff-ffff-4321feebdaed",
            "properties": {"foo": {"$ref": "#/$defs/bar"}},
            "$defs": {"bar": {"type": "string"}},
        }
    )
    schema.validate(b'{"foo":"x"}')
    rejection(schema, b'{"foo":1}')
    with pytest.raises(SchemaError, match=r'\$ref "#/\$defs/nope" cannot be resolved$'):
        compiled({"$id": "urn:uuid:deadbeef-1234", "$ref": "#/$defs/nope"})


@pytest.mark.parametrize(
    ("schema", "valid", "invalid"),
    [
        # \d and \w are ASCII in ECMA 262 (Python's re reads them as Unicode).
        (
            {"patternProperties": {"^\\d+$": {"type": "integer"}}},
            [b'{"\xe0\xa7\xaa": "x"}', b'{"42": 1}'],
            [b'{"42": "x"}'],
        ),
        (
            {"patternProperties": {"^\\w$": True}, "additionalProperties": False},
            [b'{"a": 1}'],
            [b'{"\xc3\xa9": 1}'],
        ),
        (
            {"patternProperties": {"^\\p{Letter}+$": True}, "unevaluatedProperties": False},
            [b'{"\xc3\xa9cole": 1}'],
            [b'{"42": 1}'],
        ),
        (
            {"allOf": [{"patternProperties": {"^\\p{L}": True}}], "unevaluatedProperties": False},
            [b'{"\xc3\xa9": 1}'],
            [b'{"_": 1}'],
        ),
    ],
)
def test_pattern_properties_are_ecma_262_in_every_engine(schema, valid, invalid):
    compiled_schema = compiled(schema)
    for instance, accepted in [(each, True) for each in valid] + [(e, False) for e in invalid]:
        value = parse_ijson(instance)
        verdicts = {"exact": first_error(compiled_schema._exact, value) is None}
        if compiled_schema._fast is not None:
            verdicts["fast"] = compiled_schema._fast.valid(value, Meter())
        if compiled_schema._rust is not None:
            verdicts["rust"] = compiled_schema._rust.is_valid(value)
        try:
            compiled_schema.validate(instance)
            verdicts["validate"] = True
        except SchemaValidationError:
            verdicts["validate"] = False
        assert set(verdicts.values()) == {accepted}, (schema, instance, verdicts)
