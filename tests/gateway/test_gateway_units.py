"""The gateway's own decisions, without Temporal: config, policy, keys, start-up refusals."""

from __future__ import annotations

import json
import subprocess
import sys

import mcp_types as types
import pytest
from gateway_harness import REPOSITORY
from helpers.imports import without_packages

from scope_tool.errors import ToolError
from scope_tool.gateway import (
    Gateway,
    GatewayConfig,
    GatewayConfigError,
    Policy,
    UpstreamError,
    idempotency_key,
)
from scope_tool.gateway._upstream import Hub, Upstream


def _config(**server: object) -> dict[str, object]:
    return {"mcpServers": {"git": server}}


@pytest.mark.parametrize(
    ("document", "named"),
    [
        ({}, '"mcpServers"'),
        ({"mcpServers": {}, "extra": 1}, '"extra"'),
        (_config(command="x", url="http://h/mcp"), "exactly one of"),
        (_config(), "exactly one of"),
        (_config(command="x", headers={"a": "b"}), '"headers"'),
        (_config(url="ftp://h/mcp"), "mcpServers.git.url"),
        (_config(command="x", args="not a list"), "mcpServers.git.args"),
        (_config(command="x", policy={"default": "maybe"}), "mcpServers.git.policy.default"),
        (_config(command="x", policy={"approve": "git_commit"}), "policy.approve"),
        (_config(command="x", colour="red"), '"colour"'),
        (
            _config(url="https://h/mcp", headers={"Authorization": "Bearer ${NO_SUCH_VAR}"}),
            "NO_SUCH_VAR",
        ),
        ({"mcpServers": {"a b": {"command": "x"}}}, "mcpServers.a b"),
        (
            {
                "mcpServers": {
                    "a": {"command": "x", "prefix": "p_"},
                    "b": {"command": "y", "prefix": "p_"},
                }
            },
            "clash",
        ),
    ],
)
def test_a_malformed_config_names_what_is_wrong(document, named: str):
    with pytest.raises(GatewayConfigError) as raised:
        GatewayConfig.from_dict(document, source="gw.json", environ={})
    assert named in str(raised.value)
    assert "gw.json" in str(raised.value)
    assert isinstance(raised.value, ToolError)


def test_credentials_come_from_the_environment_and_never_show_in_repr():
    config = GatewayConfig.from_dict(
        _config(url="https://${HOST}/mcp", headers={"Authorization": "Bearer ${TOKEN}"}),
        environ={"HOST": "mcp.example.com", "TOKEN": "s3cret"},
    )
    (server,) = config.servers
    assert server.url == "https://mcp.example.com/mcp"
    assert server.headers == {"Authorization": "Bearer s3cret"}
    assert "s3cret" not in repr(config)
    assert "example.com" not in repr(config)


def test_policy_names_then_globs_then_read_only_hint_then_default():
    (server,) = GatewayConfig.from_dict(
        _config(
            command="x",
            policy={"run": ["git_*"], "approve": ["git_commit"], "hide": ["git_reset*"]},
        )
    ).servers
    decide = server.policy.decide
    assert decide("git_reset_hard", read_only_hint=False) is Policy.HIDE
    assert decide("git_commit", read_only_hint=False) is Policy.APPROVE
    assert decide("git_status", read_only_hint=False) is Policy.RUN
    assert decide("push", read_only_hint=True) is Policy.RUN  # readOnly: run by default
    assert decide("push", read_only_hint=False) is Policy.APPROVE  # unknown: a person decides


def test_the_idempotency_key_is_stable_and_an_edit_changes_it():
    key = idempotency_key("call-1", "git", "git_commit", b'{"message":"a"}')
    assert key == idempotency_key("call-1", "git", "git_commit", b'{"message":"a"}')
    assert key != idempotency_key("call-1", "git", "git_commit", b'{"message":"b"}')
    assert key != idempotency_key("call-2", "git", "git_commit", b'{"message":"a"}')
    assert key != idempotency_key("call-1", "git2", "git_commit", b'{"message":"a"}')


def test_uncompilable_upstream_tools_are_named_at_start_up():
    config = GatewayConfig.from_dict(_config(command="x", policy={"default": "run"}))
    hub = Hub()
    upstream = Upstream(config.servers[0], hub)
    object_schema = {"type": "object", "properties": {"x": {"type": "string"}}}
    upstream.tools = {
        "fine": types.Tool(name="fine", input_schema=object_schema),
        "bad_ref": types.Tool(
            name="bad_ref",
            input_schema={"type": "object", "properties": {"x": {"$ref": "#/$defs/missing"}}},
        ),
        "bad_output": types.Tool(
            name="bad_output", input_schema=object_schema, output_schema={"type": 12}
        ),
    }
    with pytest.raises(UpstreamError) as raised:
        Gateway(config, hub, {"git": upstream})
    message = str(raised.value)
    assert "2 upstream tool(s) cannot be served" in message
    assert "'bad_ref' of upstream server 'git'" in message
    assert "'bad_output' of upstream server 'git'" in message
    assert "'fine'" not in message


def test_clashing_served_names_are_refused_at_start_up():
    config = GatewayConfig.from_dict(_config(command="x", policy={"default": "run"}))
    hub = Hub()
    upstream = Upstream(config.servers[0], hub)
    schema = {"type": "object"}
    upstream.tools = {
        "a.b": types.Tool(name="a.b", input_schema=schema),
        "a/b": types.Tool(name="a/b", input_schema=schema),
    }
    with pytest.raises(UpstreamError, match="both served as 'git_a_b'"):
        Gateway(config, hub, {"git": upstream})


