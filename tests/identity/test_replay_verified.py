"""A call with a principal and verified answers replays deterministically, with or without the
identity secret: validators do not run on replay, and signals never take tokens, so replay (a
restarted worker, a rotated secret) never depends on it.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from helpers.replay import assert_replays
from helpers.waiting import wait_for_phase, wait_until_async

from scope_tool import Principal, Request
from scope_tool.client import Phase, ToolCalls
from scope_tool.wire.identity import install_identity_secret, issue_token

from .conftest import SECRET


async def test_a_verified_call_replays_with_any_secret_or_none(
    calls: ToolCalls, worker: Any
) -> None:
    tag = f"replay-{uuid.uuid4()}"
    handle = await calls.start(
        Request(name="guarded_ask", arguments=json.dumps({"tag": tag})),
        call_id=tag,
        principal=Principal(user="ops", roles=("deployer",)),
        require_verified=True,
    )
    await wait_for_phase(handle, Phase.AWAITING_INPUT)
    forged = issue_token("ops", secret="not-the-workers-secret!", issuer="cli")
    await handle.signal_answer(False, identity_token=forged)  # refused, recorded in history

    async def refused() -> bool:
        return bool((await handle.status()).refused)

    await wait_until_async(refused)
    await handle.answer(True, identity_token=issue_token("ops", secret=SECRET, issuer="cli"))
    assert (await handle.result()).phase is Phase.COMPLETED

    await assert_replays(handle)
    install_identity_secret("a-rotated-secret-nobody-signed-with")
    await assert_replays(handle)
    install_identity_secret(None)
    await assert_replays(handle)
