"""Tools for the policy tests: a gated refund that appends one ledger line per run."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from scope_tool import ApprovalPolicy, Condition, Func, Registry, Rule, require_approval


class RefundInput(BaseModel):
    ledger: str
    order: str
    amount: float


def refund(value: RefundInput) -> str:
    """Append ``refund ORDER AMOUNT`` to the ledger: the test counts lines to count runs."""
    with Path(value.ledger).open("a", encoding="utf-8") as ledger:
        ledger.write(f"refund {value.order} {value.amount:g}\n")
    return f"refunded {value.amount:g} on {value.order}"


REGISTRY = Registry(
    Func(refund, name="refund", description="Refund an order (asks a person first)."),
).with_approval(names={"refund"})


def ledger_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


TOOL_POLICY = ApprovalPolicy(
    quorum=2,
    voters=("alice", "bob", "carol"),
    rules=(Rule(name="small-refunds", effect="allow", where=(Condition("/amount", "<=", 100),)),),
)
"""The gate's own policy (tests/policies/test_tool_policy.py): small refunds by rule, others by
two of three voters."""

TOOL_POLICY_REGISTRY = Registry(
    require_approval(
        Func(refund, name="refund", description="Refund an order (asks two of three)."),
        policy=TOOL_POLICY,
    ),
    require_approval(
        Func(refund, name="refund_reminded", description="Refund (reminds before its deadline)."),
        policy=ApprovalPolicy(reminders=(60,)),
    ),
)
