"""Payload encryption at rest: an AES-GCM ``PayloadCodec`` keyed by ``SCOPE_TOOL_ENCRYPTION_KEYS``.

Every argument, prompt, checkpoint state and answer crosses Temporal as a payload, and Temporal
stores payloads as they arrive (history, visibility, the Web UI). With keys configured, every
payload a client or worker sends is sealed here first, so the server only ever holds ciphertext.

Wire format of a sealed payload (stable; other languages can decode it):

* ``metadata["encoding"] = b"binary/encrypted"``,
  ``metadata["encryption-key-id"] = <key id, UTF-8>``;
* ``data = nonce (12 random bytes) || AES-GCM(key, nonce, Payload.SerializeToString(),
  associated data = b"scope-tool/v1:" + key id)``.

Keys rotate without downtime: the setting lists ``key_id:base64-key`` entries newest first;
the newest seals, any listed key opens. Payloads that are not sealed (written before encryption
was switched on) pass through ``decode`` unchanged, so switching it on never strands a call.

Composition: :func:`compose_codecs` chains a user's own codec with this one. On the way out the
user's codec runs first and encryption last, so compression (say) still sees plain bytes and
what the server stores is always ciphertext; on the way in the order is reversed.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from google.protobuf.message import DecodeError
from temporalio.api.common.v1 import Payload
from temporalio.converter import EncodingPayloadConverter, PayloadCodec

from scope_tool.wire.errors import EncryptionConfigError, PayloadDecryptionError

__all__ = [
    "ENCRYPTED_ENCODING",
    "KEYS_FILE_VARIABLE",
    "KEYS_VARIABLE",
    "KEY_ID_METADATA",
    "UNDECRYPTABLE_ENCODING",
    "CodecChain",
    "EncryptedPayloadGuard",
    "EncryptionCodec",
    "EncryptionKey",
    "MarkUndecryptable",
    "UndecryptablePayloadGuard",
    "compose_codecs",
    "contains_encryption",
    "encryption_codec_from_environment",
    "marking_undecryptable",
    "parse_encryption_keys",
]

KEYS_VARIABLE: Final = "SCOPE_TOOL_ENCRYPTION_KEYS"
KEYS_FILE_VARIABLE: Final = "SCOPE_TOOL_ENCRYPTION_KEYS_FILE"
ENCRYPTED_ENCODING: Final = b"binary/encrypted"
KEY_ID_METADATA: Final = "encryption-key-id"
UNDECRYPTABLE_ENCODING: Final = b"binary/undecryptable"
"""The encoding a workflow worker gives a sealed payload it cannot open (see
:class:`MarkUndecryptable`); it never leaves the worker process."""
_DECRYPTION_ERROR_METADATA = "decryption-error"

_NONCE_BYTES = 12
_TAG_BYTES = 16
_KEY_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
_AAD_PREFIX = b"scope-tool/v1:"


@dataclass(frozen=True, slots=True, kw_only=True)
class EncryptionKey:
    """One AES key (16, 24 or 32 bytes) and the id payloads sealed with it carry."""

    key_id: str
    key: bytes = field(repr=False)

    def __post_init__(self) -> None:
        if not _KEY_ID.match(self.key_id):
            raise EncryptionConfigError(
                f"encryption key id {self.key_id[:80]!r} must be 1-64 characters of"
                " A-Z a-z 0-9 . _ -"
            )
        if len(self.key) not in (16, 24, 32):
            raise EncryptionConfigError(
                f"encryption key {self.key_id!r} is {len(self.key)} bytes; AES-GCM needs"
                " 16, 24 or 32 (generate one with: openssl rand -base64 32)"
            )


class EncryptionCodec(PayloadCodec):
    """Seals payloads with the newest key; opens payloads sealed with any of ``keys``.

    Args:
        keys: newest first; at least one; key ids unique.
    """

    def __init__(self, keys: Sequence[EncryptionKey]) -> None:
        keys = tuple(keys)
        if not keys:
            raise EncryptionConfigError("encryption needs at least one key")
        seen: set[str] = set()
        for each in keys:
            if each.key_id in seen:
                raise EncryptionConfigError(f"encryption key id {each.key_id!r} is listed twice")
            seen.add(each.key_id)
        self._keys = keys
        self._ciphers = {each.key_id: AESGCM(each.key) for each in keys}

    @property
    def key_ids(self) -> tuple[str, ...]:
        """The configured key ids, newest (the one that seals) first."""
        return tuple(each.key_id for each in self._keys)

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        """Seal each payload with the newest key."""
        return [self.seal(each) for each in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        """Open sealed payloads; pass through those never sealed (written before encryption)."""
        return [self.open(each) for each in payloads]

    def seal(self, payload: Payload) -> Payload:
        """The sealed form of one payload (see the module docstring)."""
        key_id = self._keys[0].key_id
        nonce = os.urandom(_NONCE_BYTES)
        sealed = self._ciphers[key_id].encrypt(
            nonce, payload.SerializeToString(), _AAD_PREFIX + key_id.encode("utf-8")
        )
        return Payload(
            metadata={"encoding": ENCRYPTED_ENCODING, KEY_ID_METADATA: key_id.encode("utf-8")},
            data=nonce + sealed,
        )

    def open(self, payload: Payload) -> Payload:
        """The original of one sealed payload, or ``payload`` itself if it is not sealed.

        Raises:
            PayloadDecryptionError: the key id is not configured here, or the ciphertext fails
                authentication (a wrong key under a reused id, or tampering).
        """
        if payload.metadata.get("encoding") != ENCRYPTED_ENCODING:
            return payload
        key_id = _key_id_of(payload)
        cipher = self._ciphers.get(key_id)
        if cipher is None:
            raise PayloadDecryptionError(
                f"a payload is encrypted with key {key_id!r}, which is not among this process's"
                f" keys ({', '.join(self.key_ids)}); add it to {KEYS_VARIABLE}"
                " (newest first; keep old keys until no call needs them)",
                key_id=key_id,
            )
        data = payload.data
        if len(data) < _NONCE_BYTES + _TAG_BYTES:
            # AESGCM itself would raise ValueError on a short nonce: say what is wrong instead.
            raise PayloadDecryptionError(
                f"a payload claims encryption with key {key_id!r} but is {len(data)} bytes,"
                f" shorter than a nonce and tag ({_NONCE_BYTES + _TAG_BYTES}): it does not"
                " decrypt, it was altered or never sealed",
                key_id=key_id,
            )
        try:
            plain = cipher.decrypt(
                data[:_NONCE_BYTES], data[_NONCE_BYTES:], _AAD_PREFIX + key_id.encode("utf-8")
            )
        except InvalidTag:
            raise PayloadDecryptionError(
                f"a payload encrypted with key {key_id!r} does not decrypt with this process's"
                f" key {key_id!r}: the key differs from the one that sealed it, or the payload"
                " was altered",
                key_id=key_id,
            ) from None
        opened = Payload()
        try:
            opened.ParseFromString(plain)
        except DecodeError:
            raise PayloadDecryptionError(
                f"a payload sealed with key {key_id!r} decrypts to something that is not a"
                " Temporal payload",
                key_id=key_id,
            ) from None
        return opened


class MarkUndecryptable(PayloadCodec):
    """An :class:`EncryptionCodec` for a workflow worker: what it cannot open, it marks.

    A workflow worker decodes every payload of a workflow task at once, so one payload that
    does not open (a signal sent by any Temporal client holding other keys, or none) would
    fail the whole task, and every later one, for good: the call could no longer be queried,
    answered or cancelled. Marked instead (encoding :data:`UNDECRYPTABLE_ENCODING`, the error
    kept in its metadata), it fails only where it is converted: a signal is dropped and the
    workflow records why, while workflow input or an activity result still fails its task
    (retried until a worker with the key comes, as key rotation needs).
    """

    def __init__(self, codec: EncryptionCodec) -> None:
        self._codec = codec

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        """Seal as the wrapped codec does."""
        return await self._codec.encode(payloads)

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        """Open what opens; mark the rest."""
        return [self._open_or_mark(each) for each in payloads]

    def _open_or_mark(self, payload: Payload) -> Payload:
        try:
            return self._codec.open(payload)
        except PayloadDecryptionError as error:
            return Payload(
                metadata={
                    "encoding": UNDECRYPTABLE_ENCODING,
                    KEY_ID_METADATA: error.key_id.encode("utf-8"),
                    _DECRYPTION_ERROR_METADATA: str(error).encode("utf-8"),
                }
            )


def marking_undecryptable(codec: PayloadCodec | None) -> PayloadCodec | None:
    """``codec`` with each :class:`EncryptionCodec` in it wrapped in :class:`MarkUndecryptable`."""
    if isinstance(codec, EncryptionCodec):
        return MarkUndecryptable(codec)
    if isinstance(codec, CodecChain):
        return CodecChain([marking_undecryptable(each) or each for each in codec.codecs])
    return codec


class CodecChain(PayloadCodec):
    """Several codecs as one: encode runs them in order, decode in reverse."""

    def __init__(self, codecs: Sequence[PayloadCodec]) -> None:
        self._codecs = tuple(codecs)

    @property
    def codecs(self) -> tuple[PayloadCodec, ...]:
        """The chained codecs in encode order."""
        return self._codecs

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        """Apply each codec's encode in order."""
        current = list(payloads)
        for codec in self._codecs:
            current = await codec.encode(current)
        return current

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        """Apply each codec's decode in reverse order."""
        current = list(payloads)
        for codec in reversed(self._codecs):
            current = await codec.decode(current)
        return current


