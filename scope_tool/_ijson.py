"""Strict RFC 7493 (I-JSON) handling: the one gate every untrusted JSON text passes.

The rules are those of Go's ``jsontext.Value.IsValid`` (see go-reference-behaviour §2.4):
exactly one JSON value with optional JSON whitespace around it, strict UTF-8 without a byte
order mark, no duplicate object member names at any depth, no lone surrogates from ``\\uD800``
style escapes, standard grammar only (no NaN/Infinity, comments or trailing commas), and
nesting at most 10 000 deep. Numbers are deliberately *not* range checked: ``1e999`` and
``18446744073709551616`` are valid I-JSON text; only typed decoding may refuse them.

Speed matters because :func:`check_ijson` runs on every ``Contract.prepare``. Small documents
go through CPython's C scanner with a duplicate-rejecting ``object_pairs_hook``; the surrogate
walk only runs when the raw bytes contain a ``\\uD8xx``..``\\uDFxx`` escape. Deeply nested
documents (where the recursive C scanner would hit Python's recursion limit) are parsed by a
small iterative parser with the same rules, so 100 000 levels give :class:`IJSONError`, never
``RecursionError``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from decimal import Decimal, DecimalException
from json import decoder as _json_decoder
from json.encoder import encode_basestring
from typing import Any, Final

from pydantic_core import from_json as _from_json

from scope_tool.errors import ToolError

__all__ = [
    "MAX_DEPTH",
    "MAX_INPUT_BYTES",
    "IJSONError",
    "JSONDecimal",
    "canonical_json",
    "check_ijson",
    "is_blank",
    "nested_deeper_than",
    "parse_ijson",
    "raw_object_members",
    "small_object",
]

MAX_INPUT_BYTES = 1 << 20
"""Largest argument / prompt / state / response document the protocol admits (1 MiB)."""

MAX_DEPTH: Final = 10_000
"""Deepest nesting Go's jsontext accepts by default; deeper documents are refused."""

# Documents nested at most this deep are handed to the recursive C scanner; deeper ones go to
# the iterative parser. Well under the default recursion limit of 1000, leaving room for the
# caller's own stack (pytest, asyncio, Temporal workers).
_FAST_DEPTH: Final = 200


class IJSONError(ToolError, ValueError):
    """The text is not one valid I-JSON document; the message says why."""


