"""The ``scope-tool`` command line: one argparse tree, every flag with its help text.

Connection flags are accepted after the sub-command (``scope-tool status ID --address X``), which is
where people type them; each has a ``SCOPE_TOOL_*`` environment default.
"""

from __future__ import annotations

import argparse
from importlib.metadata import PackageNotFoundError, version

from scope_tool.cli._codec import add_codec_server_parser
from scope_tool.cli._commands import add_json_flag, call_command, command
from scope_tool.cli._dev import EXAMPLE_TOOLS
from scope_tool.cli._history import add_history_parser
from scope_tool.cli._identity import add_token_parser
from scope_tool.cli._mcp import add_mcp_arguments
from scope_tool.config.settings import add_env_option
from scope_tool.serving._connection import add_connection_arguments

__all__ = ["build_parser"]

_EPILOG = """\
examples:
  scope-tool dev                                   # server + Web UI + worker + inbox
  scope-tool call write_file '{"path":"a.txt","content":"hi"}' --id c1 --wait
  scope-tool pending
  scope-tool answer c1 true --by alice
  scope-tool result c1
exit codes: 0 done, 1 refused or failed (the call did not complete), 2 bad command line.
"""


def _positive_seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {value!r}") from None
    if not 0 < seconds < 10**9:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {value!r}")
    return seconds


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {value}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return value


def _version() -> str:
    try:
        return version("scope-tool")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


def _top_level_format(prog: str) -> argparse.HelpFormatter:
    """Room for the longest command name (``codec-server``) on its summary's line."""
    return argparse.RawDescriptionHelpFormatter(prog, max_help_position=30)


