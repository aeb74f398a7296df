"""Serving the inbox: command-line options, the refusal to run open, and uvicorn until cancelled.

The CLI (``scope-tool inbox``, ``scope-tool dev``) calls :func:`add_arguments` on its parser,
reads the parsed values with :meth:`InboxOptions.from_args`, and gives them to
:func:`serve_inbox`. Serving goes through the CLI's shared
``scope_tool.serving._web_serving.AsgiServer``: a port in use is an ``OSError`` with the address in
it, signal handling is left to the caller, and the inbox stops when its task is cancelled, after
closing the socket and finishing requests in flight."""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any

from scope_tool.client import ToolCalls
from scope_tool.config.settings import add_env_option, parse_flag
from scope_tool.inbox.app import create_app
from scope_tool.inbox.auth import InboxAuth, InboxConfigError, is_loopback_host
from scope_tool.inbox.hosts import AllowedHosts
from scope_tool.serving._web_serving import AsgiServer
from scope_tool.wire.errors import SettingsError

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "InboxOptions", "add_arguments", "serve_inbox"]

_log = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8234

_SERVER = AsgiServer(name="the inbox", lifespan="off", graceful_seconds=5)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the inbox's options (each with a ``SCOPE_TOOL_INBOX_*`` environment default).

    The parsed names are exactly the fields of :class:`InboxOptions`.
    """
    add_env_option(
        parser,
        "--host",
        "SCOPE_TOOL_INBOX_HOST",
        fallback=DEFAULT_HOST,
        help="address to listen on (%(default)s); anything but loopback needs authentication",
    )
    add_env_option(
        parser,
        "--port",
        "SCOPE_TOOL_INBOX_PORT",
        type=_port,  # also applied to the variable's text, when this command is parsed
        fallback=DEFAULT_PORT,
        help="port to listen on (%(default)s)",
    )
    add_env_option(
        parser,
        "--identity-header",
        "SCOPE_TOOL_INBOX_IDENTITY_HEADER",
        metavar="HEADER",
        help="trust this header for the person's identity, set by your reverse proxy after its "
        "login (e.g. X-Forwarded-User); only safe when the proxy is the only way in",
    )
    add_env_option(
        parser,
        "--token-secret",
        "SCOPE_TOOL_INBOX_TOKEN_SECRET",
        metavar="SECRET",
        help="accept HMAC-signed tokens made with this secret (prefer the variable, which "
        "other users cannot read from the process list)",
    )
    add_env_option(
        parser,
        "--dev-loopback",
        "SCOPE_TOOL_INBOX_DEV_LOOPBACK",
        action=_SwitchOn,
        type=_loopback_setting,
        fallback=False,
        help="no authentication, for your own machine: only on a loopback address; everyone is "
        "'dev' unless the URL says ?as=NAME",
    )
    parser.add_argument(
        "--allowed-host",
        dest="allowed_hosts",
        action="append",
        type=_host_entry,
        default=_split_names(os.environ.get("SCOPE_TOOL_INBOX_ALLOWED_HOSTS", "")),
        metavar="NAME",
        help="a public name the inbox is reached by (repeatable; also "
        "SCOPE_TOOL_INBOX_ALLOWED_HOSTS=NAME,NAME): requests for any other host are refused, "
        "which stops DNS-rebinding pages; loopback names and the bound address are always allowed",
    )
    add_env_option(
        parser,
        "--web-ui",
        "SCOPE_TOOL_INBOX_WEB_UI",
        dest="web_ui_url",
        metavar="URL",
        help="the Temporal Web UI's address (e.g. http://localhost:8233); each call's page then "
        "links to the call there",
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class InboxOptions:
    """How the inbox is served: where it listens and whom it believes.

    Attributes:
        host: Address to listen on. Without ``identity_header`` or ``token_secret`` only a
            loopback address is accepted (and only with ``dev_loopback``).
        port: Port to listen on; ``0`` picks a free one (reported to ``on_listening``).
        identity_header: Trusted header carrying the identity (set by a reverse proxy).
        token_secret: Secret for signed tokens (see :func:`~scope_tool.inbox.mint_login_token`).
        dev_loopback: Serve without authentication on a loopback address (identity ``dev``).
        allowed_hosts: Public names the inbox is reached by; requests naming any other host
            are refused (loopback names and ``host`` itself are always allowed; ``*`` turns the
            check off, only with authentication).
        web_ui_url: The Temporal Web UI's address; calls' pages link to the call there.
    """

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    identity_header: str | None = None
    token_secret: str | None = None
    dev_loopback: bool = False
    allowed_hosts: tuple[str, ...] = ()
    web_ui_url: str | None = None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> InboxOptions:
        """The options :func:`add_arguments` parsed (its names are this class's fields)."""
        values = {field.name: getattr(args, field.name) for field in fields(cls)}
        values["allowed_hosts"] = tuple(values["allowed_hosts"])
        return cls(**values)

    def auth(self) -> InboxAuth:
        """Who the inbox believes; :meth:`InboxAuth.check_bind` says whether ``host`` may serve.

        Raises:
            InboxConfigError: No authentication configured, or a token secret too short.
        """
        return InboxAuth(
            identity_header=self.identity_header,
            token_secret=self.token_secret,
            dev_loopback=self.dev_loopback,
        )


class _SwitchOn(argparse.Action):
    """``store_true`` whose default may be a variable's text, read by ``type`` at parse time.

    Reading the environment when the parser is built would break every ``scope-tool`` command
    on a mistyped inbox variable; argparse converts a text default only for the command run.
    """

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, True)


