"""Principal: shape checks, the contextvar it travels in, and what a Guard's policy sees."""

from __future__ import annotations

import asyncio

import pytest

from scope_tool import (
    Authorization,
    Definition,
    Failure,
    FailureKind,
    Guard,
    InvalidPrincipalError,
    Invocation,
    Output,
    Principal,
    Request,
    Result,
    acting_for,
    bind,
    current_principal,
)


class Echo:
    def __init__(self) -> None:
        self.ran = 0

    def definition(self) -> Definition:
        return Definition(name="echo", input_schema={"type": "object"})

    async def call(self, invocation: Invocation) -> Result:
        self.ran += 1
        return Result(output=Output.text_output("ran"))


def test_principal_is_frozen_and_keeps_roles_sorted_and_unique():
    principal = Principal(user="alice", tenant="acme", roles=["writer", "admin", "writer"])  # type: ignore[arg-type]
    assert principal.roles == ("admin", "writer")
    assert principal == Principal(user="alice", tenant="acme", roles=("writer", "admin"))
    assert principal.has_role("admin")
    assert not principal.has_role("Admin")
    with pytest.raises(AttributeError):
        principal.user = "mallory"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"user": ""}, "principal user must not be blank"),
        ({"user": 7}, "principal user must be a str"),
        ({"user": "a", "tenant": " "}, "principal tenant must not be blank"),
        ({"user": "a", "roles": "admin"}, "roles must be a collection of str"),
        ({"user": "a", "roles": ("admin", "")}, "principal role must not be blank"),
        ({"user": "x" * 257}, "longer than 256"),
    ],
)
def test_a_malformed_principal_is_refused_with_what_was_wrong(kwargs, message):
    with pytest.raises(InvalidPrincipalError, match=message):
        Principal(**kwargs)


def test_principal_json_round_trips_and_is_strict():
    principal = Principal(user="alice", tenant="acme", roles=("admin",))
    assert principal.to_json() == b'{"user":"alice","tenant":"acme","roles":["admin"]}'
    assert Principal.from_json(principal.to_json()) == principal
    assert Principal.from_json('{"user":"bob"}') == Principal(user="bob")
    with pytest.raises(InvalidPrincipalError, match='unknown member "admin"'):
        Principal.from_json('{"user":"bob","admin":true}')
    with pytest.raises(InvalidPrincipalError, match="missing member"):
        Principal.from_json("{}")
    with pytest.raises(InvalidPrincipalError, match="principal JSON"):
        Principal.from_json("not json")


def test_acting_for_sets_and_restores_the_current_principal():
    alice, bob = Principal(user="alice"), Principal(user="bob")
    assert current_principal() is None
    with acting_for(alice):
        assert current_principal() == alice
        with acting_for(bob):
            assert current_principal() == bob
        with acting_for(None):
            assert current_principal() is None
        assert current_principal() == alice
    assert current_principal() is None
    with (
        pytest.raises(InvalidPrincipalError, match="needs a Principal"),
        acting_for("alice"),  # type: ignore[arg-type]
    ):
        pass


async def test_concurrent_tasks_keep_their_own_principal():
    seen: dict[str, str | None] = {}

    async def work(name: str) -> None:
        with acting_for(Principal(user=name)):
            await asyncio.sleep(0.01)
            principal = current_principal()
            seen[name] = principal.user if principal else None

    await asyncio.gather(*(work(name) for name in ("a", "b", "c")))
    assert seen == {"a": "a", "b": "b", "c": "c"}


async def test_a_guard_shows_its_policy_the_principal_and_can_refuse_per_user():
    seen: list[Authorization] = []

    def only_admins(authorization: Authorization) -> bool:
        seen.append(authorization)
        principal = authorization.principal
        return principal is not None and principal.has_role("admin")

    tool = Echo()
    binding = bind(Guard(tool, only_admins))
    invocation = binding.contract.prepare(Request(name="echo", arguments='{"a":1}'))
    with acting_for(Principal(user="root", tenant="acme", roles=("admin",))):
        assert (await binding.call(invocation)).output.text() == "ran"
    with acting_for(Principal(user="guest", tenant="acme")), pytest.raises(Failure) as refused:
        await binding.call(invocation)
    assert refused.value.kind is FailureKind.REJECTED
    with pytest.raises(Failure):
        await binding.call(invocation)  # acting for nobody
    assert tool.ran == 1
    assert [a.principal.user if a.principal else None for a in seen] == ["root", "guest", None]
    assert seen[0].principal == Principal(user="root", tenant="acme", roles=("admin",))
    assert seen[0].arguments == b'{"a":1}'


@pytest.mark.parametrize(
    "fields",
    [
        {"user": "alice\nrequest id     FAKE"},
        {"user": "bob\x1b[2K\routcome  REJECTED by security"},
        {"user": "alice", "tenant": "acme\r"},
        {"user": "alice", "roles": ("admin\u202e",)},
    ],
    ids=["newline", "escape", "carriage-return", "bidi-override"],
)
def test_control_characters_are_refused(fields: dict[str, object]) -> None:
    """A name shown on one line must not forge or rewrite lines (#25 item 11)."""
    with pytest.raises(InvalidPrincipalError, match="control character"):
        Principal(**fields)  # type: ignore[arg-type]
