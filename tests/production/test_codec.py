"""The encryption codec on its own: parsing the setting, sealing, rotation, refusals, chaining."""

from __future__ import annotations

import base64

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.converter import PayloadCodec

from production.keys import new_key_entry
from scope_tool.config.codec import (
    ENCRYPTED_ENCODING,
    KEY_ID_METADATA,
    CodecChain,
    EncryptionCodec,
    compose_codecs,
    contains_encryption,
    encryption_codec_from_environment,
    parse_encryption_keys,
)
from scope_tool.wire.errors import EncryptionConfigError, PayloadDecryptionError

SECRET = b'"the launch code is 0000"'


def _payload(data: bytes = SECRET) -> Payload:
    return Payload(metadata={"encoding": b"json/plain"}, data=data)


def _codec(setting: str) -> EncryptionCodec:
    return EncryptionCodec(parse_encryption_keys(setting))


async def test_seals_with_the_newest_key_and_round_trips() -> None:
    codec = _codec(f"{new_key_entry('k2')},{new_key_entry('k1')}")
    [sealed] = await codec.encode([_payload()])
    assert sealed.metadata["encoding"] == ENCRYPTED_ENCODING
    assert sealed.metadata[KEY_ID_METADATA] == b"k2"
    assert SECRET not in sealed.data
    [opened] = await codec.decode([sealed])
    assert opened == _payload()


async def test_rotation_opens_payloads_sealed_with_an_older_key() -> None:
    old, new = new_key_entry("old"), new_key_entry("new")
    [sealed_before] = await _codec(old).encode([_payload()])
    rotated = _codec(f"{new},{old}")
    assert (await rotated.decode([sealed_before])) == [_payload()]
    [sealed_after] = await rotated.encode([_payload()])
    assert sealed_after.metadata[KEY_ID_METADATA] == b"new"


async def test_plain_payloads_pass_through_decode() -> None:
    codec = _codec(new_key_entry("k"))
    assert (await codec.decode([_payload()])) == [_payload()]


async def test_unknown_key_id_is_a_clear_error_naming_it() -> None:
    [sealed] = await _codec(new_key_entry("gone")).encode([_payload()])
    with pytest.raises(PayloadDecryptionError, match=r"key 'gone'.*not among.*\(k\)") as caught:
        await _codec(new_key_entry("k")).decode([sealed])
    assert caught.value.key_id == "gone"


async def test_a_different_key_under_the_same_id_fails_authentication() -> None:
    [sealed] = await _codec(new_key_entry("k")).encode([_payload()])
    with pytest.raises(PayloadDecryptionError, match="does not decrypt"):
        await _codec(new_key_entry("k")).decode([sealed])


async def test_tampered_ciphertext_is_refused() -> None:
    codec = _codec(new_key_entry("k"))
    [sealed] = await codec.encode([_payload()])
    tampered = Payload(metadata=dict(sealed.metadata), data=sealed.data[:-1] + b"\x00")
    with pytest.raises(PayloadDecryptionError, match="altered"):
        await codec.decode([tampered])


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("k1", "entry 1 is not key_id:base64-key"),
        ("k1:", "entry 1 is not key_id:base64-key"),
        ("k1:not base64!", "'k1' .* not valid base64"),
        (f"k1:{base64.b64encode(b'short').decode()}", "'k1' is 5 bytes"),
        (f"bad id:{base64.b64encode(bytes(32)).decode()}", "key id 'bad id'"),
        (",, ,", "lists no keys"),
    ],
)
def test_malformed_settings_say_what_is_wrong(setting: str, message: str) -> None:
    with pytest.raises(EncryptionConfigError, match=message):
        parse_encryption_keys(setting)


def test_duplicate_key_ids_are_refused() -> None:
    with pytest.raises(EncryptionConfigError, match="'k' is listed twice"):
        _codec(f"{new_key_entry('k')},{new_key_entry('k')}")


def test_error_messages_never_contain_key_material() -> None:
    key = base64.b64encode(b"0123456789abcdef0123456789abcde").decode()  # 31 bytes
    with pytest.raises(EncryptionConfigError) as caught:
        parse_encryption_keys(f"k:{key}")
    assert key not in str(caught.value)


