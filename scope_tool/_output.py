"""What a tool produces for the model: :class:`Output` and its content blocks."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from scope_tool._ijson import (
    IJSONError,
    check_ijson,
    parse_ijson,
)
from scope_tool._json_form import closed_object_model, known_members
from scope_tool._text import checked_text
from scope_tool.errors import InvalidOutputError

__all__ = ["Block", "MediaBlock", "Output", "TextBlock"]


def _require_text(value: object, what: str) -> str:
    return checked_text(value, what, error=InvalidOutputError)


@dataclass(frozen=True, slots=True)
class TextBlock:
    """A piece of model-visible text. Validated at construction: the text is not empty.

    Attributes:
        text: Non-empty text (the zero output, not an empty block, means "nothing").
    """

    text: str

    def __post_init__(self) -> None:
        _require_text(self.text, "text block: text")


@dataclass(frozen=True, slots=True)
class MediaBlock:
    """A piece of model-visible media, inline (``data``) or by reference (``uri``).

    Validated at construction: the MIME type is not empty and exactly one of ``data``
    and ``uri`` is set (and not empty).

    Attributes:
        mime_type: For example ``image/png``.
        data: The raw media bytes (base64 in JSON), or None.
        uri: Where the media lives, or None.
    """

    mime_type: str
    data: bytes | None = None
    uri: str | None = None

    def __post_init__(self) -> None:
        _require_text(self.mime_type, "media block: mime type")
        if (self.data is None) == (self.uri is None):
            raise InvalidOutputError("media block: exactly one of data and uri must be set")
        data: object = self.data
        if data is not None:
            if isinstance(data, bytearray | memoryview):
                object.__setattr__(self, "data", bytes(data))
            elif not isinstance(data, bytes):
                raise InvalidOutputError(
                    f"media block: data must be bytes, not {type(data).__name__}"
                )
            if not data:
                raise InvalidOutputError("media block: data must not be empty")
        else:
            _require_text(self.uri, "media block: uri")


Block = TextBlock | MediaBlock
"""One model-visible content item."""


@dataclass(frozen=True, slots=True, init=False)
class Output:
    """The provider-neutral value a tool produces; validated and immutable at construction.

    ``content`` is the ordered, model-visible text/media. ``details`` is optional raw JSON for
    structured consumers, kept byte-exact; providers show it to the model only when
    ``content`` is empty. ``Output()`` (the zero output) completes with nothing.

    Attributes:
        content: A tuple of :class:`TextBlock` / :class:`MediaBlock`.
        details: One I-JSON document as bytes, or None (empty bytes also mean None).
    """

    content: tuple[Block, ...]
    details: bytes | None

    def __init__(self, content: Iterable[Block] = (), details: bytes | str | None = None) -> None:
        if isinstance(content, str | bytes | Mapping):
            raise InvalidOutputError(
                f"content must be a sequence of blocks, not {type(content).__name__}"
            )
        blocks = tuple(content)
        for index, block in enumerate(blocks):
            if not isinstance(block, TextBlock | MediaBlock):
                raise InvalidOutputError(
                    f"content[{index}] must be a TextBlock or MediaBlock, "
                    f"not {type(block).__name__}"
                )
        raw: bytes | None
        if details is None:
            raw = None
        elif isinstance(details, str):
            raw = details.encode("utf-8", "surrogatepass") or None
        elif isinstance(details, bytes | bytearray | memoryview):
            raw = bytes(details) or None
        else:
            raise InvalidOutputError(
                f"details must be JSON bytes or None, not {type(details).__name__}"
            )
        if raw is not None:
            try:
                check_ijson(raw)
            except IJSONError as exc:
                raise InvalidOutputError(
                    f"details is not one valid RFC 7493 JSON document: {exc}"
                ) from exc
        object.__setattr__(self, "content", blocks)
        object.__setattr__(self, "details", raw)

    @classmethod
    def text_output(cls, text: str) -> Output:
        """One text block; empty text gives the zero output (not an invalid empty block)."""
        if not isinstance(text, str):
            raise InvalidOutputError(f"text must be a str, not {type(text).__name__}")
        return cls() if not text else cls(content=(TextBlock(text),))

    @classmethod
    def json_output(cls, raw: bytes | str) -> Output:
        """Structured details whose exact JSON bytes are preserved.

        Raises:
            InvalidOutputError: ``raw`` is not one complete I-JSON document.
        """
        data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
        if not data:
            raise InvalidOutputError("details is not one valid RFC 7493 JSON document: empty")
        return cls(details=data)

    def text(self) -> str | None:
        """The lossless text projection for providers that accept only strings.

        None when any block is media (so adapters cannot silently drop it); the details'
        JSON text when there is no content; otherwise the text blocks concatenated. The zero
        output gives ``""``.
        """
        if not self.content:
            return "" if self.details is None else self.details.decode("utf-8")
        texts: list[str] = []
        for block in self.content:
            if isinstance(block, MediaBlock):
                return None
            texts.append(block.text)
        return "".join(texts)

    def to_json(self) -> bytes:
        """``{"content":[…],"details":…}``, empty members omitted; details spliced exactly."""
        parts: list[bytes] = [b"{"]
        if self.content:
            parts.append(b'"content":[')
            parts.append(b",".join(_block_json(block) for block in self.content))
            parts.append(b"]")
        if self.details is not None:
            parts.append(b',"details":' if self.content else b'"details":')
            parts.append(self.details)
        parts.append(b"}")
        return b"".join(parts)

    @classmethod
    def from_json(cls, data: bytes | str) -> Output:
        """Decode strictly and atomically (inverse of :meth:`to_json`, byte-exact).

        Raises:
            InvalidOutputError: not one I-JSON object, unknown members, wrong types,
                malformed blocks or non-canonical base64.
        """
        members = known_members(
            data, allowed=("content", "details"), what="output JSON", error=InvalidOutputError
        )
        blocks: tuple[Block, ...] = ()
        if "content" in members:
            content = parse_ijson(members["content"])
            if not isinstance(content, list):
                raise InvalidOutputError('output JSON: "content" must be an array')
            blocks = tuple(_block_from(item, index) for index, item in enumerate(content))
        return cls(content=blocks, details=members.get("details"))

    @classmethod
    def json_schema_model(cls) -> dict[str, Any]:
        """The JSON Schema (2020-12) of an output's JSON form, as a fresh dict."""
        text_block = {
            "type": "object",
            "properties": {"type": {"const": "text"}, "text": {"type": "string", "minLength": 1}},
            "required": ["type", "text"],
            "additionalProperties": False,
        }
        media_block = {
            "type": "object",
            "properties": {
                "type": {"const": "media"},
                "mime_type": {"type": "string", "minLength": 1},
                "data": {"type": "string", "contentEncoding": "base64", "minLength": 1},
                "uri": {"type": "string", "minLength": 1},
            },
            "required": ["type", "mime_type"],
            "oneOf": [{"required": ["data"]}, {"required": ["uri"]}],
            "additionalProperties": False,
        }
        return closed_object_model(
            "Output",
            {
                "content": {"type": "array", "items": {"oneOf": [text_block, media_block]}},
                "details": {},
            },
        )


