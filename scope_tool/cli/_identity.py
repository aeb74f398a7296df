"""Who a call acts for and who answers, on the command line.

``scope-tool call --for USER[:TENANT[:ROLE,ROLE]]`` starts a call acting for a principal (the
tool's ``Authorizer`` sees it in every round); ``scope-tool token issue --for NAME`` prints a
signed, expiring identity token (``SCOPE_TOOL_IDENTITY_SECRET``) an operator passes to
``scope-tool answer --token`` for a call that requires verified answerers.
"""

from __future__ import annotations

import argparse
import sys
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from scope_tool._text import escaped_controls
from scope_tool.cli._commands import command
from scope_tool.serving._errors import EXIT_OK, EXIT_USAGE, CommandError

if TYPE_CHECKING:
    from scope_tool import Principal

__all__ = ["add_token_parser", "parse_principal", "principal_text", "run_token"]

_MAX_TTL_SECONDS = 366 * 24 * 3600


def parse_principal(text: str) -> Principal:
    """``USER[:TENANT[:ROLE,ROLE...]]`` as a :class:`~scope_tool.Principal` (empty parts: none).

    Raises:
        CommandError: the text has more than three parts or a malformed value (exit 2).
    """
    from scope_tool import Principal
    from scope_tool.errors import InvalidPrincipalError

    parts = text.split(":")
    if len(parts) > 3:
        raise CommandError(
            f"--for takes USER[:TENANT[:ROLE,ROLE]], got {text!r} ({len(parts)} parts)",
            exit_code=EXIT_USAGE,
        )
    user = parts[0]
    tenant = parts[1] if len(parts) > 1 and parts[1] else None
    roles = tuple(role for role in parts[2].split(",") if role) if len(parts) > 2 else ()
    try:
        return Principal(user=user, tenant=tenant, roles=roles)
    except InvalidPrincipalError as error:
        raise CommandError(f"--for {text!r}: {error}", exit_code=EXIT_USAGE) from None


def principal_text(principal: Principal) -> str:
    """One line for a principal: ``alice (tenant acme; roles admin, billing)``."""
    extras = []
    if principal.tenant is not None:
        extras.append(f"tenant {principal.tenant}")
    if principal.roles:
        extras.append(f"roles {', '.join(principal.roles)}")
    # Principal refuses control characters; one recorded before it did is shown escaped.
    return escaped_controls(principal.user + (f" ({'; '.join(extras)})" if extras else ""))


def add_token_parser(commands: Any) -> None:
    """Add ``token issue`` to the CLI's sub-parsers."""
    token = command(
        commands,
        "token",
        "issue a signed identity token for verified answers (SCOPE_TOOL_IDENTITY_SECRET)",
    )
    actions = token.add_subparsers(dest="token_command", metavar="ACTION", required=True)
    issue = actions.add_parser(
        "issue",
        help="print a token naming NAME, for scope-tool answer --token",
        description="Print a token naming NAME, for `scope-tool answer --token` (or"
        " SCOPE_TOOL_IDENTITY_TOKEN). It needs SCOPE_TOOL_IDENTITY_SECRET, the secret the"
        " workers verify with.",
    )
    issue.add_argument("--for", dest="name", required=True, metavar="NAME", help="who answers")
    issue.add_argument(
        "--ttl",
        type=int,
        default=900,
        metavar="SECONDS",
        help="how long the token is valid (%(default)s seconds)",
    )


async def run_token(args: argparse.Namespace) -> int:
    """Print a token for ``--for NAME`` signed with ``SCOPE_TOOL_IDENTITY_SECRET``."""
    from scope_tool.wire.identity import (
        SECRET_VARIABLE,
        IdentityError,
        identity_secret_from_environment,
        issue_token,
    )

    if not 0 < args.ttl <= _MAX_TTL_SECONDS:
        raise CommandError(
            f"--ttl must be between 1 and {_MAX_TTL_SECONDS} seconds, got {args.ttl}",
            exit_code=EXIT_USAGE,
        )
    try:
        secret = identity_secret_from_environment()
        if secret is None:
            raise CommandError(
                f"{SECRET_VARIABLE} is not set: a token is signed with the secret the workers"
                " verify with",
                exit_code=EXIT_USAGE,
            )
        token = issue_token(
            args.name, secret=secret, issuer="cli", lifetime=timedelta(seconds=args.ttl)
        )
    except IdentityError as error:
        raise CommandError.usage(error) from None
    print(token, flush=True)
    print(
        f"valid {args.ttl} s; answer with: scope-tool answer ID JSON --token <token>",
        file=sys.stderr,
        flush=True,
    )
    return EXIT_OK