def test_a_worker_without_the_mcp_extra_imports_and_names_the_extra_for_gateway(tmp_path):
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps(_config(command="x")))
    code = without_packages("mcp", "mcp_types") + (
        "import scope_tool, scope_tool.workers\n"
        "import runpy\n"
        f"sys.argv = ['scope_tool.workers', '--gateway', {str(config)!r}]\n"
        "runpy.run_module('scope_tool.workers', run_name='__main__')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=REPOSITORY,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert "pip install 'scope-tool[mcp]'" in done.stderr


@pytest.mark.parametrize("command", ["worker", "mcp"])
def test_a_malformed_config_stops_the_command_with_one_line(tmp_path, command: str):
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps(_config(command="x", policy={"default": "sometimes"})))
    done = subprocess.run(
        [sys.executable, "-m", "scope_tool.cli", command, "--gateway", str(config)],
        capture_output=True,
        text=True,
        cwd=REPOSITORY,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("scope-tool: error: ")
    assert "mcpServers.git.policy.default" in line
    assert "'sometimes'" in line


_PROBE = '''
import json

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("probe")


@server.tool()
async def record(note: str, ctx: Context) -> str:
    """Echo the request's _meta, as the upstream saw it."""
    meta = ctx.request_context.meta
    return json.dumps(dict(meta) if meta else {})


server.run()
'''


async def test_the_key_reaches_the_upstream_in_meta_after_the_round_reported_it(tmp_path):
    """A probe server (the SDK's own MCPServer) echoes the ``_meta`` it received."""
    from scope_tool import Request
    from scope_tool._round import RoundContext, in_round
    from scope_tool.gateway import IDEMPOTENCY_META_KEY

    probe = tmp_path / "probe.py"
    probe.write_text(_PROBE)
    config = GatewayConfig.from_dict(
        {
            "mcpServers": {
                "probe": {
                    "command": sys.executable,
                    "args": [str(probe)],
                    "policy": {"default": "run"},
                }
            }
        }
    )
    reports = []
    arguments = b'{"note": "hi"}'
    with Gateway.start(config) as gateway:
        binding = gateway.registry.resolve("probe_record")
        with in_round(RoundContext(call_id="call-7", round=1, report=reports.append)):
            result = await binding.call(
                binding.contract.prepare(Request(name="probe_record", arguments=arguments))
            )
    key = idempotency_key("call-7", "probe", "record", arguments)
    assert json.loads(result.output.text())[IDEMPOTENCY_META_KEY] == key
    assert reports[0].idempotency_key == key  # reported before the request went out


_ERRORING = '''
from mcp.server.mcpserver import MCPServer

server = MCPServer("probe")


@server.tool()
async def fail(note: str) -> str:
    """Always fails."""
    raise ValueError(f"cannot record {note}")


server.run()
'''


async def test_an_upstream_error_result_is_a_failed_outcome_with_its_text(tmp_path):
    from scope_tool import Failure, FailureKind, Request

    probe = tmp_path / "erroring.py"
    probe.write_text(_ERRORING)
    config = GatewayConfig.from_dict(
        {
            "mcpServers": {
                "probe": {
                    "command": sys.executable,
                    "args": [str(probe)],
                    "policy": {"default": "run"},
                }
            }
        }
    )
    with Gateway.start(config) as gateway:
        binding = gateway.registry.resolve("probe_fail")
        with pytest.raises(Failure) as raised:
            await binding.call(
                binding.contract.prepare(Request(name="probe_fail", arguments=b'{"note": "x"}'))
            )
    assert raised.value.kind is FailureKind.FAILED
    assert (raised.value.output.text() or "") == "Error executing tool fail"  # the upstream's text


_CHANGING = '''
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("probe")


@server.tool()
async def victim(note: str) -> str:
    """A tool the server withdraws."""
    return f"ran {note}"


@server.tool()
async def withdraw(ctx: Context) -> str:
    """Withdraw victim and say so on subscriptions/listen (no session notification)."""
    server.remove_tool("victim")
    await ctx.notify_tools_changed()
    return "withdrawn"


server.run()
'''


async def test_a_2026_server_announcing_a_change_on_its_listen_stream_is_followed(tmp_path):
    """A 2026-07-28 server says its tools changed only on ``subscriptions/listen``: the gateway
    listens, lists again, and a withdrawn tool is refused before anything is sent."""
    import asyncio

    from scope_tool import Request
    from scope_tool.gateway.errors import UpstreamError

    probe = tmp_path / "changing.py"
    probe.write_text(_CHANGING)
    config = GatewayConfig.from_dict(
        {
            "mcpServers": {
                "probe": {
                    "command": sys.executable,
                    "args": [str(probe)],
                    "policy": {"default": "run"},
                }
            }
        }
    )
    with Gateway.start(config) as gateway:
        victim = gateway.registry.resolve("probe_victim")
        ran = await victim.call(
            victim.contract.prepare(Request(name="probe_victim", arguments=b'{"note": "a"}'))
        )
        assert ran.output.text() == "ran a"
        withdraw = gateway.registry.resolve("probe_withdraw")
        await withdraw.call(
            withdraw.contract.prepare(Request(name="probe_withdraw", arguments=b"{}"))
        )
        upstream = gateway._upstreams["probe"]
        for _ in range(100):  # the listen event, then the new listing, arrive on their own
            if "victim" not in upstream.tools:
                break
            await asyncio.sleep(0.1)
        assert "victim" not in upstream.tools, "no new listing 10 s after the listen event"
        with pytest.raises(UpstreamError) as refused:
            await victim.call(
                victim.contract.prepare(Request(name="probe_victim", arguments=b'{"note": "b"}'))
            )
        assert "is no longer listed" in str(refused.value)
