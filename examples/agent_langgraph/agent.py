"""A LangChain agent (``create_agent``, a LangGraph graph) whose file writes wait for a person,
and which survives its own crash meanwhile.

Run from the repository root, with a server and a worker for ``examples.agent.tools``::

    scope-tool dev --tools examples.agent.tools:registry                     # terminal 1
    python -m examples.agent_langgraph.agent run "write hello to notes.txt"   # terminal 2
    scope-tool answer <call id> '{"decision": "approve"}'                     # the person
    python -m examples.agent_langgraph.agent resume                           # the agent, later

``run`` ends when the model's tool call waits for approval: the graph is interrupted (LangGraph's
``interrupt()``), its step saved by the SQLite checkpointer (``--db``), the question held by the
durable call; the process exits (``--hold`` keeps it alive, as a chat server would be, so it can
be killed to prove nothing is lost). ``resume`` continues the thread with LangGraph's
``Command(resume=...)``: by default ``{"type": "wait"}`` (the answer comes from the inbox or
``scope-tool answer``; an answered call returns at once), or a decision of LangChain's
human-in-the-loop middleware given here: ``--decision '{"type": "approve"}'``,
``'{"type": "reject", "message": "..."}'``, ``'{"type": "edit", "edited_action": {"name":
"write_file", "args": {...}}}'``.

The model is scripted by default (offline, no key): it understands "write TEXT to FILE".
``--model openai:gpt-4o-mini`` (or any ``init_chat_model`` name) uses a real provider when its
package and API key are there (``pip install langchain-openai``, ``OPENAI_API_KEY``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

try:
    from langchain.agents import create_agent
    from langchain.chat_models import init_chat_model
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
    from langgraph.types import Command
except ImportError as missing:
    raise SystemExit(
        f"this example needs LangChain and LangGraph ({missing}): run `make setup`,"
        " or pip install 'scope-tool[langchain]'"
    ) from None

from examples.agent.tools import registry
from scope_tool.agents.langchain import scope_tools
from scope_tool.client import ToolCalls

_WRITE = re.compile(r"write (?P<content>.+?) (?:to|into) (?P<path>\S+)\s*$", re.IGNORECASE)
INSTRUCTIONS = "You manage files with the tools you have. Never overwrite; say what you did."


class ScriptedChatModel(BaseChatModel):
    """A stand-in model: "write TEXT to FILE" becomes one write_file call, then a summary.

    It answers from the messages alone (like langchain-core's fake chat models, but with no
    position to lose), so a new process resuming the thread gets the same answers.
    """

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:  # type: ignore[override]
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=respond(messages))])


def respond(messages: list[BaseMessage]) -> AIMessage:
    last = messages[-1]
    if isinstance(last, ToolMessage):
        return AIMessage(f"Done. The tool said: {last.text}")
    if isinstance(last, HumanMessage):
        asked = _WRITE.search(last.text)
        if asked:
            arguments = {"path": asked["path"], "content": asked["content"].strip("\"'")}
            call = {"name": "write_file", "args": arguments, "id": f"call_{uuid.uuid4().hex[:12]}"}
            return AIMessage("", tool_calls=[call])
    return AIMessage('I only understand "write TEXT to FILE".')


def model(name: str) -> BaseChatModel:
    if name == "scripted":
        return ScriptedChatModel()
    return init_chat_model(name)  # "provider:model"; reads the provider's API key


def build_agent(calls: ToolCalls, saver: AsyncSqliteSaver, model_name: str) -> Any:
    tools = scope_tools(calls, registry)  # the durable calls are named by the thread id
    return create_agent(model(model_name), tools, system_prompt=INSTRUCTIONS, checkpointer=saver)


async def report(agent: Any, config: Any) -> int:
    """Print where the thread stands: the questions it waits on, or the model's last word."""
    state = await agent.aget_state(config)
    if state.interrupts:
        for waiting in state.interrupts:
            value = waiting.value
            if "refused" in value:
                print(f"refused: {value['refused']['message']}")
            print(f"waiting for approval: {value['name']} {json.dumps(value['args'])}")
            print(f"  call id: {value['call_id']}")
            print(f'  approve: scope-tool answer {value["call_id"]} \'{{"decision": "approve"}}\'')
        thread = config["configurable"]["thread_id"]
        print(
            f"saved thread {thread}; resume with: python -m examples.agent_langgraph.agent"
            f" resume --thread {thread}",
            flush=True,
        )
        return 0
    messages = state.values.get("messages", [])
    print(messages[-1].text if messages else "(nothing said)", flush=True)
    return 0


