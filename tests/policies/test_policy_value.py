"""The policy value alone: its checks, its JSON and the tally (no server)."""

from __future__ import annotations

import json

import pytest

from scope_tool import ApprovalPolicy, InvalidPolicyError, VoterGroup

APPROVE = b'{"decision": "approve"}'
DENY = b'{"decision": "deny", "reason": "no"}'
EDIT = b'{"decision": "edit", "arguments": {"amount": 5}}'


@pytest.mark.parametrize(
    ("build", "words"),
    [
        (lambda: ApprovalPolicy(quorum=0), "quorum must be a whole number of at least 1"),
        (lambda: ApprovalPolicy(quorum=True), "quorum must be a whole number"),
        (lambda: ApprovalPolicy(quorum=3, voters=("a", "b")), "quorum 3 cannot be met"),
        (lambda: ApprovalPolicy(quorum=2, voters=("a", "a")), "names a more than once"),
        (lambda: ApprovalPolicy(quorum=2, voters=("a", "")), "non-empty name"),
        (lambda: ApprovalPolicy(quorum=2, voters="ab"), "must be a sequence of names"),
        (lambda: ApprovalPolicy(quorum=2, voters=("a\nb", "c")), "control characters"),
        (lambda: VoterGroup("finance", ()), "group 'finance' has no members"),
        (lambda: VoterGroup("finance", ("a",), at_least=2), "at_least must be a whole number"),
        (
            lambda: ApprovalPolicy(
                quorum=1, groups=(VoterGroup("f", ("a",)), VoterGroup("s", ("b",)))
            ),
            "the groups need 2 approvers in all",
        ),
        (
            lambda: ApprovalPolicy(
                quorum=2, groups=(VoterGroup("f", ("a",)), VoterGroup("f", ("b",)))
            ),
            "the group names names f more than once",
        ),
    ],
)
def test_a_malformed_policy_is_refused_saying_what(build: object, words: str) -> None:
    with pytest.raises(InvalidPolicyError, match="tool: invalid policy") as raised:
        build()  # type: ignore[operator]
    assert words in str(raised.value)


def test_json_round_trip_and_unknown_members() -> None:
    policy = ApprovalPolicy(
        quorum=2,
        voters=("carol",),
        groups=(VoterGroup("finance", ("alice",)), VoterGroup("security", ("bob", "dave"))),
        deny_ends=False,
    )
    text = json.dumps(policy.to_json_dict())
    assert ApprovalPolicy.from_json_dict(json.loads(text)) == policy
    with pytest.raises(InvalidPolicyError, match="unknown policy member"):
        ApprovalPolicy.from_json_dict({"quorum": 2, "voter": ["a"]})
    with pytest.raises(InvalidPolicyError, match="must be a JSON object"):
        ApprovalPolicy.from_json_dict([2])


def test_tally_of_a_quorum_with_its_status_line() -> None:
    policy = ApprovalPolicy(quorum=3, voters=("alice", "bob", "carol", "dave"))
    tally = policy.tally([("alice", APPROVE), ("bob", APPROVE)])
    assert tally.decided is None
    assert tally.text() == "2 of 3: alice, bob; waiting for one of: carol, dave"
    done = policy.tally([("alice", APPROVE), ("bob", APPROVE), ("dave", APPROVE)])
    assert done.decided == 2
    assert done.agreed == ("alice", "bob", "dave")


def test_a_deny_ends_the_vote_unless_the_policy_says_otherwise() -> None:
    ends = ApprovalPolicy(quorum=2, voters=("alice", "bob", "carol"))
    tally = ends.tally([("alice", APPROVE), ("bob", DENY)])
    assert (tally.decided, tally.denied) == (1, True)
    counted = ApprovalPolicy(quorum=2, voters=("alice", "bob", "carol"), deny_ends=False)
    assert counted.tally([("alice", APPROVE), ("bob", DENY)]).decided is None
    assert counted.tally([("alice", APPROVE), ("bob", DENY), ("carol", APPROVE)]).decided == 2
    # Two denials of three: two approvals can no longer be reached.
    lost = counted.tally([("alice", DENY), ("bob", DENY)])
    assert (lost.decided, lost.denied) == (0, True)


def test_groups_need_their_members_among_the_approvers() -> None:
    policy = ApprovalPolicy(
        quorum=2, groups=(VoterGroup("finance", ("alice", "ann")), VoterGroup("security", ("bob",)))
    )
    short = policy.tally([("alice", APPROVE), ("ann", APPROVE)])
    assert short.decided is None
    assert "needs a voter of: security" in short.text()
    assert policy.tally([("alice", APPROVE), ("bob", APPROVE)]).decided == 1


def test_the_edit_decides_once_approved_and_other_answers_agree_by_text() -> None:
    policy = ApprovalPolicy(quorum=2)
    tally = policy.tally([("alice", EDIT), ("bob", APPROVE)])
    assert tally.decided == 0  # the tool gets the edited arguments
    assert policy.tally([("a", b'"x"'), ("b", b'"y"')]).decided is None
    assert policy.tally([("a", b'"x"'), ("b", b'"y"'), ("c", b'"x"')]).decided == 2