def _loopback_setting(text: str) -> bool:
    try:
        return parse_flag("SCOPE_TOOL_INBOX_DEV_LOOPBACK", text)
    except SettingsError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a port number from 0 to 65535 (--port or SCOPE_TOOL_INBOX_PORT)"
        )
    return port


def _host_entry(text: str) -> str:
    """Refuse a mistyped ``--allowed-host`` while parsing, with the reason."""
    try:
        AllowedHosts.parse([text])
    except InboxConfigError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def _split_names(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


async def serve_inbox(
    calls: ToolCalls,
    options: InboxOptions,
    *,
    on_listening: Callable[[str, int], None] | None = None,
) -> None:
    """Serve the inbox until this coroutine is cancelled.

    Args:
        calls: The client facade the inbox reads and answers through.
        options: Where it listens and whom it believes.
        on_listening: Called with the bound host and port once connections are accepted.

    Raises:
        InboxConfigError: No authentication configured, unauthenticated off loopback, an
            allowed host that is not a name, or ``*`` without authentication; raised before
            anything listens.
        OSError: The address cannot be bound (port in use, unknown host).
    """
    auth = options.auth()
    host, port, web_ui_url = options.host, options.port, options.web_ui_url
    auth.check_bind(host)
    if options.identity_header is not None and not is_loopback_host(host):
        _log.warning(
            "the inbox trusts the %s header from anyone who can reach %s:%s; make sure only "
            "your reverse proxy can (or bind to 127.0.0.1 behind it)",
            options.identity_header,
            host,
            port,
        )
    hosts = AllowedHosts.parse(options.allowed_hosts, bind=host)
    if hosts.any_address and not options.allowed_hosts:
        _log.warning(
            "the inbox listens on every address of this machine but answers only to IP "
            "addresses and localhost; give the names people use with --allowed-host NAME"
        )
    if web_ui_url is not None and not web_ui_url.startswith(("http://", "https://")):
        raise InboxConfigError(f"the Web UI address must be an http(s):// URL, got {web_ui_url!r}")
    app = create_app(calls, auth=auth, allowed_hosts=hosts, web_ui_url=web_ui_url)
    await _SERVER.serve(app, host=host, port=port, on_listening=on_listening)
