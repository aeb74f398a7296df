"""The web inbox: people see the calls waiting for them and answer with a generated form.

The CLI wires it in (``scope-tool inbox``, ``scope-tool dev``) through four names:
:func:`create_app` (the ASGI app), :func:`add_arguments` (its command-line options),
:class:`InboxOptions` (what those options say: address, authentication, allowed hosts) and
:func:`serve_inbox` (uvicorn until cancelled). :func:`mint_login_token` signs a person's login
token for an inbox started with a token secret (``python -m scope_tool.inbox token NAME``); the
inbox verifies it itself. It is not the identity token a worker verifies for a call started
with ``require_verified`` (:mod:`scope_tool.wire.identity`, ``issue_token``/``verify_token``).
"""

from scope_tool.inbox.app import create_app
from scope_tool.inbox.auth import (
    AuthenticationError,
    InboxAuth,
    InboxConfigError,
    mint_login_token,
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
    "mint_login_token",
    "serve_inbox",
]
