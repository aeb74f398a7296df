"""Identity tokens without a server: issue, verify, and every way one is refused."""

from __future__ import annotations

import base64
import json
from datetime import timedelta

import pytest

from scope_tool import Principal
from scope_tool.cli._identity import parse_principal, principal_text
from scope_tool.serving._errors import CommandError
from scope_tool.wire.identity import (
    IdentityError,
    identity_secret_from_environment,
    issue_token,
    token_subject,
    verify_token,
)

SECRET = b"0123456789abcdef-secret"
NOW = 1_800_000_000.0


def test_a_token_verifies_to_its_name_and_issuer_until_it_expires() -> None:
    token = issue_token(
        "alice", secret=SECRET, issuer="cli", lifetime=timedelta(minutes=5), now=NOW
    )
    identity = verify_token(token, secret=SECRET, now=NOW + 299)
    assert (identity.name, identity.issuer, identity.expires_at) == ("alice", "cli", NOW + 300)
    assert token_subject(token) == "alice"
    with pytest.raises(IdentityError, match="expired") as expired:
        verify_token(token, secret=SECRET, now=NOW + 300)
    assert expired.value.reason == "token_expired"


def test_forged_tokens_are_not_verified() -> None:
    token = issue_token("alice", secret=SECRET, issuer="cli", now=NOW)
    other = issue_token("alice", secret=b"another-secret-of-16+", issuer="cli", now=NOW)
    head, claims, signature = token.split(".")
    raised = json.loads(base64.urlsafe_b64decode(claims + "=="))
    raised["sub"] = "root"
    forged_claims = base64.urlsafe_b64encode(json.dumps(raised).encode()).rstrip(b"=").decode()
    for forged in (
        other,  # signed with another secret
        f"{head}.{forged_claims}.{signature}",  # claims changed, signature kept
        f"{head}.{claims}.",  # no signature
        "st1.e30",  # two parts
        "Bearer alice",  # not a token at all
        "st1.!!!.x",  # claims not base64 JSON
    ):
        with pytest.raises(IdentityError) as refused:
            verify_token(forged, secret=SECRET, now=NOW)
        assert refused.value.reason == "not_verified", forged
    assert token_subject("st1.!!!.x") is None


def test_without_a_secret_nothing_verifies() -> None:
    token = issue_token("alice", secret=SECRET, issuer="cli", now=NOW)
    with pytest.raises(IdentityError, match="SCOPE_TOOL_IDENTITY_SECRET is not set"):
        verify_token(token, secret=None, now=NOW)


@pytest.mark.parametrize(
    ("name", "options", "problem"),
    [
        ("", {}, "non-blank name"),
        ("alice", {"lifetime": timedelta(0)}, "lifetime"),
        ("alice", {"lifetime": timedelta(days=400)}, "lifetime"),
        ("alice", {"secret": b"short"}, "at least 16 bytes"),
        ("alice", {"issuer": " "}, "issuer"),
    ],
)
def test_bad_issue_requests_say_what_is_wrong(
    name: str, options: dict[str, object], problem: str
) -> None:
    arguments: dict[str, object] = {"secret": SECRET, "issuer": "cli", **options}
    with pytest.raises(IdentityError, match=problem):
        issue_token(name, **arguments)  # type: ignore[arg-type]


def test_the_secret_setting() -> None:
    assert identity_secret_from_environment({}) is None
    assert identity_secret_from_environment({"SCOPE_TOOL_IDENTITY_SECRET": ""}) is None
    assert identity_secret_from_environment({"SCOPE_TOOL_IDENTITY_SECRET": "x" * 16}) == b"x" * 16
    with pytest.raises(IdentityError, match="at least 16 bytes"):
        identity_secret_from_environment({"SCOPE_TOOL_IDENTITY_SECRET": "short"})


def test_the_for_flag_reads_user_tenant_and_roles() -> None:
    assert parse_principal("alice") == Principal(user="alice")
    assert parse_principal("alice:acme") == Principal(user="alice", tenant="acme")
    assert parse_principal("alice::admin,ops") == Principal(user="alice", roles=("ops", "admin"))
    full = parse_principal("alice@example.com:acme:deployer")
    assert full == Principal(user="alice@example.com", tenant="acme", roles=("deployer",))
    assert principal_text(full) == "alice@example.com (tenant acme; roles deployer)"
    for bad in ("", ":acme", "a:b:c:d"):
        with pytest.raises(CommandError) as refused:
            parse_principal(bad)
        assert refused.value.exit_code == 2


def test_a_worker_with_a_short_secret_refuses_to_start_in_one_line() -> None:
    import subprocess
    import sys

    from helpers.workers import REPOSITORY, python_environment

    done = subprocess.run(
        [sys.executable, "-m", "scope_tool.workers", "--tools", "identity.tools:REGISTRY"],
        env=python_environment(SCOPE_TOOL_IDENTITY_SECRET="short"),
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "the identity secret must be at least 16 bytes, got 5" in done.stderr
    assert "Traceback" not in done.stderr
    assert "worker ready" not in done.stderr


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


@pytest.mark.parametrize(
    "token",
    [
        # A non-ASCII signature (compare_digest refuses str with non-ASCII: TypeError).
        issue_token("alice", secret=SECRET, issuer="cli", now=NOW)[:-1] + "é",
        # Non-ASCII claims text (hmac_signature encodes ASCII: UnicodeEncodeError).
        "st1.é." + "A" * 43,
        # Claims nested past the interpreter's recursion limit (RecursionError).
        "st1." + _b64(b"[" * 1400 + b"]" * 1400) + ".sig",
    ],
    ids=["non-ascii-signature", "non-ascii-claims", "deep-nesting"],
)
def test_hostile_tokens_are_not_verified_refusals(token: str) -> None:
    """Whatever a token holds, it is refused as ``not_verified``, never a generic error (#25 item 10)."""
    with pytest.raises(IdentityError) as refused:
        verify_token(token, secret=SECRET, now=NOW)
    assert refused.value.reason == "not_verified"
    assert token_subject(token) is None
