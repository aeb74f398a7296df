"""``scope-tool tools``: the tools the running workers serve, and the check ``call`` makes.

Both read the facade (``ToolCalls.tools`` / ``ToolCalls.serves``): what workers published,
kept only while they poll. ``call`` refuses a tool no worker serves before anything starts,
with the closest served names (difflib) as "did you mean".
"""

from __future__ import annotations

import argparse
import difflib
import json
from typing import TYPE_CHECKING

from scope_tool.cli._render import render_table
from scope_tool.serving._connection import connect, settings_from_args
from scope_tool.serving._errors import EXIT_FAILED, EXIT_OK, CommandError

if TYPE_CHECKING:
    from scope_tool.client import ToolCalls, ToolInfo

__all__ = ["require_served", "run_tools"]


def _schema(raw: bytes) -> object:
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")


def tools_to_json(tools: list[ToolInfo]) -> list[dict[str, object]]:
    """The listing as JSON: name, description, input schema (parsed), served contracts."""
    return [
        {
            "name": tool.name,
            "description": tool.description,
            "input_schema": _schema(tool.input_schema),
            "contract_digests": list(tool.contract_digests),
        }
        for tool in tools
    ]


async def run_tools(args: argparse.Namespace) -> int:
    """List the served tools as a table, or with ``--json`` their full definitions."""
    calls = await connect(settings_from_args(args))
    try:
        tools = await calls.tools()
    except Exception as error:
        raise CommandError(
            f"cannot list the tools of task queue {calls.task_queue!r}: {error}"
        ) from None
    if args.json:
        print(json.dumps(tools_to_json(tools), indent=2, ensure_ascii=False), flush=True)
        return EXIT_OK
    if not tools:
        print(
            f"no worker serves tools on task queue {calls.task_queue!r}"
            " (start one: scope-tool worker --tools module:registry)",
            flush=True,
        )
        return EXIT_OK
    rows = [
        (
            tool.name,
            tool.description.splitlines()[0] if tool.description else "",
            ", ".join(digest[:12] for digest in tool.contract_digests),
        )
        for tool in tools
    ]
    print(render_table(("TOOL", "DESCRIPTION", "CONTRACTS"), rows), flush=True)
    print("input schemas: scope-tool tools --json", flush=True)
    return EXIT_OK


async def require_served(calls: ToolCalls, name: str) -> None:
    """Raise a :class:`CommandError` naming the closest served tools when none serves ``name``."""
    if await calls.serves(name):
        return
    try:
        served = [tool.name for tool in await calls.tools()]
    except Exception:
        served = []
    close = difflib.get_close_matches(name, served, n=3, cutoff=0.5)
    hint = ""
    if close:
        hint = "; did you mean " + " or ".join(repr(each) for each in close) + "?"
    elif served:
        hint = f"; served tools: {', '.join(served)}"
    else:
        hint = " (no worker serves any tool there: is a worker running?)"
    raise CommandError(
        f"no worker serves tool {name!r} on task queue {calls.task_queue!r}{hint}"
        " (see: scope-tool tools)",
        exit_code=EXIT_FAILED,
    )
