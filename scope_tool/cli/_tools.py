"""``scope-tool tools``: the tools the running workers serve, and the checks ``call`` makes.

Both read the facade (``ToolCalls.tools`` / ``ToolCalls.serves``): what workers published,
kept only while they poll. ``call`` refuses a tool no worker serves before anything starts,
with the closest served names (difflib) as "did you mean", and arguments the tool's published
input schema refuses, checked by the protocol's own schema layer (``CompiledSchema``, the
checker ``Contract.prepare`` runs in the worker), so the verdict is the worker's.
"""

from __future__ import annotations

import argparse
import difflib
import json
from typing import TYPE_CHECKING

from scope_tool.cli._render import render_table
from scope_tool.serving._connection import connect, settings_from_args
from scope_tool.serving._errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE, CommandError

if TYPE_CHECKING:
    from scope_tool.client import ToolCalls, ToolInfo

__all__ = ["require_admissible_arguments", "require_served", "run_tools"]

_FRAGMENT_WIDTH = 500


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
    if name in served:
        # A worker that has just said "ready" may not have polled the tool's queue yet when
        # `serves` asked; by the time the list was read it had.
        return
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


async def require_admissible_arguments(calls: ToolCalls, name: str, arguments: str) -> None:
    """Raise a :class:`CommandError` (exit 2) when the input schema the workers published for
    ``name`` refuses ``arguments``: the JSON pointer, the violation and the schema there.

    Nothing is refused when no worker published the tool or its schema cannot be read: the
    call then starts and the worker's contract decides, as before.
    """
    from scope_tool._schema import CompiledSchema

    try:
        published = {tool.name: tool for tool in await calls.tools()}
    except Exception:
        return
    tool = published.get(name)
    if tool is None:
        return
    try:
        schema = CompiledSchema.parse(tool.input_schema)
    except ValueError:
        return
    # Contract.prepare admits blank arguments as {}.
    verdict = schema.check(arguments.encode("utf-8") if arguments.strip() else b"{}")
    if verdict.accepted or verdict.path is None:
        return  # accepted, or not a value the schema saw: the worker says why
    where = verdict.path or "/ (the arguments as a whole)"
    fragment = json.dumps(_fragment(json.loads(schema.canonical), verdict.path), indent=2)
    if len(fragment) > _FRAGMENT_WIDTH:
        fragment = fragment[:_FRAGMENT_WIDTH] + f"... ({len(fragment)} characters)"
    raise CommandError(
        f"arguments do not satisfy the input schema of tool {name!r} at {where}:"
        f" {verdict.violation}; nothing was started (see: scope-tool tools --json)",
        exit_code=EXIT_USAGE,
        details=f"the schema at {where}:\n{fragment}",
    )


def _fragment(schema: object, pointer: str) -> object:
    """The part of ``schema`` that applies at the instance ``pointer``, as far as plain
    ``properties``, ``items``, ``prefixItems``, ``additionalProperties`` and local ``$ref``
    lead; where they stop, the part reached so far (at worst the whole schema)."""
    root, here = schema, schema
    for token in [part.replace("~1", "/").replace("~0", "~") for part in pointer.split("/")[1:]]:
        here = _resolved(root, here)
        if not isinstance(here, dict):
            return here
        properties = here.get("properties")
        prefix = here.get("prefixItems")
        if isinstance(properties, dict) and token in properties:
            here = properties[token]
        elif isinstance(prefix, list) and token.isdigit() and int(token) < len(prefix):
            here = prefix[int(token)]
        elif isinstance(here.get("items"), dict) and token.isdigit():
            here = here["items"]
        elif isinstance(here.get("additionalProperties"), dict):
            here = here["additionalProperties"]
        else:
            return here
    return _resolved(root, here)


def _resolved(root: object, here: object) -> object:
    for _ in range(32):  # a local $ref chain; a circle stops here
        reference = here.get("$ref") if isinstance(here, dict) else None
        if not isinstance(reference, str) or not reference.startswith("#/"):
            return here
        target: object = root
        for part in reference[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(target, dict) or part not in target:
                return here
            target = target[part]
        here = target
    return here
