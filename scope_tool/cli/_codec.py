"""``scope-tool codec-server``: the command around :mod:`scope_tool.serving.codec_server`."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
from typing import Any

from scope_tool.cli._commands import command
from scope_tool.config.codec import encryption_codec_from_environment
from scope_tool.serving._errors import EXIT_OK, EXIT_USAGE, CommandError
from scope_tool.serving.codec_server import TOKEN_VARIABLE, start_codec_server
from scope_tool.wire.errors import EncryptionConfigError

__all__ = ["add_codec_server_parser", "run_codec_server"]


def add_codec_server_parser(commands: Any) -> None:
    """Add the ``codec-server`` sub-command to the CLI's sub-parsers."""
    parser = command(
        commands, "codec-server", "decrypt payloads for the Temporal Web UI (remote codec protocol)"
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (%(default)s)")
    parser.add_argument("--port", type=int, default=8235, help="port (%(default)s)")
    parser.add_argument(
        "--ui-origin",
        action="append",
        default=[],
        metavar="URL",
        help="a Web UI origin allowed to call it from a browser, e.g. http://localhost:8233"
        " (repeatable)",
    )


async def run_codec_server(args: argparse.Namespace) -> int:
    """Serve until Ctrl-C or SIGTERM; keys from ``SCOPE_TOOL_ENCRYPTION_KEYS(_FILE)``."""
    try:
        codec = encryption_codec_from_environment()
    except EncryptionConfigError as error:
        raise CommandError.usage(error) from None
    if codec is None:
        raise CommandError(
            "the codec server needs the encryption keys: set SCOPE_TOOL_ENCRYPTION_KEYS"
            " or SCOPE_TOOL_ENCRYPTION_KEYS_FILE",
            exit_code=EXIT_USAGE,
        )
    running = start_codec_server(
        codec,
        host=args.host,
        port=args.port,
        ui_origins=args.ui_origin,
        token=os.environ.get(TOKEN_VARIABLE) or None,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    print(
        f"codec server listening on {running.url} (keys {', '.join(codec.key_ids)};"
        f" origins {', '.join(args.ui_origin) or 'none'}); Ctrl-C stops it",
        flush=True,
    )
    try:
        await stop.wait()
    finally:
        running.stop()
    print("codec server stopped", flush=True)
    return EXIT_OK
