"""An agent whose file writes wait for a person, and which survives its own crash meanwhile.

Run from the repository root, with a server and a worker for ``examples.agent.tools``::

    scope-tool dev --tools examples.agent.tools:registry          # terminal 1
    python -m examples.agent.agent run "write hello to notes.txt"  # terminal 2
    scope-tool answer <call id> '{"decision": "approve"}'          # the person
    python -m examples.agent.agent resume                          # the agent, later

``run`` ends when the model's tool call waits for approval: it saves the conversation (message
history and the deferred calls) in ``--state`` and exits (``--hold`` keeps the process alive,
as a chat server would be, so it can be killed to prove nothing is lost). ``resume`` reads the
durable calls' results and continues the conversation from the saved state; with ``--wait`` it
waits for the answer first. ``--inline`` instead keeps one run going while the person answers.

The model is scripted by default (offline, no key): it understands "write TEXT to FILE".
``--model openai:gpt-4o-mini`` (or any Pydantic AI model name) uses a real provider when its
API key is set (e.g. ``OPENAI_API_KEY``; ``pip install 'pydantic-ai-slim[openai]'``).
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

from pydantic import TypeAdapter

try:
    from pydantic_ai import Agent
    from pydantic_ai.exceptions import UserError
    from pydantic_ai.messages import (
        ModelMessage,
        ModelMessagesTypeAdapter,
        ModelRequest,
        ModelResponse,
        RetryPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
    )
    from pydantic_ai.models import Model
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.tools import DeferredToolRequests
except ImportError as missing:
    raise SystemExit(
        f"this example needs Pydantic AI ({missing}): run `make setup`,"
        " or pip install 'scope-tool[pydantic-ai]'"
    ) from None

from examples.agent.tools import registry
from scope_tool.agents.pydantic_ai import ScopeToolset, deferred_results
from scope_tool.client import CallStatus, ToolCalls

_REQUESTS = TypeAdapter(DeferredToolRequests)
_WRITE = re.compile(r"write (?P<content>.+?) (?:to|into) (?P<path>\S+)\s*$", re.IGNORECASE)
INSTRUCTIONS = "You manage files with the tools you have. Never overwrite; say what you did."


def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """A stand-in model: "write TEXT to FILE" becomes one write_file call, then a summary."""
    last = messages[-1]
    if isinstance(last, ModelRequest):
        for part in last.parts:
            if isinstance(part, ToolReturnPart):
                said = part.model_response_str()
            elif isinstance(part, RetryPromptPart):
                said = part.model_response()
            else:
                continue
            return ModelResponse(parts=[TextPart(f"Done. The tool said: {said}")])
        prompt = " ".join(str(p.content) for p in last.parts if p.part_kind == "user-prompt")
        asked = _WRITE.search(prompt)
        if asked:
            arguments = {"path": asked["path"], "content": asked["content"].strip("\"'")}
            return ModelResponse(parts=[ToolCallPart("write_file", arguments)])
    return ModelResponse(parts=[TextPart('I only understand "write TEXT to FILE".')])


def model(name: str) -> Model | str:
    if name == "scripted":
        return FunctionModel(scripted)
    return name  # Pydantic AI resolves "provider:model" and reads the provider's API key


def build_agent(calls: ToolCalls, conversation_id: str, *, model_name: str, inline: bool) -> Agent:
    toolset = ScopeToolset(
        calls,
        registry,
        conversation_id=conversation_id,
        on_wait="inline" if inline else "defer",
        on_waiting=report_waiting_inline,  # --inline: say what the run waits for, and how to answer
    )
    output: Any = [str, DeferredToolRequests]
    return Agent(
        model(model_name), toolsets=[toolset], output_type=output, instructions=INSTRUCTIONS
    )


def save(
    path: Path, *, conversation_id: str, messages: bytes, requests: DeferredToolRequests
) -> None:
    state = {
        "conversation_id": conversation_id,
        "messages": json.loads(messages),
        "requests": json.loads(_REQUESTS.dump_json(requests)),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(state, indent=1), encoding="utf-8")
    temporary.replace(path)  # a crash never leaves half a state file


def report_waiting_inline(status: CallStatus) -> None:
    """``--inline``: the run waits in this process; say for what, and how to answer it."""
    print(f"waiting for approval: {status.tool} (call id: {status.call_id})", flush=True)
    print(
        f'  approve: scope-tool answer {status.call_id} \'{{"decision": "approve"}}\'', flush=True
    )
    print("  (or answer it in the inbox); this run goes on once it is answered", flush=True)


def report_waiting(requests: DeferredToolRequests) -> None:
    for part in requests.calls:
        metadata = requests.metadata[part.tool_call_id]
        print(f"waiting for approval: {metadata['tool']} {json.dumps(part.args_as_dict())}")
        print(f"  call id: {metadata['call_id']}")
        print(f'  approve: scope-tool answer {metadata["call_id"]} \'{{"decision": "approve"}}\'')
        print(
            f"  deny:    scope-tool answer {metadata['call_id']} "
            '\'{"decision": "deny", "reason": "..."}\''
        )


async def run(args: argparse.Namespace, calls: ToolCalls) -> int:
    conversation_id = args.conversation or f"chat-{uuid.uuid4().hex[:12]}"
    agent = build_agent(calls, conversation_id, model_name=args.model, inline=args.inline)
    result = await agent.run(args.prompt)
    if isinstance(result.output, DeferredToolRequests):
        save(
            args.state,
            conversation_id=conversation_id,
            messages=result.all_messages_json(),
            requests=result.output,
        )
        report_waiting(result.output)
        print(
            f"saved the conversation to {args.state}; resume with: "
            f"python -m examples.agent.agent resume --state {args.state}",
            flush=True,
        )
        if args.hold:
            print("holding (an agent server would keep running here)", flush=True)
            await asyncio.Event().wait()
        return 0
    print(result.output)
    return 0


async def resume(args: argparse.Namespace, calls: ToolCalls) -> int:
    if not args.state.is_file():
        print(f"error: no saved conversation at {args.state}", file=sys.stderr)
        return 2
    state = json.loads(args.state.read_text(encoding="utf-8"))
    messages = ModelMessagesTypeAdapter.validate_python(state["messages"])
    requests = _REQUESTS.validate_python(state["requests"])
    results = await deferred_results(calls, requests, wait=args.wait)
    if requests.remaining(results) is not None:
        print("still waiting for a person; answer first, or resume with --wait", file=sys.stderr)
        return 3
    agent = build_agent(calls, state["conversation_id"], model_name=args.model, inline=False)
    result = await agent.run(message_history=messages, deferred_tool_results=results)
    if isinstance(result.output, DeferredToolRequests):
        save(
            args.state,
            conversation_id=state["conversation_id"],
            messages=result.all_messages_json(),
            requests=result.output,
        )
        report_waiting(result.output)
        return 0
    args.state.unlink()
    print(result.output)
    return 0


def parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--state", type=Path, default=Path(".scope-tool/agent-conversation.json"))
    common.add_argument("--model", default=os.environ.get("SCOPE_TOOL_AGENT_MODEL", "scripted"))
    common.add_argument("--address", default=os.environ.get("SCOPE_TOOL_ADDRESS", "localhost:7233"))
    common.add_argument(
        "--task-queue", default=os.environ.get("SCOPE_TOOL_TASK_QUEUE", "scope-tools")
    )
    top = argparse.ArgumentParser(
        prog="python -m examples.agent.agent",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = top.add_subparsers(dest="command", required=True)
    start = commands.add_parser("run", parents=[common], help="start a conversation")
    start.add_argument("prompt")
    start.add_argument("--conversation", help="conversation id (default: a new one)")
    start.add_argument("--inline", action="store_true", help="wait for approvals in this run")
    start.add_argument("--hold", action="store_true", help="stay alive after deferring")
    later = commands.add_parser("resume", parents=[common], help="continue a saved conversation")
    later.add_argument("--wait", action="store_true", help="wait for the person's answer")
    return top


async def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        Agent(model(args.model))  # a missing provider package or API key shows up now
    except (ImportError, UserError) as error:
        print(f"error: model {args.model!r}: {error}", file=sys.stderr)
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
