"""``python -m scope_tool.inbox token NAME``: print a signed sign-in token for NAME.

The secret comes from ``--token-secret`` or ``SCOPE_TOOL_INBOX_TOKEN_SECRET`` (the same one the
inbox runs with). Give the person the token, or a link ``https://INBOX/?token=TOKEN``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from datetime import timedelta

from scope_tool.config.settings import add_env_option
from scope_tool.inbox.auth import mint_login_token


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line, print the token; exit code 2 with one line on a mistake."""
    parser = argparse.ArgumentParser(prog="python -m scope_tool.inbox")
    commands = parser.add_subparsers(dest="command", required=True)
    token = commands.add_parser("token", help="print a signed sign-in token for NAME")
    token.add_argument("name", help="the identity recorded as answered_by")
    add_env_option(
        token, "--token-secret", "SCOPE_TOOL_INBOX_TOKEN_SECRET", help="the inbox's secret"
    )
    token.add_argument(
        "--valid-hours", type=float, default=None, help="expire after this many hours"
    )
    args = parser.parse_args(argv)
    if not args.token_secret:
        print(
            "error: no secret: pass --token-secret or set SCOPE_TOOL_INBOX_TOKEN_SECRET",
            file=sys.stderr,
        )
        return 2
    valid_for = timedelta(hours=args.valid_hours) if args.valid_hours is not None else None
    try:
        print(mint_login_token(args.name, secret=args.token_secret, valid_for=valid_for))
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
