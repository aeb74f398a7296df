"""A gateway ``approve`` entry may carry an ApprovalPolicy: parsed with the config, given to the
gate, refused clearly when malformed (without Temporal; the workflow side is tests/policies)."""

from __future__ import annotations

import mcp_types as types
import pytest

from scope_tool import ApprovalPolicy
from scope_tool.gateway import Gateway, GatewayConfig, GatewayConfigError, Policy
from scope_tool.gateway._upstream import Hub, Upstream

QUORUM = {"quorum": 2, "voters": ["ann", "bob", "cy"]}


def _config(approve: object) -> dict[str, object]:
    return {"mcpServers": {"git": {"command": "x", "policy": {"approve": approve}}}}


def test_an_approve_entry_carries_its_policy_to_the_gate() -> None:
    config = GatewayConfig.from_dict(
        _config(["git_commit", {"tool": "git_push*", "policy": QUORUM}])
    )
    (server,) = config.servers
    assert server.policy.decide("git_push_tags", read_only_hint=True) is Policy.APPROVE
    assert server.policy.approval_policy("git_push_tags") == ApprovalPolicy.from_json_dict(QUORUM)
    assert server.policy.approval_policy("git_commit") is None
    hub = Hub()
    upstream = Upstream(server, hub)
    schema = {"type": "object"}
    upstream.tools = {
        name: types.Tool(name=name, input_schema=schema) for name in ("git_commit", "git_push")
    }
    gateway = Gateway(config, hub, {"git": upstream})
    try:
        pushed = gateway.registry.resolve("git_git_push")
        committed = gateway.registry.resolve("git_git_commit")
        assert pushed is not None
        assert committed is not None
        assert pushed.approval_policy == ApprovalPolicy(quorum=2, voters=("ann", "bob", "cy"))
        assert committed.approval_policy is None
    finally:
        gateway.close()


@pytest.mark.parametrize(
    ("approve", "named"),
    [
        ([{"tool": "git_push"}], "policy.approve[0]: must be a pattern or an object"),
        ([{"tool": 3, "policy": QUORUM}], "policy.approve[0]: must be a pattern or an object"),
        (
            ["x", {"tool": "git_push", "policy": {"quorum": 4, "voters": ["ann"]}}],
            "policy.approve[1].policy: tool: invalid policy: quorum 4 cannot be met",
        ),
        ([{"tool": "git_push", "policy": {"quorom": 2}}], "unknown policy member(s) quorom"),
    ],
)
def test_a_malformed_approve_policy_names_the_entry(approve: object, named: str) -> None:
    with pytest.raises(GatewayConfigError) as raised:
        GatewayConfig.from_dict(_config(approve), source="gw.json")
    assert named in str(raised.value)