_TEXT_MEMBERS: Final = frozenset({"type", "text"})
_MEDIA_MEMBERS: Final = frozenset({"type", "mime_type", "data", "uri"})


def _json_string(text: str) -> bytes:
    return json.dumps(text, ensure_ascii=False).encode("utf-8")


def _block_json(block: Block) -> bytes:
    if isinstance(block, TextBlock):
        return b'{"type":"text","text":' + _json_string(block.text) + b"}"
    head = b'{"type":"media","mime_type":' + _json_string(block.mime_type)
    if block.data is not None:
        return head + b',"data":"' + base64.b64encode(block.data) + b'"}'
    assert block.uri is not None
    return head + b',"uri":' + _json_string(block.uri) + b"}"


def _block_from(item: Any, index: int) -> Block:
    where = f"output JSON: content[{index}]"
    if not isinstance(item, dict):
        raise InvalidOutputError(f"{where} must be an object")
    kind = item.get("type")
    allowed = _TEXT_MEMBERS if kind == "text" else _MEDIA_MEMBERS if kind == "media" else None
    if allowed is None:
        raise InvalidOutputError(f'{where}: "type" must be "text" or "media"')
    unknown = sorted(set(item) - allowed)
    if unknown:
        raise InvalidOutputError(f"{where}: unknown member {json.dumps(unknown[0])}")
    for key, value in item.items():
        if not isinstance(value, str):
            raise InvalidOutputError(f"{where}: member {json.dumps(key)} must be a string")
    try:
        if kind == "text":
            return TextBlock(item.get("text", ""))
        data = item.get("data")
        return MediaBlock(
            item.get("mime_type", ""),
            data=None if data is None else _strict_base64(data, where),
            uri=item.get("uri"),
        )
    except InvalidOutputError as exc:
        raise InvalidOutputError(f"{where}: {exc.detail}") from exc


def _strict_base64(text: str, where: str) -> bytes:
    try:
        decoded = base64.b64decode(text.encode("ascii"), validate=True)
    except (UnicodeEncodeError, binascii.Error):
        raise InvalidOutputError(f'{where}: "data" is not valid base64') from None
    if base64.b64encode(decoded).decode("ascii") != text:
        raise InvalidOutputError(f'{where}: "data" is not canonical base64')
    return decoded
