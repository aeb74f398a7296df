"""Key material for the production tests: fresh random AES keys, never reused across runs."""

from __future__ import annotations

import base64
import dataclasses
import os
from typing import Any

from temporalio.client import Client

from scope_tool.client import DATA_CONVERTER
from scope_tool.config.codec import EncryptionCodec, parse_encryption_keys


def new_key_entry(key_id: str) -> str:
    """One ``key_id:base64`` entry with a fresh 256-bit key."""
    return f"{key_id}:{base64.b64encode(os.urandom(32)).decode('ascii')}"


def client_with_keys(client: Client, setting: str | None) -> Client:
    """A copy of ``client`` that seals and opens with ``setting`` (None: no keys at all)."""
    codec = EncryptionCodec(parse_encryption_keys(setting)) if setting else None
    config: dict[str, Any] = dict(client.config())
    config["data_converter"] = dataclasses.replace(DATA_CONVERTER, payload_codec=codec)
    return Client(**config)