async def run(args: argparse.Namespace, calls: ToolCalls, saver: AsyncSqliteSaver) -> int:
    thread = args.thread or f"chat-{uuid.uuid4().hex[:12]}"
    args.db.with_suffix(".thread").write_text(thread, encoding="utf-8")
    config = {"configurable": {"thread_id": thread}}
    agent = build_agent(calls, saver, args.model)
    await agent.ainvoke({"messages": [HumanMessage(args.prompt)]}, config)
    code = await report(agent, config)
    if args.hold and (await agent.aget_state(config)).interrupts:
        print("holding (an agent server would keep running here)", flush=True)
        await asyncio.Event().wait()
    return code


async def resume(args: argparse.Namespace, calls: ToolCalls, saver: AsyncSqliteSaver) -> int:
    saved = args.db.with_suffix(".thread")
    thread = args.thread or (saved.read_text(encoding="utf-8") if saved.is_file() else None)
    if not thread:
        print("error: no thread to resume; pass --thread", file=sys.stderr)
        return 2
    decision = json.loads(args.decision)  # checked in main
    config = {"configurable": {"thread_id": thread}}
    agent = build_agent(calls, saver, args.model)
    state = await agent.aget_state(config)
    if not state.interrupts:
        print(f"error: thread {thread} waits for nothing", file=sys.stderr)
        return 2
    # Each decision names its call, so it can only ever answer that one.
    resume_with = {
        waiting.id: {**decision, "call_id": waiting.value["call_id"]}
        for waiting in state.interrupts
    }
    await agent.ainvoke(Command(resume=resume_with), config)
    return await report(agent, config)


def parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", type=Path, default=Path(".scope-tool/langgraph.sqlite"))
    common.add_argument("--thread", help="the LangGraph thread id (default: a new one / the last)")
    common.add_argument("--model", default=os.environ.get("SCOPE_TOOL_AGENT_MODEL", "scripted"))
    common.add_argument("--address", default=os.environ.get("SCOPE_TOOL_ADDRESS", "localhost:7233"))
    common.add_argument(
        "--task-queue", default=os.environ.get("SCOPE_TOOL_TASK_QUEUE", "scope-tools")
    )
    top = argparse.ArgumentParser(
        prog="python -m examples.agent_langgraph.agent",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = top.add_subparsers(dest="command", required=True)
    start = commands.add_parser("run", parents=[common], help="start a conversation")
    start.add_argument("prompt")
    start.add_argument("--hold", action="store_true", help="stay alive while a call waits")
    later = commands.add_parser("resume", parents=[common], help="continue a paused thread")
    later.add_argument(
        "--decision",
        default='{"type": "wait"}',
        help='the resume value (default {"type": "wait"}: the answer comes from elsewhere)',
    )
    return top


async def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command == "resume":
        try:
            decision = json.loads(args.decision)
        except ValueError as error:
            print(f"error: --decision is not JSON: {error}", file=sys.stderr)
            return 2
        if not isinstance(decision, dict):
            print(f"error: --decision must be a JSON object, got {args.decision}", file=sys.stderr)
            return 2
    try:
        model(args.model)  # a missing provider package or API key shows up now
    except (ImportError, ValueError) as error:
        print(f"error: model {args.model!r}: {error}", file=sys.stderr)
        return 2
    try:
        calls = await ToolCalls.connect(args.address, task_queue=args.task_queue)
    except RuntimeError as error:
        print(f"error: cannot reach Temporal at {args.address} ({error});"
              " start one with: scope-tool dev --tools examples.agent.tools:registry",
              file=sys.stderr)  # fmt: skip
        return 2
    args.db.parent.mkdir(parents=True, exist_ok=True)
    async with AsyncSqliteSaver.from_conn_string(str(args.db)) as saver:
        command = run if args.command == "run" else resume
        return await command(args, calls, saver)


if __name__ == "__main__":
    code = asyncio.run(main())
    sys.stdout.flush()
    os._exit(code)  # temporalio clients can crash at interpreter exit (sdk-python issue 300)
