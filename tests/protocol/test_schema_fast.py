"""The fast exact engine: which schemas it takes, exact numbers, messages, and budgets."""

from __future__ import annotations

import decimal
import json
import random
from decimal import Decimal
from fractions import Fraction

import pytest

from scope_tool._ijson import parse_ijson
from scope_tool._schema import CompiledSchema, SchemaError, SchemaValidationError
from scope_tool._schema_exact import first_error
from scope_tool._schema_limits import Meter


def fast_and_exact(schema: CompiledSchema, document: bytes) -> tuple[bool, bool]:
    value = parse_ijson(document)
    assert schema._fast is not None
    return schema._fast.valid(value, Meter()), first_error(schema._exact, value) is None


@pytest.mark.parametrize(
    "raw",
    [
        b'{"type":"array","items":{"anyOf":[{"type":"integer"},{"multipleOf":0.01}]}}',
        b'{"$defs":{"n":{"type":"number"}},"properties":{"a":{"$ref":"#/$defs/n"}}}',
        b'{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object"}',
        b'{"if":{"type":"string"},"then":{"minLength":2},"else":{"type":"null"}}',
    ],
)
def test_takes_common_acyclic_schemas(raw):
    assert CompiledSchema.parse(raw)._fast is not None


@pytest.mark.parametrize(
    "raw",
    [
        b'{"items":{"$ref":"#"}}',  # recursive
        b'{"unevaluatedProperties":false}',
        b'{"contains":{"type":"string"}}',
        b'{"dependentSchemas":{"a":{"required":["b"]}}}',
        b'{"$schema":"http://json-schema.org/draft-07/schema#","items":[{"type":"string"}]}',
    ],
)
def test_leaves_the_rest_to_the_exact_engine(raw):
    schema = CompiledSchema.parse(raw)
    assert schema._fast is None
    schema.validate(b"{}")


@pytest.mark.parametrize(
    ("divisor", "value"),
    [
        ("0.01", "1.23"),
        ("0.01", "1.234"),
        ("0.01", "123456789012345678901234567890.01"),
        ("0.01", "123456789012345678901234567890.001"),
        ("7", "1e999999999"),
        ("5", "1e999999999"),
        ("1e-30", "1e-31"),
        ("3", "1e500"),
        ("0.3", "9" * 500 + ".9"),
        ("1", "1.0000000000000000000000000000000000001"),
        ("0.01", "1e-1000030"),  # flushed to 0 by the default context's exponent range
        ("1", "1e-1000030"),
        ("0.01", "1e1000030"),
        ("3", "1e1000030"),
    ],
)
def test_multiple_of_is_exact_whatever_the_size(divisor, value):
    schema = CompiledSchema.parse(b'{"multipleOf":' + divisor.encode() + b"}")
    if value in ("1e999999999", "1e1000030"):  # too big for a Fraction; 10**n = 2**n * 5**n
        expected = divisor in ("5", "0.01")
    else:
        expected = (Fraction(Decimal(value)) / Fraction(Decimal(divisor))).denominator == 1
    assert fast_and_exact(schema, value.encode()) == (expected, expected)
    assert (schema.check(value.encode()).outcome.value == "accepted") == expected
    integer = CompiledSchema.parse(b'{"items":{"type":"integer"}}')
    is_integer = value in ("1e999999999", "1e1000030", "1e500") or (
        "e" not in value and Fraction(Decimal(value)).denominator == 1
    )
    assert fast_and_exact(integer, b"[" + value.encode() + b"]") == (is_integer, is_integer)


def test_numbers_stay_exact_under_a_caller_s_decimal_context():
    # A tool may set a tiny precision and turn traps off in its thread: verdicts must not move.
    schema = CompiledSchema.parse(
        b'{"items":{"anyOf":[{"type":"integer"},{"type":"number","multipleOf":0.01}]}}'
    )
    document = b"[123456789.12, 1e40, 123456789.125, 10.000000000000000000000000000001]"
    expected = fast_and_exact(schema, document)
    assert expected == (False, False)
    with decimal.localcontext() as context:
        context.prec = 3
        context.traps[decimal.InvalidOperation] = False
        assert fast_and_exact(schema, document) == expected
        for item, valid in ((b"[123456789.12]", True), (b"[1e40]", True), (b"[1.005]", False)):
            assert fast_and_exact(schema, item) == (valid, valid)


def test_agrees_with_fractions_on_random_decimals():
    rng = random.Random(17)
    schema = CompiledSchema.parse(
        b'{"items":{"anyOf":[{"type":"integer"},{"type":"number","multipleOf":0.05}]}}'
    )
    for _ in range(300):
        value = Decimal(rng.randint(-(10**30), 10**30)).scaleb(-rng.randint(0, 40))
        text = str(value).encode()
        fraction = Fraction(value)
        expected = fraction.denominator == 1 or (fraction / Fraction(1, 20)).denominator == 1
        assert fast_and_exact(schema, b"[" + text + b"]") == (expected, expected), text


def test_refusals_name_the_place_and_the_reason():
    schema = CompiledSchema.parse(
        b'{"type":"object","properties":{"rows":{"type":"array","items":{"type":"object",'
        b'"properties":{"price":{"multipleOf":0.01}},"required":["price"],'
        b'"additionalProperties":false}}},"required":["rows"]}'
    )
    assert schema._fast is not None
    cases = {
        b'{"rows":[{"price":1.5},{"price":1.505}]}': "/rows/1/price: 1.505 is not a multiple of 0.01",
        b'{"rows":[{"price":1},{}]}': '/rows/1: "price" is a required property',
        b'{"rows":[{"price":1,"x":2}]}': '/rows/0: Additional properties are not allowed ("x" unexpected)',
        b"{}": '(root): "rows" is a required property',
    }
    for document, detail in cases.items():
        with pytest.raises(SchemaValidationError) as caught:
            schema.validate(document)
        assert str(caught.value) == f"jsonschema: validate value: {detail}"
    schema.validate(b'{"rows":[{"price":1.25},{"price":3}]}')


