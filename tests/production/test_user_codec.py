"""A user's own payload codec is kept and chained with encryption, never silently dropped."""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Sequence
from typing import Any

import pytest
from helpers.waiting import wait_for_phase
from temporalio.api.common.v1 import Payload
from temporalio.client import Client
from temporalio.converter import DataConverter, PayloadCodec

from production.keys import new_key_entry
from production.tools import REGISTRY
from scope_tool import Request
from scope_tool.client import Phase, ToolCalls
from scope_tool.config.codec import CodecChain, EncryptionCodec
from scope_tool.workers import build_worker


class CountingCodec(PayloadCodec):
    """Wraps each payload in a ``user/wrapped`` envelope and counts both directions."""

    def __init__(self) -> None:
        self.encoded = 0
        self.decoded = 0

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        self.encoded += len(payloads)
        return [
            Payload(metadata={"encoding": b"user/wrapped"}, data=each.SerializeToString())
            for each in payloads
        ]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        opened = []
        for each in payloads:
            assert each.metadata["encoding"] == b"user/wrapped", "decoded out of order"
            self.decoded += 1
            inner = Payload()
            inner.ParseFromString(each.data)
            opened.append(inner)
        return opened


def _with_codec(client: Client, codec: PayloadCodec) -> Client:
    config: dict[str, Any] = dict(client.config())
    config["data_converter"] = dataclasses.replace(DataConverter.default, payload_codec=codec)
    return Client(**config)


async def test_without_keys_the_users_codec_is_kept(
    temporal_client: Any, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SCOPE_TOOL_ENCRYPTION_KEYS", raising=False)
    user = CountingCodec()
    calls = ToolCalls(_with_codec(temporal_client, user), task_queue=task_queue)
    assert calls.client.data_converter.payload_codec is user


async def test_with_keys_the_users_codec_runs_inside_encryption_on_a_real_call(
    temporal_client: Any, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCOPE_TOOL_ENCRYPTION_KEYS", new_key_entry("k1"))
    user = CountingCodec()
    calls = ToolCalls(_with_codec(temporal_client, user), task_queue=task_queue)
    chain = calls.client.data_converter.payload_codec
    assert isinstance(chain, CodecChain)
    assert chain.codecs[0] is user
    assert isinstance(chain.codecs[1], EncryptionCodec)
    assert ToolCalls(calls.client, task_queue=task_queue).client is calls.client  # not twice

    async with build_worker(calls.client, REGISTRY, task_queue=task_queue):
        handle = await calls.start(
            Request(name="secret_note", arguments=json.dumps({"note": "n"})),
            call_id=f"note-{uuid.uuid4()}",
        )
        await wait_for_phase(handle, Phase.AWAITING_INPUT)
        await handle.answer({"approve": True, "comment": "c"})
        outcome = await handle.result()
    assert outcome.output.text() == "filed n: c"
    assert user.encoded > 0
    assert user.decoded > 0
    history = await handle.workflow_handle.fetch_history()
    started = history.events[0].workflow_execution_started_event_attributes
    assert started.input.payloads[0].metadata["encoding"] == b"binary/encrypted"