def build_parser(command_word: str | None = None) -> argparse.ArgumentParser:
    """The parser; ``args.command`` names the sub-command.

    With ``command_word`` (the command the arguments name; ``""`` for none, as in
    ``--help``), the flags of the optional packages (``inbox``, ``mcp``) are added only if it
    is theirs: defining them imports the package and its web stack (about 0.8 s of every
    command's start), which no other command needs. Without it, every command has all its
    flags (documentation checks, tests).
    """

    def wanted(name: str) -> bool:
        return command_word is None or command_word == name

    parser = argparse.ArgumentParser(
        prog="scope-tool",
        description="Durable, resumable tool calls for LLM agents, on Temporal.",
        epilog=_EPILOG,
        formatter_class=_top_level_format,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    dev = command(
        commands, "dev", "run the embedded Temporal dev server, Web UI, a worker and the inbox"
    )
    dev.add_argument("--port", type=int, default=7233, help="frontend gRPC port (%(default)s)")
    dev.add_argument("--ui-port", type=int, help="Web UI port (default: --port + 1000, 8233)")
    dev.add_argument("--inbox-port", type=int, help="inbox port (default: the Web UI's + 1, 8234)")
    dev.add_argument("--no-inbox", action="store_true", help="do not serve the inbox")
    dev.add_argument(
        "--mcp-port",
        type=int,
        help="also serve the tools to MCP clients at http://localhost:PORT/mcp",
    )
    add_env_option(
        dev,
        "--data-dir",
        "SCOPE_TOOL_DATA_DIR",
        fallback=".scope-tool",
        help="project data folder: dev.db, logs, the example tools' files (%(default)s)",
    )
    dev.add_argument(
        "--tools",
        action="append",
        metavar="MODULE:ATTR",
        help=f"registry the worker serves instead of the examples ({EXAMPLE_TOOLS});"
        " repeat to serve versions, newest first",
    )
    dev.add_argument(
        "--gateway",
        metavar="CONFIG",
        help="serve the tools of the MCP servers a gateway config names instead (docs/gateway.md)",
    )
    dev.add_argument(
        "--metrics", metavar="HOST:PORT", help="worker Prometheus metrics at HOST:PORT/metrics"
    )
    dev.add_argument(
        "--codec-port",
        type=int,
        help="codec server port for the Web UI, with SCOPE_TOOL_ENCRYPTION_KEYS"
        " (default: the Web UI's + 2, 8235)",
    )
    add_connection_arguments(dev, with_address=False)

    worker = command(commands, "worker", "run a worker for a registry of tools")
    worker_source = worker.add_mutually_exclusive_group(required=True)
    worker_source.add_argument(
        "--gateway",
        metavar="CONFIG",
        help="serve the tools of the MCP servers a gateway config (mcpServers JSON) names,"
        " each call durable (docs/gateway.md)",
    )
    worker_source.add_argument(
        "--tools",
        action="append",
        metavar="MODULE:ATTR",
        help="the Registry to serve, as module:attribute (found from the current folder);"
        " repeat to serve versions of it, newest first, so calls started on an old contract"
        " finish on it",
    )
    add_env_option(
        worker,
        "--metrics",
        "SCOPE_TOOL_METRICS",
        metavar="HOST:PORT",
        help="serve Prometheus metrics at http://HOST:PORT/metrics",
    )
    add_connection_arguments(worker)

    call = command(commands, "call", "start a tool call (start-or-attach by --id)")
    call.add_argument("name", help="tool name, e.g. write_file")
    call.add_argument(
        "arguments",
        nargs="?",
        default="",
        help="arguments as JSON ('{}' if none; - reads them from standard input)",
    )
    call.add_argument("--id", help="call id (default: NAME-<random>); reusing one attaches")
    call.add_argument("--wait", action="store_true", help="follow the call until it ends")
    call.add_argument("--timeout", type=_seconds, help="with --wait: give up after SECONDS")
    call.add_argument(
        "--answer-timeout", type=_seconds, help="end as EXPIRED if a question waits this long"
    )
    call.add_argument(
        "--allow",
        action="append",
        default=[],
        metavar="NAME",
        help="only this identity may answer (repeatable; matched against answer --by)",
    )
    call.add_argument(
        "--notify-url", help="http(s) URL POSTed when the call waits and when it ends"
    )
    call.add_argument(
        "--for",
        dest="acting_for",
        metavar="USER[:TENANT[:ROLE,ROLE]]",
        help="the principal the call acts for (the tool's Authorizer sees it)",
    )
    call.add_argument(
        "--require-verified",
        action="store_true",
        help="answers must carry an identity token (scope-tool token issue; the inbox adds one)",
    )
    call.add_argument(
        "--channel",
        action="append",
        default=[],
        choices=("email", "slack"),
        help="also send each question by email or to Slack (repeatable; docs/channels.md)",
    )
    call.add_argument(
        "--policy",
        metavar="JSON",
        help='how questions are decided, e.g. \'{"quorum": 2, "voters": ["alice", "bob", "carol"]}\''
        " (docs/approvals.md)",
    )
    add_connection_arguments(call)

    tools = command(commands, "tools", "list the tools the running workers serve")
    tools.add_argument("--json", action="store_true", help="names, descriptions, input schemas")
    add_connection_arguments(tools)

    status = call_command(commands, "status", "show one call: phase, pending question, outcome")
    add_json_flag(status)
    add_connection_arguments(status)

    answer = command(
        commands, "answer", "answer the question a call is waiting on (several: one batch)"
    )
    answer.add_argument(
        "call_ids",
        metavar="ID",
        nargs="+",
        help="the call's id; several ids decide them as one batch, checked before any is sent",
    )
    answer.add_argument(
        "response",
        metavar="JSON",
        help="the answer, e.g. true or '{\"ok\":1}' (- reads it from standard input)",
    )
    answer.add_argument("--by", help="who answers (recorded; default: your user name)")
    answer.add_argument(
        "--request-id",
        action="append",
        default=[],
        help="answer only if this question is still pending (repeatable in a batch: one per call)",
    )
    add_env_option(
        answer,
        "--token",
        "SCOPE_TOOL_IDENTITY_TOKEN",
        help="identity token from `scope-tool token issue`",
    )
    add_connection_arguments(answer)

    pending = command(commands, "pending", "list the calls waiting for input")
    pending.add_argument("--tool", help="only calls of this tool")
    pending.add_argument(
        "--for",
        dest="for_name",
        metavar="NAME",
        help="only the questions NAME may answer now (allowed, after any escalation; a voter"
        " who has not voted)",
    )
    pending.add_argument("--limit", type=_positive_int, default=100, help="at most (%(default)s)")
    add_json_flag(pending)
    add_connection_arguments(pending)

    result = call_command(commands, "result", "print a finished call's output")
    result.add_argument("--wait", action="store_true", help="block until the call finishes")
    add_json_flag(result)
    add_connection_arguments(result)

    cancel = call_command(commands, "cancel", "cancel a running or waiting call")
    add_connection_arguments(cancel)

    reevaluate = command(
        commands,
        "reevaluate",
        "apply changed rules to waiting calls' approval questions (recorded; may decide them)",
    )
    reevaluate.add_argument("call_ids", metavar="ID", nargs="+", help="the calls' ids")
    reevaluate.add_argument(
        "--rules",
        required=True,
        metavar="JSON",
        help='a policy\'s rules as JSON: \'{"rules": [{"name": ..., "effect": "allow", ...}]}\'',
    )
    reevaluate.add_argument("--by", help="who re-evaluates (default: the login name)")
    add_connection_arguments(reevaluate)

    withdraw = call_command(
        commands, "withdraw", "withdraw a waiting call's question (ends WITHDRAWN, not a denial)"
    )
    withdraw.add_argument(
        "--reason", required=True, help="why (shown everywhere, and to the model)"
    )
    withdraw.add_argument("--by", help="who withdraws (default: the login name)")
    withdraw.add_argument("--request-id", help="the question withdrawn (default: the pending one)")
    add_connection_arguments(withdraw)

    extend = call_command(
        commands, "extend", "give a waiting call's question more time (its policy's max_extension)"
    )
    extend.add_argument(
        "seconds", type=_positive_seconds, metavar="SECONDS", help="how much later the deadline is"
    )
    extend.add_argument("--by", help="who extends (default: the login name)")
    extend.add_argument("--request-id", help="the question extended (default: the pending one)")
    add_env_option(
        extend,
        "--token",
        "SCOPE_TOOL_IDENTITY_TOKEN",
        help="identity token from `scope-tool token issue`: its subject extends",
    )
    add_connection_arguments(extend)

    delegate = call_command(
        commands, "delegate", "hand a waiting call's question to someone else (as its assignee)"
    )
    delegate.add_argument("to", nargs="+", metavar="NAME", help="who may answer instead")
    delegate.add_argument(
        "--by",
        help="the assignee handing it over (one of the call's answerers; with --token, its"
        " subject)",
    )
    delegate.add_argument("--request-id", help="the question delegated (default: the pending one)")
    add_env_option(
        delegate,
        "--token",
        "SCOPE_TOOL_IDENTITY_TOKEN",
        help="identity token from `scope-tool token issue`: its subject delegates",
    )
    add_connection_arguments(delegate)

    add_history_parser(commands)
    add_token_parser(commands)
    add_codec_server_parser(commands)

    inbox = command(commands, "inbox", "serve the web inbox for waiting calls")
    if wanted("inbox"):
        _add_inbox_arguments(inbox)
    add_connection_arguments(inbox)

    mcp = command(commands, "mcp", "serve a registry's tools to MCP clients (stdio or HTTP)")
    if wanted("mcp"):
        add_mcp_arguments(mcp)
    add_connection_arguments(mcp)
    return parser


def _add_inbox_arguments(parser: argparse.ArgumentParser) -> None:
    try:
        from scope_tool.inbox import add_arguments
    except ImportError:
        return
    add_arguments(parser)