def test_enum_const_and_unique_items_compare_json_values():
    enum = CompiledSchema.parse(b'{"enum":[1,"1",[1.0,{"a":null}],false]}')
    for good in (b"1.0", b'"1"', b'[1,{"a":null}]', b"false"):
        assert fast_and_exact(enum, good) == (True, True), good
    for bad in (b"true", b"0", b'[1,{"a":false}]', b'{"a":null}'):
        assert fast_and_exact(enum, bad) == (False, False), bad
    unique = CompiledSchema.parse(b'{"uniqueItems":true}')
    assert fast_and_exact(unique, b'[1,true,"1",[1],{"a":1}]') == (True, True)
    assert fast_and_exact(unique, b'[{"a":1,"b":2},{"b":2,"a":1.0}]') == (False, False)


# --- differential: random schemas and values, fast engine against python-jsonschema ----------

_NUMBERS = ["0", "1", "2.0", "-1", "0.5", "0.01", "3", "1e2", "1.5e-3", "18446744073709551616"]
_STRINGS = ["", "a", "ab", "abc", "A1", "x-y", "1"]
_TYPES = ["null", "boolean", "integer", "number", "string", "array", "object"]


class _Generator:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def value(self, depth: int = 0) -> str:
        rng = self.rng
        roll = rng.random()
        if depth > 3 or roll < 0.45:
            scalars = [*_NUMBERS, *(f'"{text}"' for text in _STRINGS), "true", "false", "null"]
            return rng.choice(scalars)
        if roll < 0.7:
            return "[" + ",".join(self.value(depth + 1) for _ in range(rng.randint(0, 4))) + "]"
        keys = rng.sample(["a", "b", "c", "d", "ab"], rng.randint(0, 4))
        return "{" + ",".join(f'"{key}":{self.value(depth + 1)}' for key in keys) + "}"

    def schemas(self, count: int, depth: int) -> str:
        return "[" + ",".join(self.schema(depth + 1) for _ in range(count)) + "]"

    def named(self, names: list[str], depth: int) -> str:
        chosen = self.rng.sample(names, self.rng.randint(1, 2))
        return "{" + ",".join(f'"{name}":{self.schema(depth + 1)}' for name in chosen) + "}"

    def schema(self, depth: int = 0) -> str:
        rng = self.rng
        if depth > 3 or rng.random() < 0.15:
            return rng.choice(["true", "false", "{}"])
        choices = {
            "type": lambda: json.dumps(
                rng.choice(_TYPES) if rng.random() < 0.7 else rng.sample(_TYPES, 2)
            ),
            "enum": lambda: "[" + ",".join(self.value(3) for _ in range(rng.randint(1, 3))) + "]",
            "const": lambda: self.value(2),
            "multipleOf": lambda: rng.choice(["0.01", "0.5", "3", "1", "2.0", "1e-3"]),
            "maximum": lambda: rng.choice(_NUMBERS),
            "exclusiveMinimum": lambda: rng.choice(_NUMBERS),
            "minLength": lambda: rng.choice(["0", "1", "2", "2.0"]),
            "maxItems": lambda: rng.choice(["0", "1", "2", "2.0"]),
            "minProperties": lambda: rng.choice(["0", "1", "2"]),
            "pattern": lambda: json.dumps(rng.choice(["^a", "b$", "[0-9]", "^$"])),
            "format": lambda: json.dumps(rng.choice(["email", "date", "ipv4", "unknown-x"])),
            "uniqueItems": lambda: rng.choice(["true", "false"]),
            "required": lambda: json.dumps(rng.sample(["a", "b", "c"], rng.randint(0, 2))),
            "dependentRequired": lambda: json.dumps({"a": rng.sample(["b", "c"], 1)}),
            "properties": lambda: self.named(["a", "b", "c"], depth),
            "patternProperties": lambda: self.named(["^a", "b", "c$"], depth),
            "prefixItems": lambda: self.schemas(rng.randint(1, 2), depth),
            **{
                word: (lambda: self.schema(depth + 1))
                for word in ("items", "additionalProperties", "propertyNames", "not", "if")
            },
            **{word: (lambda: self.schema(depth + 1)) for word in ("then", "else")},
            **{
                word: (lambda: self.schemas(rng.randint(1, 3), depth))
                for word in ("allOf", "anyOf", "oneOf")
            },
        }
        words = rng.sample(sorted(choices), rng.randint(1, 3))
        return "{" + ",".join(f'"{word}":{choices[word]()}' for word in words) + "}"


@pytest.mark.parametrize("seed", range(3))
def test_random_schemas_get_the_exact_engine_s_verdicts(seed):
    generator = _Generator(seed)
    compared = 0
    for _ in range(100):
        try:
            schema = CompiledSchema.parse(generator.schema().encode())
        except SchemaError:
            continue
        for _ in range(5):
            document = generator.value().encode()
            value = parse_ijson(document)
            expected = first_error(schema._exact, value) is None
            assert schema.check(document).accepted == expected, (schema, document)
            if schema._fast is not None:
                compared += 1
                assert schema._fast.valid(value, Meter()) == expected, (schema, document)
    assert compared > 300
