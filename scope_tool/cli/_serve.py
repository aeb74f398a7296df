"""Long-running servers the CLI hands off to: the worker process and the web inbox.

``scope-tool worker`` replaces itself with ``python -m scope_tool.workers`` (``os.execv``) so signals,
exit codes and logs are exactly the worker's own; connection settings travel as the worker's
flags and ``SCOPE_TOOL_*`` environment. ``scope-tool inbox`` runs ``scope_tool.inbox`` (the
``[inbox]`` extra) when it is installed and says how to install it when it is not.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys

from scope_tool.serving._connection import connect, settings_from_args
from scope_tool.serving._errors import EXIT_OK, EXIT_USAGE, CommandError

__all__ = ["INBOX_INSTALL_HINT", "inbox_missing", "run_inbox", "run_worker"]

INBOX_INSTALL_HINT = "pip install 'scope-tool[inbox]'"
"""How to get the inbox: it is an optional package with its own web stack."""


_NO_SIGN_IN = (
    "the inbox needs a sign-in mode: --identity-header HEADER (a trusted proxy's header, e.g."
    " X-Forwarded-User), --token-secret SECRET (signed tokens), or --dev-loopback (no sign-in,"
    " this machine only); or their SCOPE_TOOL_INBOX_* variables (docs/inbox.md)"
)


def inbox_missing(error: ImportError) -> str:
    """Why the inbox cannot start and how to install it, in one line."""
    return f"the web inbox is not installed ({error}); install it with: {INBOX_INSTALL_HINT}"


def run_worker(args: argparse.Namespace) -> int:
    """Check each ``--tools`` looks importable, then become ``python -m scope_tool.workers``."""
    gateway = getattr(args, "gateway", None)
    if gateway is not None:
        _check_gateway(gateway)
    for spec in args.tools or ():
        _check_tools(spec)
    command, variables = settings_from_args(args).worker_command(
        args.tools or (),
        gateway=gateway,
        retry_safe=getattr(args, "retry_safe", None) or (),
        metrics=getattr(args, "metrics", None),
    )
    environment = {**os.environ, **variables}
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(command[0], command, environment)


def _check_gateway(path: str) -> None:
    """A gateway config must be readable and well formed before the worker starts anything."""
    try:
        from scope_tool.gateway import GatewayConfig, GatewayConfigError
    except ImportError as error:
        raise CommandError(
            f"--gateway needs the mcp extra: pip install 'scope-tool[mcp]' ({error})"
        ) from None
    try:
        GatewayConfig.load(path)
    except GatewayConfigError as error:
        raise CommandError(str(error), exit_code=EXIT_USAGE) from None


def _check_tools(spec: str) -> None:
    module, separator, attribute = spec.partition(":")
    if not separator or not module or not attribute:
        raise CommandError(
            f"--tools must be module:attribute (e.g. examples.tools:registry), got {spec!r}",
            exit_code=EXIT_USAGE,
        )
    if os.getcwd() not in sys.path:  # `python -m scope_tool.workers` will import from here too
        sys.path.insert(0, os.getcwd())
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        found = None
    # Imported here: the worker package loads the workflow, which the CLI otherwise never does.
    from scope_tool.workers._worker import moved_module

    moved = moved_module(module) if found is None else None
    if moved is not None:
        raise CommandError(
            f"--tools: module {module!r} moved: scope-tool installs one package, scope_tool;"
            f" use --tools {moved}:{attribute}"
        )
    if found is None:
        raise CommandError(
            f"--tools: cannot find module {module!r} in the current folder"
            f" ({os.getcwd()}) or on PYTHONPATH"
        )
    from scope_tool.workers._worker import load_registry

    try:  # the attribute too, so every --tools mistake is one line of ours with one exit code
        load_registry(spec)
    except ValueError as error:
        raise CommandError(f"--tools: {error}") from None


async def run_inbox(args: argparse.Namespace) -> int:
    """Serve the web inbox until Ctrl-C or SIGTERM; a bad setting is one line, exit code 2."""
    try:
        from scope_tool.inbox import InboxConfigError, InboxOptions, serve_inbox
        from scope_tool.serving._web_serving import serve_until_signalled
    except ImportError as error:
        raise CommandError(inbox_missing(error)) from None
    options = InboxOptions.from_args(args)
    if not (options.identity_header or options.token_secret or options.dev_loopback):
        # In flags: InboxAuth's own message names its Python parameters.
        raise CommandError(_NO_SIGN_IN, exit_code=EXIT_USAGE)
    try:  # refuse an unsafe setting before connecting anywhere
        options.auth().check_bind(options.host)
    except InboxConfigError as error:
        raise CommandError.usage(error) from None
    calls = await connect(settings_from_args(args))

    def listening(host: str, port: int) -> None:
        print(f"inbox listening on http://{host}:{port} (Ctrl-C stops it)", flush=True)

    try:
        stopped = await serve_until_signalled(serve_inbox(calls, options, on_listening=listening))
    except InboxConfigError as error:
        raise CommandError.usage(error) from None
    except OSError as error:
        raise CommandError(str(error.strerror or error)) from None
    if stopped:
        print("inbox stopped", flush=True)
    return EXIT_OK