class JSONDecimal(Decimal):
    """A non-integer JSON number, exact; its repr is its JSON text (for readable messages)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return str(self)


class _Lexeme(str):
    """A JSON number kept as its exact source text (for canonicalisation)."""

    __slots__ = ()


# --- the fast path: CPython's C scanner with strict hooks -----------------------------------


def _refuse_constant(name: str) -> Any:
    raise IJSONError(f"{name} is not a JSON value (non-finite numbers are not allowed)")


def _exact_int(lexeme: str) -> int | Decimal:
    # int() refuses more than sys.get_int_max_str_digits() digits; that is a range check Go
    # does not make, so very long integers are kept exactly as Decimal instead.
    try:
        return int(lexeme)
    except ValueError:
        return JSONDecimal(lexeme)


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise IJSONError(f"duplicate object key {json.dumps(key)}")
            seen.add(key)
    return obj


def _make_decoder(number: Any, integer: Any) -> json.JSONDecoder:
    return json.JSONDecoder(
        object_pairs_hook=_unique_object,
        parse_float=number,
        parse_int=integer,
        parse_constant=_refuse_constant,
        strict=True,
    )


# int is C-fast but refuses more than sys.get_int_max_str_digits() digits: the exact decoders
# take over then (see parse_ijson).
_VALUE_DECODER: Final = _make_decoder(JSONDecimal, None)
# A plain Decimal is built in half the time of a subclass instance (C fast path); for callers
# that never show a number's repr (the fast schema engine prints numbers with str()).
_PLAIN_VALUE_DECODER: Final = _make_decoder(Decimal, None)
_EXACT_VALUE_DECODER: Final = _make_decoder(JSONDecimal, _exact_int)
# check_ijson discards the numbers, so each becomes the length of its lexeme: len is a C call
# that never refuses (no range, no digit limit), twice as fast as float() on 1 MiB of decimals.
_CHECK_DECODER: Final = _make_decoder(len, len)
_OUT_OF_RANGE: Final = (
    "a number's exponent is beyond +-999999999999999999: it has no exact decimal value"
)
_LEXEME_DECODER: Final = _make_decoder(_Lexeme, _Lexeme)

_JSON_WS: Final = re.compile(r"[ \t\n\r]*")
_SURROGATE_ESCAPE: Final = re.compile(rb"\\u[dD][89abcdefABCDEF]")
_SURROGATE_CHAR: Final = re.compile("[\ud800-\udfff]")
_STRING_BYTES: Final = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKET: Final = bytes(b for b in range(256) if b not in b"[]{}")
_SQUARE: Final = bytes.maketrans(b"{}", b"[]")


def _byte_offset(text: str, index: int) -> int:
    return len(text[:index].encode("utf-8", "surrogatepass"))


def nested_deeper_than(data: bytes, limit: int) -> bool:
    """Whether ``data`` nests more than ``limit`` levels (exact for valid JSON)."""
    if data.count(b"[") + data.count(b"{") <= limit:
        return False
    if b'"' in data:
        data = _STRING_BYTES.sub(b"", data)
    brackets = data.translate(_SQUARE, _NOT_BRACKET)
    # Each round removes every innermost pair, so the number of rounds is the depth.
    for _ in range(limit):
        shorter = brackets.replace(b"[]", b"")
        if len(shorter) == len(brackets):
            return False
        brackets = shorter
    return b"[]" in brackets


def _decode_text(data: bytes) -> tuple[bytes, str]:
    if type(data) is not bytes:
        if not isinstance(data, bytes | bytearray | memoryview):
            raise TypeError(f"JSON text must be bytes, not {type(data).__name__}")
        data = bytes(data)
    try:
        return data, data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise IJSONError(f"invalid UTF-8 at byte {exc.start}") from None


def _parse(data: bytes, decoder: json.JSONDecoder) -> Any:
    # The common case (a small object or array, no surrounding whitespace) runs a handful of
    # C calls; every rarer case takes the longer road below it.
    if type(data) is bytes:
        raw = data
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise IJSONError(f"invalid UTF-8 at byte {exc.start}") from None
    else:
        raw, text = _decode_text(data)
    size = len(text)
    start = 0 if size and text[0] not in _WS_CHARS else _skip_ws(text, 0)
    if start == size:
        raise IJSONError("document is empty" if not size else "document holds only whitespace")
    if size < 2 * _FAST_DEPTH or not nested_deeper_than(raw, _FAST_DEPTH):
        try:
            value, end = decoder.scan_once(text, start)  # type: ignore[attr-defined]
        except StopIteration as stop:
            raise _syntax_error(text, stop.value, "Expecting value") from None
        except json.JSONDecodeError as exc:
            raise _syntax_error(text, exc.pos, exc.msg) from None
        except RecursionError:
            value, end = _parse_iteratively(text, start, decoder)
    else:
        value, end = _parse_iteratively(text, start, decoder)
    if end != size:
        end = _skip_ws(text, end)
        if end != size:
            raise IJSONError(f"trailing data after the document at byte {_byte_offset(text, end)}")
    if b"\\u" in raw and _SURROGATE_ESCAPE.search(raw) is not None:
        _refuse_lone_surrogates(value)
    return value


_WS_CHARS: Final = frozenset(" \t\n\r")


def _syntax_error(text: str, position: int, reason: str) -> IJSONError:
    if position == 0 and text.startswith("\ufeff"):
        return IJSONError("byte order mark at byte 0 is not allowed")
    return IJSONError(f"invalid JSON at byte {_byte_offset(text, position)}: {reason}")


def _refuse_lone_surrogates(value: Any) -> None:
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            found = _SURROGATE_CHAR.search(item)
            if found is not None:
                raise IJSONError(f"lone surrogate U+{ord(found.group()):04X} in a string")
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)


# --- the hot path: a small flat object, proved I-JSON without the duplicate-key hook ---------

SMALL_OBJECT_BYTES: Final = 128
"""Largest text :func:`small_object` decides (it cannot nest deeper than 64)."""

# Every digit becomes "0" and every ".", "e", "E" becomes ".": "0." in the result is a number
# with a fraction or an exponent (or such text inside a string). Two C calls.
_NUMBER_SHAPES: Final = bytes(
    0x30 if 0x30 <= byte <= 0x39 else 0x2E if byte in b".eE" else 0x20 for byte in range(256)
)


def small_object(data: bytes) -> dict[str, Any] | None:
    """The object ``data`` holds, when it is provably one I-JSON object of the easy kind.

    Easy means: at most :data:`SMALL_OBJECT_BYTES`, exactly one ``{``, and no number with a
    fraction or an exponent (so every number is an ``int``, which the Rust schema engine
    compares exactly; a digit followed by ``.``, ``e`` or ``E`` anywhere, even in a string,
    is enough to decline). The text is parsed by pydantic-core's ``from_json`` (jiter, the
    parser pydantic's own ``validate_json`` uses), which refuses what Go's jsontext refuses
    here: invalid UTF-8, lone surrogates (raw or escaped), a byte order mark, control
    characters in strings, NaN and Infinity, leading zeros, trailing commas or data
    (``tests/protocol/test_schema_differential.py`` checks it against :func:`parse_ijson`).
    It keeps the last of duplicate keys, so duplicates are proved absent instead: every member
    has a ``:`` and a colon inside a string only makes the count larger, so the one object
    with as many members as the text has ``:`` bytes had no duplicate.

    ``None`` decides nothing: the caller must use :func:`parse_ijson`, which gives the same
    value or the reason the text is refused. This is ``Contract.prepare``'s hot path.
    """
    if (
        type(data) is not bytes
        or len(data) > SMALL_OBJECT_BYTES
        or data.count(b"{") != 1
        or data.translate(_NUMBER_SHAPES).find(b"0.") != -1
    ):
        return None
    try:
        value = _from_json(data, allow_inf_nan=False)
    except ValueError:
        return None
    if type(value) is not dict or len(value) != data.count(b":"):
        return None
    return value


# --- the deep path: an iterative parser with the same rules ---------------------------------

_TOKEN: Final = re.compile(
    r"[ \t\n\r]*(?:"
    r"([\[\]{},:])"  # 1: punctuation
    r'|("(?:[^"\\\x00-\x1f]|\\.)*")'  # 2: string (escapes checked by scanstring)
    r"|(-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?)"  # 3: number, 4: fraction, 5: exponent
    r"|(true|false|null)"  # 6: literal
    r")",
    re.DOTALL,
)
# The C string scanner json itself uses: strict escapes, no raw control characters.
_scanstring: Final[Callable[[str, int, bool], tuple[str, int]]] = _json_decoder.scanstring  # type: ignore[attr-defined]
_LITERALS: Final[dict[str, Any]] = {"true": True, "false": False, "null": None}


def _parse_iteratively(text: str, start: int, decoder: json.JSONDecoder) -> tuple[Any, int]:
    """Parse one value from ``text[start:]`` without recursion; return it and its end index."""
    number = decoder.parse_float
    integer = decoder.parse_int
    # Each frame: [container, pairs (objects only), pending key]. Expectation codes:
    # "value" a value, "key" a key or "}", "first" a value or "]", "colon", "next" "," or close.
    stack: list[list[Any]] = []
    expect = "value"
    pos = start
    while True:
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            where = _JSON_WS.match(text, pos).end()  # type: ignore[union-attr]
            for constant in ("NaN", "Infinity", "-Infinity"):
                if text.startswith(constant, where):
                    _refuse_constant(constant)
            what = "end of input" if where >= len(text) else f"character {text[where]!r}"
            raise IJSONError(f"invalid JSON at byte {_byte_offset(text, where)}: unexpected {what}")
        token_at = match.start(match.lastindex or 0)
        pos = match.end()
        punct, string, num, literal = match.group(1), match.group(2), match.group(3), match.group(6)

        def unexpected(token: str, at: int = token_at) -> IJSONError:
            return IJSONError(
                f"invalid JSON at byte {_byte_offset(text, at)}: unexpected {token!r}"
            )

        value: Any
        complete = False
        if expect == "colon":
            if punct != ":":
                raise unexpected(match.group().strip())
            expect = "value"
            continue
        if expect == "next":
            frame = stack[-1]
            is_object = frame[1] is not None
            if punct == ",":
                expect = "key" if is_object else "value"
                if is_object:
                    frame[2] = None
                continue
            if punct == ("}" if is_object else "]"):
                stack.pop()
                value = _unique_object(frame[1]) if is_object else frame[0]
                complete = True
            else:
                raise unexpected(match.group().strip())
        elif expect == "key" or (expect == "keyfirst"):
            if string is not None:
                stack[-1][2] = _scan_string(text, token_at)
                expect = "colon"
                continue
            if punct == "}" and expect == "keyfirst":
                frame = stack.pop()
                value = _unique_object(frame[1])
                complete = True
            else:
                raise unexpected(match.group().strip())
        else:  # "value" or "first"
            if punct == "]" and expect == "first":
                value = stack.pop()[0]
                complete = True
            elif punct == "[" or punct == "{":
                if len(stack) >= MAX_DEPTH:
                    raise IJSONError(f"nesting deeper than {MAX_DEPTH}")
                if punct == "[":
                    stack.append([[], None, None])
                    expect = "first"
                else:
                    stack.append([None, [], None])
                    expect = "keyfirst"
                continue
            elif string is not None:
                value = _scan_string(text, token_at)
            elif num is not None:
                fractional = match.group(4) is not None or match.group(5) is not None
                value = number(num) if fractional else integer(num)
            elif literal is not None:
                value = _LITERALS[literal]
            else:
                raise unexpected(match.group().strip())
            complete = True
        if complete:
            if not stack:
                return value, pos
            frame = stack[-1]
            if frame[1] is None:
                frame[0].append(value)
            else:
                frame[1].append((frame[2], value))
            expect = "next"


def _scan_string(text: str, quote_at: int) -> str:
    try:
        value, _ = _scanstring(text, quote_at + 1, True)
    except json.JSONDecodeError as exc:
        raise IJSONError(f"invalid JSON at byte {_byte_offset(text, exc.pos)}: {exc.msg}") from None
    return value


# --- public API ------------------------------------------------------------------------------


def check_ijson(data: bytes) -> None:
    """Raise IJSONError unless ``data`` is exactly one I-JSON document.

    Args:
        data: the untrusted JSON text, as bytes (it must be UTF-8).

    Raises:
        IJSONError: the text is empty, not UTF-8, not JSON, has duplicate keys, a lone
            surrogate, trailing data, or nests deeper than :data:`MAX_DEPTH`.
        TypeError: ``data`` is not bytes.
    """
    _checked(data)


def _checked(data: bytes) -> Any:
    """``_parse`` keeping the structure only: every number is its lexeme's length."""
    return _parse(data, _CHECK_DECODER)


def parse_ijson(data: bytes, *, plain_decimals: bool = False) -> Any:
    """check_ijson, then return the value with numbers kept exact (int / Decimal).

    Objects become ``dict``, arrays ``list``; integers become ``int`` (or
    :class:`JSONDecimal` beyond Python's integer-string limit), other numbers
    :class:`JSONDecimal` (a ``Decimal``), never ``float``, so schema validation compares
    numbers exactly as Go does. One parse does both: a caller that needs the value never
    has to call :func:`check_ijson` first (it raises the same errors).

    Raises:
        IJSONError: whatever :func:`check_ijson` refuses, and a number whose exponent is
            beyond +-999999999999999999, which no exact ``Decimal`` holds (``1e1000000000000000000``).

    Args:
        data: the untrusted JSON text, as bytes.
        plain_decimals: give non-integers as plain ``Decimal`` (same value, ``repr``
            ``Decimal('1.5')``), about twice as fast to build: for callers that never show a
            number's ``repr`` (1 MiB of decimals parses in ~0.1 s instead of ~0.25 s).
    """
    try:
        try:
            return _parse(data, _PLAIN_VALUE_DECODER if plain_decimals else _VALUE_DECODER)
        except IJSONError:
            raise
        except ValueError:
            # int() refused more digits than Python's limit; only the exact decoder keeps them.
            return _parse(data, _EXACT_VALUE_DECODER)
    except DecimalException:
        # Valid I-JSON text (check_ijson takes it), but no exact Decimal holds it: refused
        # here with a reason rather than raised as an arithmetic error from deep in a check.
        raise IJSONError(_OUT_OF_RANGE) from None


def raw_object_members(data: bytes) -> dict[str, bytes]:
    """Split one I-JSON object into its members' exact raw bytes.

    Each value is the exact text between the member's ``:`` and the following ``,`` or
    ``}`` (JSON whitespace included), so a value serialised by splicing raw bytes after
    ``"name":`` comes back byte-for-byte. This is how the values' ``from_json`` keep raw
    JSON (details, prompts, states) exact.

    Raises:
        IJSONError: ``data`` is not one I-JSON document, or not an object.
    """
    value = _checked(data)
    if not isinstance(value, dict):
        raise IJSONError(f"document must be a JSON object, not {_kind_of(value)}")
    text = bytes(data).decode("utf-8")
    members: dict[str, bytes] = {}
    pos = text.index("{") + 1
    while True:
        pos = _skip_ws(text, pos)
        if text[pos] == "}":
            return members
        key, pos = _scanstring(text, pos + 1, True)
        colon = _skip_ws(text, pos)  # text[colon] == ":"
        start = _skip_ws(text, colon + 1)
        end = _value_end(text, start)
        delimiter = _skip_ws(text, end)  # "," or "}"
        members[key] = text[colon + 1 : delimiter].encode("utf-8", "surrogatepass")
        pos = delimiter + 1 if text[delimiter] == "," else delimiter


def _kind_of(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return "a number"


def _skip_ws(text: str, pos: int) -> int:
    return _JSON_WS.match(text, pos).end()  # type: ignore[union-attr]


def _value_end(text: str, start: int) -> int:
    """End index of the (already validated) JSON value starting at ``start``."""
    try:
        return _CHECK_DECODER.raw_decode(text, start)[1]
    except (RecursionError, ValueError):
        # Too deep for the C scanner (or an over-long integer): count brackets instead.
        depth = 0
        pos = start
        while True:
            match = _TOKEN.match(text, pos)
            assert match is not None  # the document was validated
            pos = match.end()
            punct = match.group(1)
            if punct in ("[", "{"):
                depth += 1
            elif punct in ("]", "}"):
                depth -= 1
            if depth == 0 and punct not in (",", ":"):
                return pos


# U+001C..U+001F are whitespace to str.isspace() and str.strip() but not to Go.
_GO_SPACE: Final = frozenset(
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000"
)
_GO_SPACE_TEXT: Final = "".join(sorted(_GO_SPACE))


def is_blank(data: bytes | str) -> bool:
    """True when ``data`` holds only Go's unicode.IsSpace characters (or nothing).

    This is Go's ``bytes.TrimSpace(data) == ""``, which decides when ``Contract.prepare``
    replaces arguments with ``{}``. Bytes that are not UTF-8 are never blank.
    """
    if isinstance(data, bytes | bytearray | memoryview):
        try:
            data = bytes(data).decode("utf-8")
        except UnicodeDecodeError:
            return False
    return not data.strip(_GO_SPACE_TEXT)


def canonical_json(data: bytes) -> bytes:
    """Minified JSON, object keys sorted by UTF-16 code units, number lexemes kept.

    This is Go's ``jsontext.Value.Format(ReorderRawObjects(true))``: whitespace removed,
    strings in their shortest escaping, members sorted recursively by RFC 8785 order. It is
    idempotent, and it refuses (IJSONError) anything :func:`check_ijson` refuses.
    """
    value = _parse(data, _LEXEME_DECODER)
    out: list[str] = []
    # An explicit work stack keeps deep documents off Python's call stack.
    pending: list[Any] = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, _Token):
            out.append(item.text)
        elif isinstance(item, _Lexeme):
            out.append(str.__str__(item))
        elif isinstance(item, str):
            out.append(encode_basestring(item))
        elif item is True:
            out.append("true")
        elif item is False:
            out.append("false")
        elif item is None:
            out.append("null")
        elif isinstance(item, list):
            pending.append(_CLOSE_ARRAY)
            for index in range(len(item) - 1, -1, -1):
                pending.append(item[index])
                if index:
                    pending.append(_COMMA)
            out.append("[")
        else:
            keys = sorted(item, key=_utf16_key, reverse=True)
            pending.append(_CLOSE_OBJECT)
            for index, key in enumerate(keys):
                pending.append(item[key])
                pending.append(_Token(encode_basestring(key) + ":"))
                if index != len(keys) - 1:
                    pending.append(_COMMA)
            out.append("{")
    return "".join(out).encode("utf-8", "surrogatepass")


class _Token:
    """Literal output text queued on the canonicaliser's work stack."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


_COMMA: Final = _Token(",")
_CLOSE_ARRAY: Final = _Token("]")
_CLOSE_OBJECT: Final = _Token("}")


def _utf16_key(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")