def test_environment_setting_and_file(tmp_path) -> None:
    assert encryption_codec_from_environment({}) is None
    entry = new_key_entry("from-env")
    codec = encryption_codec_from_environment({"SCOPE_TOOL_ENCRYPTION_KEYS": entry})
    assert codec is not None
    assert codec.key_ids == ("from-env",)
    key_file = tmp_path / "keys"
    key_file.write_text(f"# rotated 2026-12-01\n{new_key_entry('b')}\n{new_key_entry('a')}\n")
    codec = encryption_codec_from_environment({"SCOPE_TOOL_ENCRYPTION_KEYS_FILE": str(key_file)})
    assert codec is not None
    assert codec.key_ids == ("b", "a")
    with pytest.raises(EncryptionConfigError, match="not both"):
        encryption_codec_from_environment(
            {"SCOPE_TOOL_ENCRYPTION_KEYS": entry, "SCOPE_TOOL_ENCRYPTION_KEYS_FILE": str(key_file)}
        )
    with pytest.raises(EncryptionConfigError, match="cannot read"):
        encryption_codec_from_environment(
            {"SCOPE_TOOL_ENCRYPTION_KEYS_FILE": str(tmp_path / "missing")}
        )


class _Tagging(PayloadCodec):
    """A user's codec: marks payloads so the order of the chain is visible."""

    def __init__(self) -> None:
        self.seen: list[bytes] = []

    async def encode(self, payloads):
        self.seen += [each.metadata.get("encoding", b"") for each in payloads]
        return [
            Payload(metadata={"encoding": b"user/tagged"}, data=each.SerializeToString())
            for each in payloads
        ]

    async def decode(self, payloads):
        self.seen += [each.metadata.get("encoding", b"") for each in payloads]
        opened = []
        for each in payloads:
            inner = Payload()
            inner.ParseFromString(each.data)
            opened.append(inner)
        return opened


async def test_a_users_codec_runs_first_on_encode_and_last_on_decode() -> None:
    user = _Tagging()
    encryption = _codec(new_key_entry("k"))
    chain = compose_codecs(user, encryption)
    assert isinstance(chain, CodecChain)
    assert contains_encryption(chain)
    [sealed] = await chain.encode([_payload()])
    assert sealed.metadata["encoding"] == ENCRYPTED_ENCODING  # encryption is outermost
    assert user.seen == [b"json/plain"]  # the user's codec saw the plain payload
    [opened] = await chain.decode([sealed])
    assert user.seen[-1] == b"user/tagged"  # ... and undid its own tag after decryption
    assert opened == _payload()
    assert compose_codecs(None, encryption) is encryption
    assert compose_codecs(user, None) is user
    assert not contains_encryption(user)


async def test_a_ciphertext_shorter_than_a_nonce_is_a_decryption_error() -> None:
    codec = _codec(new_key_entry("k"))
    for data in (b"", b"abc", b"x" * 27):
        short = Payload(
            metadata={"encoding": b"binary/encrypted", "encryption-key-id": b"k"}, data=data
        )
        with pytest.raises(PayloadDecryptionError, match=f"{len(data)} bytes"):
            await codec.decode([short])


async def test_a_ciphertext_of_something_else_is_a_decryption_error() -> None:
    codec = _codec(new_key_entry("k"))
    not_a_payload = _seal_bytes(codec, b"\xff\xff\xff")
    with pytest.raises(PayloadDecryptionError, match="not a Temporal payload"):
        await codec.decode([not_a_payload])


def _seal_bytes(codec: EncryptionCodec, plain: bytes) -> Payload:
    """A payload sealed like ``seal`` does, around bytes that are not a serialised payload."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    key = codec._keys[0]  # the test builds what only a forger would
    nonce = b"n" * 12
    sealed = AESGCM(key.key).encrypt(nonce, plain, b"scope-tool/v1:" + key.key_id.encode())
    return Payload(
        metadata={"encoding": b"binary/encrypted", "encryption-key-id": key.key_id.encode()},
        data=nonce + sealed,
    )