def compose_codecs(
    user: PayloadCodec | None, encryption: PayloadCodec | None
) -> PayloadCodec | None:
    """``user`` then ``encryption`` on encode (reverse on decode); either may be None."""
    if user is None:
        return encryption
    if encryption is None:
        return user
    return CodecChain((user, encryption))


def contains_encryption(codec: PayloadCodec | None) -> bool:
    """Whether ``codec`` is, or chains, an :class:`EncryptionCodec` (so none is added twice)."""
    if isinstance(codec, EncryptionCodec):
        return True
    if isinstance(codec, CodecChain):
        return any(contains_encryption(each) for each in codec.codecs)
    return False


class EncryptedPayloadGuard(EncodingPayloadConverter):
    """The payload converter's answer to a sealed payload reaching a process without keys.

    It never encodes anything (``to_payload`` returns None, so it costs nothing on the way
    out); decoding a sealed payload raises a :class:`PayloadDecryptionError` that says which
    setting is missing, instead of Temporal's "unknown payload encoding".
    """

    @property
    def encoding(self) -> str:
        """The encoding of sealed payloads."""
        return ENCRYPTED_ENCODING.decode("ascii")

    def to_payload(self, value: Any) -> Payload | None:
        """Never encodes: sealing is the codec's work."""
        return None

    def from_payload(self, payload: Payload, type_hint: type | None = None) -> Any:
        """Always raises: a sealed payload got here because no codec opened it."""
        key_id = _key_id_of(payload)
        raise PayloadDecryptionError(
            f"a payload is encrypted (key {key_id!r}) and this process has no encryption keys;"
            f" set {KEYS_VARIABLE} or {KEYS_FILE_VARIABLE} to the keys the workers use",
            key_id=key_id,
        )


