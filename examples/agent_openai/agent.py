"""The file agent of ``examples.agent``, written with the OpenAI Agents SDK.

Run from the repository root, with a server and a worker for ``examples.agent.tools``::

    scope-tool dev --tools examples.agent.tools:registry                 # terminal 1
    python -m examples.agent_openai.agent run "write hello to notes.txt"  # terminal 2
    scope-tool answer <call id> '{"decision": "approve"}'                 # the person
    python -m examples.agent_openai.agent resume                          # the agent, later

``run`` ends when the model's ``write_file`` call waits for approval (the SDK's run
interruption): it saves ``RunState.to_json()`` in ``--state`` and exits (``--hold`` keeps the
process alive, as a chat server would be, so it can be killed to prove nothing is lost).
``resume`` restores the state with ``RunState.from_json``, applies the person's answer to it
(``ScopeTools.apply_answers``) and continues the run; ``--wait`` waits for the answer first.

The model is the SDK's own ``agents.testing.ScriptedModel`` by default (offline, no key): it
understands "write TEXT to FILE". ``--model gpt-4o-mini`` (any OpenAI model name) uses the real
API when ``OPENAI_API_KEY`` is set.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import uuid
from pathlib import Path
from typing import Any

try:
    from agents import Agent, Model, Runner, RunResult, RunState, set_tracing_disabled
    from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call
except ImportError as missing:
    raise SystemExit(
        f"this example needs the OpenAI Agents SDK ({missing}): run `make setup`,"
        " or pip install 'scope-tool[openai-agents]'"
    ) from None

from examples.agent.tools import registry
from scope_tool.agents.openai_agents import ScopeTools
from scope_tool.client import ToolCalls

_WRITE = re.compile(r"write (?P<content>.+?) (?:to|into) (?P<path>\S+)\s*$", re.IGNORECASE)
INSTRUCTIONS = "You manage files with the tools you have. Never overwrite; say what you did."


def _text(value: Any) -> str:
    """A message's or tool output's text, whichever shape the SDK gave it."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(_text(part) for part in value)
    if isinstance(value, dict):
        return str(value.get("text") or _text(value.get("content", "")))
    return ""


def scripted(call: ModelCall) -> Any:
    """A stand-in model: "write TEXT to FILE" becomes one write_file call, then a summary."""
    items = [{"role": "user", "content": call.input}] if isinstance(call.input, str) else call.input
    last = dict(items[-1]) if items else {}
    if last.get("type") == "function_call_output":
        return [assistant_message(f"Done. The tool said: {_text(last.get('output'))}")]
    asked = _WRITE.search(_text(last.get("content", ""))) if last.get("role") == "user" else None
    if asked:
        arguments = {"path": asked["path"], "content": asked["content"].strip("\"'")}
        made = sum(1 for item in items if dict(item).get("type") == "function_call")
        return [function_call("write_file", arguments, call_id=f"call_{made + 1}")]
    return [assistant_message('I only understand "write TEXT to FILE".')]


def model(name: str) -> Model | str:
    if name == "scripted":
        return ScriptedModel(ModelStep.respond(scripted) for _ in range(32))
    return name  # the SDK's OpenAI provider resolves it and reads OPENAI_API_KEY


def build(calls: ToolCalls, conversation_id: str, *, model_name: str) -> tuple[Agent, ScopeTools]:
    tools = ScopeTools(calls, registry, conversation_id=conversation_id, answered_by="agent-ui")
    agent = Agent(
        name="files", instructions=INSTRUCTIONS, model=model(model_name), tools=tools.tools
    )
    return agent, tools


def save(path: Path, *, conversation_id: str, result: RunResult) -> None:
    state = {"conversation_id": conversation_id, "state": result.to_state().to_json()}
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(state, indent=1), encoding="utf-8")
    temporary.replace(path)  # a crash never leaves half a state file


def report_waiting(result: RunResult, tools: ScopeTools) -> None:
    for item in result.interruptions:
        call_id = tools.call_id(item)
        print(f"waiting for approval: {item.tool_name} {item.arguments}")
        print(f"  call id: {call_id}")
        print(f'  approve: scope-tool answer {call_id} \'{{"decision": "approve"}}\'')
        print(f'  deny:    scope-tool answer {call_id} \'{{"decision": "deny", "reason": "..."}}\'')


async def run(args: argparse.Namespace, calls: ToolCalls) -> int:
    conversation_id = args.conversation or f"chat-{uuid.uuid4().hex[:12]}"
    agent, tools = build(calls, conversation_id, model_name=args.model)
    result = await Runner.run(agent, args.prompt)
    if result.interruptions:
        save(args.state, conversation_id=conversation_id, result=result)
        report_waiting(result, tools)
        print(
            f"saved the run to {args.state}; resume with: "
            f"python -m examples.agent_openai.agent resume --state {args.state}",
            flush=True,
        )
        if args.hold:
            print("holding (an agent server would keep running here)", flush=True)
            await asyncio.Event().wait()
        return 0
    print(result.final_output)
    return 0


async def resume(args: argparse.Namespace, calls: ToolCalls) -> int:
    if not args.state.is_file():
        print(f"error: no saved run at {args.state}", file=sys.stderr)
        return 2
    saved = json.loads(args.state.read_text(encoding="utf-8"))
    agent, tools = build(calls, saved["conversation_id"], model_name=args.model)
    state = await RunState.from_json(agent, saved["state"])
    if await tools.apply_answers(state, wait=args.wait):
        print("still waiting for a person; answer first, or resume with --wait", file=sys.stderr)
        return 3
    result = await Runner.run(agent, state)
    if result.interruptions:
        save(args.state, conversation_id=saved["conversation_id"], result=result)
        report_waiting(result, tools)
        return 0
    args.state.unlink()
    print(result.final_output)
    return 0


def parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--state", type=Path, default=Path(".scope-tool/openai-agent-run.json"))
    common.add_argument("--model", default=os.environ.get("SCOPE_TOOL_AGENT_MODEL", "scripted"))
    common.add_argument("--address", default=os.environ.get("SCOPE_TOOL_ADDRESS", "localhost:7233"))
    common.add_argument(
        "--task-queue", default=os.environ.get("SCOPE_TOOL_TASK_QUEUE", "scope-tools")
    )
    top = argparse.ArgumentParser(
        prog="python -m examples.agent_openai.agent",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = top.add_subparsers(dest="command", required=True)
    start = commands.add_parser("run", parents=[common], help="start a conversation")
    start.add_argument("prompt")
    start.add_argument("--conversation", help="conversation id (default: a new one)")
    start.add_argument("--hold", action="store_true", help="stay alive after the interruption")
    later = commands.add_parser("resume", parents=[common], help="continue a saved run")
    later.add_argument("--wait", action="store_true", help="wait for the person's answer")
    return top


async def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    set_tracing_disabled(True)  # nothing is exported anywhere
    if args.model != "scripted" and not os.environ.get("OPENAI_API_KEY"):
        print(f"error: model {args.model!r} needs OPENAI_API_KEY", file=sys.stderr)
        return 2
    try:
        calls = await ToolCalls.connect(args.address, task_queue=args.task_queue)
    except RuntimeError as error:
        print(f"error: cannot reach Temporal at {args.address} ({error});"
              " start one with: scope-tool dev --tools examples.agent.tools:registry",
              file=sys.stderr)  # fmt: skip
        return 2
    return await (run(args, calls) if args.command == "run" else resume(args, calls))


if __name__ == "__main__":
    code = asyncio.run(main())
    sys.stdout.flush()
    os._exit(code)  # temporalio clients can crash at interpreter exit (sdk-python issue 300)
