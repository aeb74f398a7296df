"""The web inbox: people see the calls waiting for them and answer with a generated form.

The CLI wires it in (``scope-tool inbox``, ``scope-tool dev``) through four names:
:func:`create_app` (the ASGI app), :func:`add_arguments` (its command-line options),
:class:`InboxOptions` (what those options say: address, authentication, allowed hosts) and
:func:`serve_inbox` (uvicorn until cancelled). :func:`mint_token` signs a person's token for
an inbox started with a token secret (``python -m scope_tool.inbox token NAME``).
"""

from scope_tool.inbox.app import create_app
from scope_tool.inbox.auth import (
    AuthenticationError,
    InboxAuth,
    InboxConfigError,
    mint_token,
    verify_token,
)
from scope_tool.inbox.hosts import AllowedHosts
from scope_tool.inbox.server import InboxOptions, add_arguments, serve_inbox

__all__ = [
    "AllowedHosts",
    "AuthenticationError",
    "InboxAuth",
    "InboxConfigError",
    "InboxOptions",
    "add_arguments",
    "create_app",
    "mint_token",
    "serve_inbox",
    "verify_token",
]