class UndecryptablePayloadGuard(EncodingPayloadConverter):
    """The payload converter's answer to a payload :class:`MarkUndecryptable` marked."""

    @property
    def encoding(self) -> str:
        """The encoding of marked payloads."""
        return UNDECRYPTABLE_ENCODING.decode("ascii")

    def to_payload(self, value: Any) -> Payload | None:
        """Never encodes."""
        return None

    def from_payload(self, payload: Payload, type_hint: type | None = None) -> Any:
        """Always raises the decryption error the codec recorded."""
        raise PayloadDecryptionError(
            payload.metadata.get(_DECRYPTION_ERROR_METADATA, b"").decode("utf-8", "replace")
            or "a payload does not decrypt here",
            key_id=_key_id_of(payload),
        )


def parse_encryption_keys(text: str, *, source: str = KEYS_VARIABLE) -> tuple[EncryptionKey, ...]:
    """Parse ``key_id:base64-key`` entries separated by commas or newlines, newest first.

    Blank entries and lines starting with ``#`` are ignored (for key files).

    Raises:
        EncryptionConfigError: an entry is malformed; the message names ``source`` and the
            entry's position and key id, never the key material.
    """
    entries = [
        entry.strip()
        for line in text.splitlines()
        if not line.strip().startswith("#")
        for entry in line.split(",")
    ]
    keys: list[EncryptionKey] = []
    for position, entry in enumerate((each for each in entries if each), start=1):
        key_id, separator, encoded = entry.partition(":")
        key_id, encoded = key_id.strip(), encoded.strip()
        if not separator or not key_id or not encoded:
            raise EncryptionConfigError(
                f"{source}: entry {position} is not key_id:base64-key"
                f" (it has {'no' if not separator else 'an empty'} {'colon' if not separator else 'part'})"
            )
        try:
            key = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise EncryptionConfigError(
                f"{source}: the key of {key_id!r} (entry {position}) is not valid base64"
            ) from None
        try:
            keys.append(EncryptionKey(key_id=key_id, key=key))
        except EncryptionConfigError as error:
            raise EncryptionConfigError(f"{source}: {error}") from None
    if not keys:
        raise EncryptionConfigError(f"{source} is set but lists no keys")
    return tuple(keys)


def encryption_codec_from_environment(
    environ: Mapping[str, str] | None = None,
) -> EncryptionCodec | None:
    """The codec configured by ``SCOPE_TOOL_ENCRYPTION_KEYS`` or its ``_FILE`` variant, or None.

    Raises:
        EncryptionConfigError: both are set, the file cannot be read, or an entry is malformed.
    """
    environ = os.environ if environ is None else environ
    inline = environ.get(KEYS_VARIABLE, "")
    file_name = environ.get(KEYS_FILE_VARIABLE, "")
    if inline and file_name:
        raise EncryptionConfigError(
            f"set {KEYS_VARIABLE} or {KEYS_FILE_VARIABLE}, not both (they could disagree)"
        )
    if file_name:
        try:
            text = Path(file_name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise EncryptionConfigError(
                f"cannot read {KEYS_FILE_VARIABLE} file {file_name!r}: {error}"
            ) from None
        return EncryptionCodec(parse_encryption_keys(text, source=f"{KEYS_FILE_VARIABLE} file"))
    if inline:
        return EncryptionCodec(parse_encryption_keys(inline))
    return None


def _key_id_of(payload: Payload) -> str:
    return payload.metadata.get(KEY_ID_METADATA, b"").decode("utf-8", "replace")
