"""The I-JSON gate (RFC 7493 as Go's jsontext applies it), blank test and canonical form."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from scope_tool._ijson import (
    MAX_DEPTH,
    MAX_INPUT_BYTES,
    IJSONError,
    JSONDecimal,
    canonical_json,
    check_ijson,
    is_blank,
    parse_ijson,
    raw_object_members,
)


def refused(data: bytes) -> str:
    with pytest.raises(IJSONError) as caught:
        check_ijson(data)
    with pytest.raises(IJSONError):
        parse_ijson(data)
    with pytest.raises(IJSONError):
        canonical_json(data)
    return str(caught.value)


def test_max_input_bytes_is_one_mebibyte():
    assert MAX_INPUT_BYTES == 1_048_576


@pytest.mark.parametrize(
    "document",
    [
        b"{}",
        b"[]",
        b"0",
        b"-0",
        b"-1.5e-7",
        b'"text"',
        b"true",
        b"false",
        b"null",
        b' \t\r\n{"a": [1, 2, {"b": null}]}\n ',
        b'{"a":{"a":1},"b":{"a":2}}',  # the same key in different objects is fine
        '"caf\u00e9 \u2603 \U0001f600"'.encode(),
        b'"\\ud83d\\ude00"',  # an escaped surrogate *pair* is one code point
        b'"\\u0000 \\n \\" \\\\ \\/"',
        b"1e999",  # numbers are not range checked
        b"18446744073709551616",
        b"-18446744073709551617",
        b'"\xef\xbb\xbf"',  # U+FEFF inside a string is just a character
    ],
)
def test_valid_documents_pass(document):
    check_ijson(document)
    assert parse_ijson(document) == parse_ijson(document)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (b"", "document is empty"),
        (b" \n\t ", "document holds only whitespace"),
        (b"{} {}", "trailing data after the document at byte 3"),
        (b"1 2", "trailing data after the document at byte 2"),
        (b'{"a":1,"a":2}', 'duplicate object key "a"'),
        (b'[{"x":{"k":1,"k":1}}]', 'duplicate object key "k"'),
        (b'{"\\u0061":1,"a":2}', 'duplicate object key "a"'),  # same key, different escaping
        (b'"\\ud800"', "lone surrogate U+D800"),
        (b'"\\udc00 tail"', "lone surrogate U+DC00"),
        (b'{"\\udfff":1}', "lone surrogate U+DFFF"),
        (b'"\\ud83d\\u0041"', "lone surrogate U+D83D"),
        (b"NaN", "NaN is not a JSON value"),
        (b"[Infinity]", "Infinity is not a JSON value"),
        (b"-Infinity", "-Infinity is not a JSON value"),
        (b"[1,]", "invalid JSON at byte 3"),
        (b'{"a":1,}', "invalid JSON at byte 7"),
        (b"// c\n{}", "invalid JSON at byte 0"),
        (b"{/* c */}", "invalid JSON at byte 1"),
        (b"'a'", "invalid JSON at byte 0"),
        (b"01", "trailing data after the document at byte 1"),
        (b"{", "invalid JSON at byte 1"),
        (b'"a\x01"', "invalid JSON at byte 2"),  # raw control character in a string
        (b'"\\x41"', "invalid JSON at byte 1"),
        (b"\xff", "invalid UTF-8 at byte 0"),
        (b'"ok" \xc3', "invalid UTF-8 at byte 5"),
        (b'"\xed\xa0\x80"', "invalid UTF-8 at byte 1"),  # an encoded surrogate
        (b"\xef\xbb\xbf{}", "byte order mark at byte 0 is not allowed"),
        (b"\x0b{}", "invalid JSON at byte 0"),  # \v is not JSON whitespace
        (b"\xc2\xa0{}", "invalid JSON at byte 0"),  # nor is NBSP
    ],
)
def test_invalid_documents_are_refused_with_a_reason(document, message):
    assert message in refused(document)


def test_byte_offsets_count_bytes_not_characters():
    # "é" is two bytes: the trailing data starts at byte 5, character 4.
    assert "at byte 5" in refused('"é" x'.encode())


def test_non_bytes_input_is_a_type_error():
    with pytest.raises(TypeError, match="must be bytes"):
        check_ijson("{}")  # type: ignore[arg-type]


def test_bytearray_and_memoryview_are_accepted():
    check_ijson(bytearray(b"[1]"))  # type: ignore[arg-type]
    assert parse_ijson(memoryview(b'{"a":1}')) == {"a": 1}  # type: ignore[arg-type]


# --- numbers ---------------------------------------------------------------------------------


def test_parse_keeps_numbers_exact():
    value = parse_ijson(b'{"i":18446744073709551616,"f":0.1,"e":1e999,"n":-0.0}')
    assert value["i"] == 18446744073709551616
    assert type(value["i"]) is int
    assert value["f"] == Decimal("0.1")
    assert isinstance(value["f"], Decimal)
    assert value["e"] == Decimal("1e999")
    assert not any(isinstance(v, float) for v in value.values())


def test_integers_beyond_python_digit_limit_are_kept_exactly():
    digits = "9" * 5000  # int(str) refuses more than 4300 digits by default
    check_ijson(digits.encode())
    value = parse_ijson(digits.encode())
    assert value == Decimal(digits)
    assert canonical_json(f"[{digits}]".encode()) == f"[{digits}]".encode()


def test_decimal_repr_is_its_json_text():
    assert repr(parse_ijson(b"[2.50]")) == "[2.50]"


# --- nesting depth ---------------------------------------------------------------------------


def nested(depth: int, opener: bytes = b"[", closer: bytes = b"]", core: bytes = b"") -> bytes:
    return opener * depth + core + closer * depth


@pytest.mark.parametrize("depth", [1, 199, 200, 201, 999, 1000, 5000, MAX_DEPTH])
def test_nesting_up_to_the_limit_passes(depth):
    document = nested(depth, core=b"1")
    check_ijson(document)
    assert canonical_json(document) == document
    value = parse_ijson(document)
    for _ in range(depth):
        value = value[0]
    assert value == 1


def test_nesting_objects_up_to_the_limit_passes():
    document = b'{"a":' * MAX_DEPTH + b"null" + b"}" * MAX_DEPTH
    check_ijson(document)
    assert canonical_json(document) == document


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 100_000])
def test_nesting_beyond_the_limit_is_refused_not_a_crash(depth):
    assert refused(nested(depth)) == f"nesting deeper than {MAX_DEPTH}"


def test_deep_documents_still_get_every_other_check():
    deep = nested(500, core=b'{"a":1,"a":2}')
    assert 'duplicate object key "a"' in refused(deep)
    assert "lone surrogate" in refused(nested(500, core=b'"\\ud800"'))
    assert "trailing data" in refused(nested(500) + b" 1")
    assert "invalid JSON" in refused(nested(500, core=b"[1,]"))
    assert "NaN" in refused(nested(500, core=b"NaN"))  # not JSON: unexpected character
    assert "invalid JSON" in refused(b"[" * 500 + b"]" * 499)


def test_deep_and_fast_paths_agree_on_values():
    core = b'{"b":[1,2.5,"x\\n",true,false,null,{}],"a":-0}'
    shallow = parse_ijson(nested(10, core=core))
    deep = parse_ijson(nested(10, core=nested(400, core=core)))
    for _ in range(400):
        deep = deep[0] if isinstance(deep, list) and len(deep) == 1 else deep
    assert shallow == deep


def test_brackets_inside_strings_do_not_count_as_nesting():
    document = json.dumps(["[" * 20_000, "{" * 20_000]).encode()
    check_ijson(document)


# --- is_blank --------------------------------------------------------------------------------

GO_SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + ("\u2028\u2029\u202f\u205f\u3000")
)


@pytest.mark.parametrize("char", list(GO_SPACE))
def test_each_go_space_is_blank(char):
    assert is_blank(char)
    assert is_blank(char.encode())
    assert is_blank(char * 3)


def test_empty_is_blank():
    assert is_blank("")
    assert is_blank(b"")


@pytest.mark.parametrize("char", ["\x1c", "\x1d", "\x1e", "\x1f", "\u200b", "\ufeff", "\x00", "a"])
def test_non_go_spaces_are_not_blank(char):
    assert not is_blank(char)
    assert not is_blank(" " + char + " ")


def test_the_go_set_is_exact_over_the_whole_bmp():
    # str.isspace() disagrees with Go exactly on U+001C..U+001F; nothing else differs.
    go = {chr(c) for c in range(0x10000) if not 0xD800 <= c <= 0xDFFF and is_blank(chr(c))}
    assert go == set(GO_SPACE)
    python = {chr(c) for c in range(0x10000) if chr(c).isspace()}
    assert python - go == {"\x1c", "\x1d", "\x1e", "\x1f"}


def test_bytes_that_are_not_utf8_are_not_blank():
    assert not is_blank(b"\xff")
    assert not is_blank(b" \xa0")  # a bare NBSP byte is not UTF-8


# --- canonical_json ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("document", "canonical"),
    [
        (b' { "b" : 1 , "a" : 2 , "type" : "object" } ', b'{"a":2,"b":1,"type":"object"}'),
        (b'{"z":{"y":1,"x":[{"d":0,"c":0}]}}', b'{"z":{"x":[{"c":0,"d":0}],"y":1}}'),
        (b"[1.0E+2, -0, 1e999, 0.10]", b"[1.0E+2,-0,1e999,0.10]"),  # lexemes kept verbatim
        (b'"\\u00e9\\/\\u0041"', '"\u00e9/A"'.encode()),  # shortest escaping
        (b'"\\u001f\\b\\f\\n\\r\\t\\"\\\\"', b'"\\u001f\\b\\f\\n\\r\\t\\"\\\\"'),
        (b'"\\u007f\\u2028<>&"', '"\x7f\u2028<>&"'.encode()),  # no HTML / JS escaping
        (b'"\\ud83d\\ude00"', '"\U0001f600"'.encode()),
        (b"true", b"true"),
        (b"{}", b"{}"),
        (b"[ ]", b"[]"),
    ],
)
def test_canonical_form(document, canonical):
    assert canonical_json(document) == canonical
    assert canonical_json(canonical) == canonical


def test_keys_sort_by_utf16_code_units_not_code_points():
    # U+FFFF sorts after U+1F600 by code point but before it in UTF-16 (D83D < FFFF).
    document = '{"\uffff":1,"\U0001f600":2,"a":3,"B":4}'.encode()
    assert canonical_json(document) == '{"B":4,"a":3,"\U0001f600":2,"\uffff":1}'.encode()


def test_canonical_json_refuses_what_check_refuses():
    with pytest.raises(IJSONError, match="duplicate"):
        canonical_json(b'{"a":1,"a":1}')


# --- raw_object_members ------------------------------------------------------------------------


def test_raw_members_are_the_exact_bytes_between_colon_and_delimiter():
    members = raw_object_members(b'{ "a" : 1 , "b":{"x":[1, 2]},"c":"s\\u00e9"}')
    assert members == {"a": b" 1 ", "b": b'{"x":[1, 2]}', "c": b'"s\\u00e9"'}
    assert raw_object_members(b"{}") == {}
    assert raw_object_members(b'{"\\u0061":2}') == {"a": b"2"}


def test_raw_members_handle_deep_values():
    deep = nested(5000, core=b"1")
    assert raw_object_members(b'{"a":' + deep + b',"b":2}') == {"a": deep, "b": b"2"}


def test_raw_members_refuse_non_objects_and_invalid_json():
    with pytest.raises(IJSONError, match="must be a JSON object, not an array"):
        raw_object_members(b"[]")
    with pytest.raises(IJSONError, match="duplicate"):
        raw_object_members(b'{"a":1,"a":2}')


@pytest.mark.parametrize(
    "document",
    [b"1.5", b"[1.23, -0.5e-3, 2, 1E+400, 18446744073709551616]", b'{"a": [0.1, {"b": 1e2}]}'],
)
def test_plain_decimals_are_the_same_values_as_plain_types(document):
    """plain_decimals changes only the type (Decimal, not its subclass), never a value."""
    readable, plain = parse_ijson(document), parse_ijson(document, plain_decimals=True)
    assert plain == readable

    def decimals(value):
        if isinstance(value, list):
            return [d for item in value for d in decimals(item)]
        if isinstance(value, dict):
            return [d for item in value.values() for d in decimals(item)]
        return [value] if isinstance(value, Decimal) else []

    assert decimals(plain)
    assert all(type(d) is Decimal for d in decimals(plain))
    assert all(type(d) is JSONDecimal for d in decimals(readable))


def test_plain_decimals_refuse_what_check_ijson_refuses():
    for document in (b"[1.5,", b'{"a":1.5,"a":2.5}', b"[1.5, NaN]", b'"\\udc00"', b"1.5 2"):
        with pytest.raises(IJSONError) as checked:
            check_ijson(document)
        with pytest.raises(IJSONError) as parsed:
            parse_ijson(document, plain_decimals=True)
        assert str(parsed.value) == str(checked.value)


HUGE_EXPONENT = b"[1.5, 1e1000000000000000000]"
"""Valid I-JSON text whose second number no exact Decimal holds (exponent past 10**18 - 1)."""


def test_a_number_no_decimal_holds_is_valid_text_but_refused_as_a_value():
    check_ijson(HUGE_EXPONENT)  # the text is valid I-JSON, as in Go
    check_ijson(b"[1e1000000000000000000, 1" + b"0" * 5000 + b"]")  # also past int()'s digits
    assert raw_object_members(b'{"a": 1e1000000000000000000}') == {"a": b" 1e1000000000000000000"}
    for plain in (False, True):
        with pytest.raises(IJSONError, match="exponent is beyond"):
            parse_ijson(HUGE_EXPONENT, plain_decimals=plain)
    with pytest.raises(IJSONError, match="exponent is beyond"):
        parse_ijson(b"[1" + b"0" * 5000 + b", -2E+99999999999999999999]")
    assert parse_ijson(b"1e999999999999999999") == Decimal("1e999999999999999999")
