"""Definition: shape validation (Go's order and messages), JSON form, schema model."""

from __future__ import annotations

import dataclasses
import json
import pickle

import pytest

from scope_tool._definition import Definition
from scope_tool._schema import CompiledSchema
from scope_tool.errors import InvalidDefinitionError

OBJECT = b'{"type":"object"}'


def detail(definition: Definition) -> str:
    with pytest.raises(InvalidDefinitionError) as caught:
        definition.validate()
    assert str(caught.value).startswith("tool: invalid definition: ")
    return str(caught.value.detail)


def test_schema_accepts_bytes_str_and_mapping_stored_as_bytes():
    assert Definition("a", input_schema=OBJECT).input_schema == OBJECT
    assert (
        Definition("a", input_schema=' {"type": "object"} ').input_schema == b' {"type": "object"} '
    )
    assert Definition("a", input_schema={"type": "object"}).input_schema == OBJECT
    assert Definition("a", input_schema=bytearray(OBJECT)).input_schema == OBJECT


def test_defaults_frozen_and_value_equality():
    definition = Definition(name="a", input_schema=OBJECT)
    assert definition.description == ""
    with pytest.raises(dataclasses.FrozenInstanceError):
        definition.name = "b"  # type: ignore[misc]
    assert definition == Definition("a", "", OBJECT)
    assert hash(definition) == hash(Definition("a", "", OBJECT))
    assert pickle.loads(pickle.dumps(definition)) == definition


@pytest.mark.parametrize("name", ["a", "A-z_0-9", "x" * 64, "get_weather", "-", "_"])
def test_valid_names(name):
    Definition(name, input_schema=OBJECT).validate()


@pytest.mark.parametrize(
    "name", ["", "x" * 65, "add\n", "\nadd", "a b", "a.b", "ä", "a/b", "add\x00", "\uff41"]
)
def test_invalid_names(name):
    assert detail(Definition(name, input_schema=OBJECT)) == (
        f"name {json.dumps(name)} must match ^[A-Za-z0-9_-]{{1,64}}$"
    )


def test_description_must_be_valid_text():
    assert detail(Definition("a", "bad \ud800", OBJECT)) == "description is not valid UTF-8 text"
    Definition("a", "any text, même unicode ☃", OBJECT).validate()


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (b"", "input schema is empty"),
        (b"{", "input schema is not valid RFC 7493 JSON"),
        (b'{"type":"object","type":"object"}', "duplicate object key"),
        (b"\xff", "invalid UTF-8 at byte 0"),
        ('{"type":"object","x":"\ud800"}', "invalid UTF-8"),
        (b"null", "input schema must be a JSON object"),
        (b"[]", "input schema must be a JSON object"),
        (b'"object"', "input schema must be a JSON object"),
        (b"{}", 'input schema "type" must be the string "object"'),
        (b'{"type":"array"}', 'input schema "type" must be the string "object"'),
        (b'{"type":["object"]}', 'input schema "type" must be the string "object"'),
    ],
)
def test_schema_shape(schema, message):
    assert message in detail(Definition("a", input_schema=schema))


def test_validation_order_is_name_then_description_then_schema():
    assert detail(Definition("", "\ud800", b"")).startswith("name")
    assert detail(Definition("a", "\ud800", b"")).startswith("description")


def test_validate_does_not_compile_the_schema():
    # Nested keywords are bind's business (Go: NewGuard accepts, Bind refuses).
    definition = Definition("a", input_schema=b'{"type":"object","properties":{"x":{"type":12}}}')
    definition.validate()
    with pytest.raises(ValueError, match="compile"):
        CompiledSchema.parse(definition.input_schema)


def test_mapping_that_is_not_json_is_refused():
    with pytest.raises(InvalidDefinitionError, match="input schema is not JSON"):
        Definition("a", input_schema={"type": "object", "bad": float("nan")})
    with pytest.raises(InvalidDefinitionError, match="input schema is not JSON"):
        Definition("a", input_schema={"type": "object", "bad": object()})


def test_wrong_types_are_type_errors():
    with pytest.raises(TypeError):
        Definition(1)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Definition("a", description=None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Definition("a", input_schema=1)  # type: ignore[arg-type]


# --- JSON --------------------------------------------------------------------------------------


def test_to_json_splices_the_schema_and_omits_empty_description():
    schema = b'{ "type": "object", "b": 1 }'
    assert (
        Definition("a", input_schema=schema).to_json()
        == b'{"name":"a","input_schema":' + schema + b"}"
    )
    assert Definition("a", 'adds "two"', OBJECT).to_json() == (
        b'{"name":"a","description":"adds \\"two\\"","input_schema":{"type":"object"}}'
    )


def test_to_json_validates_first():
    with pytest.raises(InvalidDefinitionError, match="name"):
        Definition("", input_schema=OBJECT).to_json()


@pytest.mark.parametrize(
    "definition",
    [
        Definition("a", input_schema=OBJECT),
        Definition(
            "get-weather_2",
            "Get the weather ☀ \n in a city",
            b'{"type":"object","properties":{"city":{"type":"string"}}}',
        ),
        Definition("a", input_schema=b' {"type" : "object"} '),
    ],
)
def test_round_trip_is_byte_exact(definition):
    encoded = definition.to_json()
    decoded = Definition.from_json(encoded)
    assert decoded == definition
    assert decoded.to_json() == encoded
    assert Definition.from_json(encoded.decode()) == definition


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (b"", "definition JSON: document is empty"),
        (b"[]", "must be a JSON object"),
        (b'{"name":"a","name":"b","input_schema":{"type":"object"}}', "duplicate object key"),
        (b'{"name":"a","input_schema":{"type":"object"},"extra":1}', 'unknown member "extra"'),
        (b'{"name":"a","input_schema":{"type":"object"},"Name":"b"}', 'unknown member "Name"'),
        (b'{"input_schema":{"type":"object"}}', 'missing member "name"'),
        (b'{"name":"a"}', 'missing member "input_schema"'),
        (b'{"name":1,"input_schema":{"type":"object"}}', 'member "name" must be a string'),
        (
            b'{"name":"a","description":null,"input_schema":{"type":"object"}}',
            'member "description" must be a string',
        ),
        (b'{"name":"a b","input_schema":{"type":"object"}}', "must match"),
        (b'{"name":"a","input_schema":{"type":"array"}}', '"type" must be the string "object"'),
        (b'{"name":"a","input_schema":{}} x', "trailing data"),
    ],
)
def test_from_json_is_strict(text, message):
    with pytest.raises(InvalidDefinitionError) as caught:
        Definition.from_json(text)
    assert message in str(caught.value)


def test_json_schema_model_describes_the_json_form():
    model = Definition.json_schema_model()
    assert model == Definition.json_schema_model()
    assert model is not Definition.json_schema_model()  # a fresh dict each time
    schema = CompiledSchema.parse(json.dumps(model).encode())
    schema.validate(Definition("a", "d", OBJECT).to_json())
    with pytest.raises(ValueError, match="validate value"):
        schema.validate(b'{"name":"a b","input_schema":{"type":"object"}}')
    with pytest.raises(ValueError, match="validate value"):
        schema.validate(b'{"name":"a","input_schema":{"type":"object"},"x":1}')
