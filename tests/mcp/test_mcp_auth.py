"""Many users, one ``scope-tool mcp --http``: credentials, Host/Origin, and call ownership.

A local OAuth issuer (an RSA key made here, its JWKS served on loopback) signs tokens for
alice, bob and carol (a reviewer). The official ``mcp`` client talks to a real server process
over HTTP with each identity: a call belongs to whoever started it; the same request from two
clients is two calls; one user cannot read, follow or answer another's (the refusal is the same
as for an id that does not exist); history records the answer by the principal's name.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2
import jwt
import mcp_types as types
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_harness import (
    Process,
    TasksExtension,
    free_port,
    get_task,
    http_server,
    update_task,
    wait_task,
)

from scope_tool import Principal
from scope_tool.client import ToolCalls
from scope_tool.mcp._tokens import JwtVerifier

ISSUER_KID = "test-key-1"


class Issuer:
    """A local authorization server: its keys, its JWKS on loopback, tokens on demand."""

    def __init__(self) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.other_key = ec.generate_private_key(ec.SECP256R1())  # never published
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        document = json.dumps({"keys": [{**jwk, "kid": ISSUER_KID, "use": "sig"}]}).encode()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200 if self.path == "/jwks.json" else 404)
                self.send_header("content-type", "application/json")
                self.end_headers()
                self.wfile.write(document if self.path == "/jwks.json" else b"{}")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def token(self, subject: str, *, audience: str, **overrides: Any) -> str:
        claims: dict[str, Any] = {
            "iss": self.url,
            "sub": subject,
            "aud": audience,
            "exp": int(time.time()) + 600,
            "iat": int(time.time()),
        }
        claims.update(overrides)
        claims = {key: value for key, value in claims.items() if value is not None}
        return jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": ISSUER_KID})

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def issuer() -> Iterator[Issuer]:
    made = Issuer()
    try:
        yield made
    finally:
        made.close()


class Served:
    def __init__(self, process: Process, port: int, issuer: Issuer | None) -> None:
        self.process = process
        self.port = port
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.issuer = issuer

    def token(self, subject: str, **overrides: Any) -> str:
        assert self.issuer is not None
        return self.issuer.token(subject, audience=self.url, **overrides)

    @contextlib.asynccontextmanager
    async def client(self, token: str | None, **options: Any) -> AsyncIterator[Client]:
        """The official client over HTTP, sending ``token`` as its bearer credential."""
        headers = {"authorization": f"Bearer {token}"} if token else {}
        async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
            transport = streamable_http_client(self.url, http_client=http)
            async with Client(transport, **options) as client:
                yield client


@pytest.fixture
async def oauth_server(
    temporal_address, task_queue, tmp_path: Path, worker_process, issuer: Issuer
) -> AsyncIterator[Served]:
    port = free_port()
    process = http_server(
        temporal_address,
        task_queue,
        tmp_path,
        port,
        "--oauth-issuer",
        issuer.url,
        "--oauth-jwks-url",
        f"{issuer.url}/jwks.json",
        "--reviewer-role",
        "reviewer",
    )
    await process.start().ready()
    try:
        yield Served(process, port, issuer)
    finally:
        process.stop()


def _post(url: str, token: str | None = None, **headers: str) -> httpx2.Response:
    if token:
        headers["authorization"] = f"Bearer {token}"
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    return httpx2.post(
        url,
        json=body,
        headers={"accept": "application/json, text/event-stream", **headers},
        timeout=30,
    )


def _let_in(response: httpx2.Response) -> bool:
    """Past the credential and Host/Origin checks (a bare POST may still be a bad MCP request)."""
    return response.status_code not in (401, 403, 421)


async def test_a_missing_or_bad_token_is_401_naming_the_resource_metadata(oauth_server):
    served = oauth_server
    metadata_url = f"http://127.0.0.1:{served.port}/.well-known/oauth-protected-resource/mcp"
    now = int(time.time())
    wrong_key = jwt.encode(
        {"iss": served.issuer.url, "sub": "mallory", "aud": served.url, "exp": now + 600},
        served.issuer.other_key,
        algorithm="ES256",
        headers={"kid": ISSUER_KID},
    )
    bad = {
        "none": None,
        "garbage": "not-a-jwt",
        "expired": served.token("alice", exp=now - 120),
        "wrong audience": served.token("alice", aud="http://127.0.0.1:1/mcp"),
        "wrong issuer": served.token("alice", iss="http://evil.example"),
        "no subject": served.token("alice", sub=None),
        "wrong key": wrong_key,
    }
    for what, token in bad.items():
        response = _post(served.url, token)
        assert response.status_code == 401, what
        challenge = response.headers["www-authenticate"]
        assert challenge.startswith("Bearer "), what
        assert f'resource_metadata="{metadata_url}"' in challenge, what
    assert _let_in(_post(served.url, served.token("alice")))
    for path in (
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ):
        document = httpx2.get(f"http://127.0.0.1:{served.port}{path}", timeout=30).json()
        assert document["resource"] == served.url
        assert document["authorization_servers"] == [served.issuer.url]


async def test_a_rebinding_request_is_refused_even_with_a_good_token(oauth_server):
    token = oauth_server.token("alice")
    assert _post(oauth_server.url, token, host="evil.example").status_code == 421
    assert _post(oauth_server.url, token, origin="http://evil.example").status_code == 403
    assert _let_in(_post(oauth_server.url, token, origin=f"http://127.0.0.1:{oauth_server.port}"))


async def test_two_users_same_request_are_two_calls_and_neither_sees_the_other(
    oauth_server, temporal_client, task_queue
):
    calls = ToolCalls(temporal_client, task_queue=task_queue)
    served = oauth_server
    waiting: dict[str, types.CallToolResult] = {}
    for user in ("alice", "bob"):
        async with served.client(served.token(user)) as client:
            waiting[user] = await client.call_tool("approve_write", {"key": "same"})
    alice_id = waiting["alice"].structured_content["call_id"]
    bob_id = waiting["bob"].structured_content["call_id"]
    assert alice_id != bob_id
    assert (await calls.get(alice_id).status()).principal == Principal(user="alice")
    assert (await calls.get(bob_id).status()).principal == Principal(user="bob")

    async with served.client(served.token("bob"), extensions=[TasksExtension()]) as bob:
        refusals = []
        for call_id in (alice_id, "mcp-approve_write-0123456789abcdef01234567"):
            with pytest.raises(MCPError) as status:
                await bob.call_tool("scope_tool_call_status", {"call_id": call_id})
            with pytest.raises(MCPError) as task:
                await get_task(bob.session, call_id)
            with pytest.raises(MCPError) as answer:
                await update_task(bob.session, call_id, {f"{call_id}/r1": {"action": "accept"}})
            refusals.append(
                [
                    (error.value.error.code, error.value.error.message.replace(call_id, "ID"))
                    for error in (status, task, answer)
                ]
            )
        # A foreign call is refused exactly as a call that does not exist.
        assert refusals[0] == refusals[1]
        assert all("no call with id" in message for _, message in refusals[0])
    assert (await calls.get(alice_id).status()).answers == ()

    async with served.client(served.token("alice")) as alice:
        again = await alice.call_tool("scope_tool_call_status", {"call_id": alice_id})
        assert again.structured_content["call_id"] == alice_id


async def test_answers_through_mcp_are_recorded_as_the_principal_and_reviewers_may_answer(
    oauth_server, temporal_client, task_queue, ledger
):
    calls = ToolCalls(temporal_client, task_queue=task_queue)
    served = oauth_server

    async def never(ctx, params):
        raise AssertionError("task questions are answered with tasks/update")

    tasks = {"extensions": [TasksExtension()], "elicitation_callback": never}
    async with served.client(served.token("alice"), **tasks) as alice:
        created = await alice.session.call_tool("approve_write", {"key": "a1"}, allow_claimed=True)
        snapshot = await wait_task(alice.session, created.task_id, until={"input_required"})
    async with served.client(served.token("carol", roles=["reviewer"]), **tasks) as carol:
        seen = await get_task(carol.session, created.task_id)
        assert seen.status == "input_required"
        (key,) = snapshot.input_requests
        await update_task(
            carol.session,
            created.task_id,
            {key: {"action": "accept", "content": {"approve": True}}},
        )
        await wait_task(carol.session, created.task_id, until={"completed"})
    status = await calls.get(created.task_id).status()
    assert [answer.answered_by for answer in status.answers] == ["carol"]
    assert ledger.read_text() == "a1\n"


async def test_a_client_key_is_scoped_by_principal(oauth_server):
    served = oauth_server
    meta = {"scope-tool/call-id": "job-7"}
    ids = {}
    for user in ("alice", "bob"):
        async with served.client(served.token(user)) as client:
            result = await client.call_tool("approve_write", {"key": "k"}, meta=meta)
            ids[user] = result.structured_content["call_id"]
    assert ids["alice"] != ids["bob"]
    assert ids["alice"].startswith("mcp-approve_write-job-7@")


async def test_request_state_is_bound_to_its_user_and_refused_after_use(oauth_server):
    served = oauth_server

    async def never(ctx, params):
        raise AssertionError("the test drives inputResponses itself")

    async with served.client(served.token("alice"), elicitation_callback=never) as alice:
        asked = await alice.session.call_tool(
            "approve_write", {"key": "rs"}, allow_input_required=True
        )
        assert isinstance(asked, types.InputRequiredResult)
        (key,) = asked.input_requests
        reply = {key: types.ElicitResult(action="accept", content={"approve": True})}
        async with served.client(served.token("bob"), elicitation_callback=never) as bob:
            with pytest.raises(MCPError) as stolen:
                await bob.session.call_tool(
                    "approve_write",
                    {"key": "rs"},
                    input_responses=reply,
                    request_state=asked.request_state,
                    allow_input_required=True,
                )
            assert stolen.value.error.code == types.INVALID_PARAMS
        done = await alice.session.call_tool(
            "approve_write",
            {"key": "rs"},
            input_responses=reply,
            request_state=asked.request_state,
            allow_input_required=True,
        )
        assert isinstance(done, types.CallToolResult)
        assert not done.is_error
        with pytest.raises(MCPError) as replayed:
            await alice.session.call_tool(
                "approve_write",
                {"key": "rs"},
                input_responses=reply,
                request_state=asked.request_state,
                allow_input_required=True,
            )
        assert replayed.value.error.data["reason"] == "request_state_used"


async def test_static_tokens_name_the_principal(
    temporal_address, task_queue, tmp_path, worker_process, temporal_client
):
    alice_token = "a" * 32
    port = free_port()
    process = http_server(
        temporal_address,
        task_queue,
        tmp_path,
        port,
        name="static",
        env={"SCOPE_TOOL_MCP_TOKENS": f"alice {alice_token}; bob {'b' * 32} reviewer"},
    )
    await process.start().ready()
    served = Served(process, port, None)
    try:
        response = _post(served.url, "c" * 32)
        assert response.status_code == 401
        assert response.headers["www-authenticate"].startswith("Bearer ")
        assert _post(served.url, None).status_code == 401
        async with served.client(alice_token) as alice:
            waiting = await alice.call_tool("approve_write", {"key": "st"})
        call_id = waiting.structured_content["call_id"]
        status = await ToolCalls(temporal_client, task_queue=task_queue).get(call_id).status()
        assert status.principal == Principal(user="alice")
    finally:
        process.stop()


async def test_a_rebinding_request_to_a_non_literal_loopback_host_is_refused(
    temporal_address, task_queue, tmp_path, worker_process
):
    """The SDK checks Host only for 127.0.0.1 / localhost / ::1; 127.0.0.2 was open."""
    port = free_port()
    process = http_server(temporal_address, task_queue, tmp_path, port, host="127.0.0.2")
    await process.start().ready()
    url = f"http://127.0.0.2:{port}/mcp"
    try:
        assert _post(url, host="evil.example").status_code == 421
        assert _post(url, origin="http://evil.example").status_code == 403
        assert _let_in(_post(url))
    finally:
        process.stop()


async def test_two_fresh_clients_sending_the_same_call_get_two_calls(
    temporal_address, task_queue, tmp_path, worker_process
):
    """Stateless requests all start at JSON-RPC id 1: the server's nonce keeps them apart."""
    port = free_port()
    process = http_server(temporal_address, task_queue, tmp_path, port, name="anonymous")
    await process.start().ready()
    served = Served(process, port, None)
    try:
        ids = []
        for _ in range(2):
            async with served.client(None) as client:
                result = await client.call_tool("approve_write", {"key": "twice"})
                ids.append(result.structured_content["call_id"])
    finally:
        process.stop()
    assert ids[0] != ids[1]


async def test_an_empty_subject_never_falls_back_to_the_client_id(issuer):
    """Red-team pass of #25: ``sub: ""`` with ``client_id: alice`` was principal ``alice``.

    The principal is the token's ``sub`` (docs/mcp.md); a token without a usable one is refused,
    never read as another claim that may name a user.
    """
    audience = "http://127.0.0.1:1/mcp"
    verifier = JwtVerifier(issuer=issuer.url, audience=audience, jwks_url=f"{issuer.url}/jwks.json")
    assert await verifier.verify_token(issuer.token("alice", audience=audience)) is not None
    for claims in ({"client_id": "alice"}, {"azp": "alice"}):
        forged = issuer.token("", audience=audience, **claims)
        assert await verifier.verify_token(forged) is None, claims
